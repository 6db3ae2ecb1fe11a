"""The pytest front end: everything that knows pytest. The entry point (`hooks`, the `pytest11` module) declares
the options and decides whether the plugin is on, importing nothing else; turned on, it registers the one object
that `roles` builds for this process, of its role's class, holding that role's state and every hook it needs (as
pytest-xdist registers its DSession on the controller and a WorkerInteractor on each worker):

- the controller (`controller`): `LoneController`, the only process of a run without xdist, which plans the run,
  collects and runs its cases (`cases`), and owns the record store, the reports, the gates and the exit status;
  `XdistController` (`distribution`), xdist's controller, the same with xdist's hooks: the scheduler, each
  worker's workerinput, lost workers; it runs no case;
- an xdist worker (`worker`): `LocalWorker`, on the controller's machine (it reads the plan folder, leaves its pid
  there), or `RemoteWorker`, on another (it collects from the plan it received, `remote`), each sending its
  isolation layers back.

Each class builds its own state (`state`) in its `start`; what they share is a small base class (`base`:
signals, report transport, header lines, what a process closes at the end). No hook asks which role it plays.

The hooks stay thin and hand plain data to plain functions: option declarations (`options`), what pytest decides
before it knows them, put right (`early`: rootdir and ini file), the run plan (`plan`), what a role reads from
the config as it starts (`session`), collection and items (`collect`), xdist scheduling and transport
(`scheduling`, `transport`), workers on other machines (`remote`, their node ids `nodeids`, xdist's gateways `gateways`), CPU
pinning (`cpus`), the controller's side of the record store (`ledger`), how the run ended, its run section and
exit status (`runend`), the `--apps-baseline` file read before the run (`baseline_file`), the hooks this plugin
offers other plugins (`hookspecs`; the table entries they add, with the plugin's own implementation of the
report-writing hook, `extending`; the table of report formats, `formats`), terminal statistics (`termstats`), the agent's progress line (`progress`),
every path a run writes checked before its first case (`outputs`), the case a lost xdist worker was running
(`crashes`), SIGINT and SIGTERM on a run (`interrupts`) and the report writers' glue (`writers`).

May import every lower layer; nothing outside this package imports pytest.
"""
