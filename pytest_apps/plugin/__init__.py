"""The pytest front end: everything that knows pytest. The entry point (`hooks`, the `pytest11` module) declares
the options and decides whether the plugin is on, importing nothing else; the active run's hooks (`session`)
stay thin and hand plain data to plain functions: option declarations (`options`), what pytest decides before it
knows them, put right (`early`: rootdir and ini file), the run plan (`plan`), each role's run state (`roles`,
held in `state`), collection and items (`collect`), xdist scheduling and transport (`scheduling`, `transport`),
workers on other machines (`remote`, their node ids `nodeids`, xdist's gateways `gateways`), CPU pinning
(`cpus`), the controller's side of the record store (`ledger`), the `--apps-baseline` file read before the run
(`baseline_file`), the hooks this plugin offers other plugins (`hookspecs`), terminal statistics (`termstats`),
the agent's progress line (`progress`), every path a run writes checked before its first case (`outputs`),
the case a lost xdist worker was running (`crashes`), SIGINT and SIGTERM on a run (`interrupts`)
and the report writers' glue (`writers`).

May import every lower layer; nothing outside this package imports pytest.
"""
