"""The pytest front end: everything that knows pytest. The entry point (`hooks`, the `pytest11` module) declares
the options and decides whether the plugin is on, importing nothing else; turned on, it registers the two plugin
objects that `session` builds for this process, each holding only the hooks its part needs (as pytest-xdist
registers its DSession on the controller and a WorkerInteractor on each worker):

- the process's role: the controller, the process that planned the run (`controller`: the record store, each
  case's record taken from its report, the reports, the gates and the exit status), or an xdist worker
  (`worker`: its pid left for the controller, its isolation layers sent back);
- beside it, how the process's cases run: collected and run here (`cases`: this machine's candidate files as
  items, or on a worker on another machine the plan's, `RemoteCasePlugin`), or handed to xdist's workers
  (`distribution`: the scheduler, each worker's workerinput, lost workers).

So a run without xdist, the controller that also runs cases, registers the controller's plugin and the
case-running one; an xdist controller, the controller's and xdist's wiring; a worker, the worker's and the
case-running one. The controller's and a worker's plugin share a small base class (`base`: signals, report
transport, header lines, what a process closes at the end); no hook asks which role it plays.

The hooks stay thin and hand plain data to plain functions: option declarations (`options`), what pytest decides
before it knows them, put right (`early`: rootdir and ini file), the run plan (`plan`), each role's run state
(`roles`, held in `state`), collection and items (`collect`), xdist scheduling and transport (`scheduling`,
`transport`), workers on other machines (`remote`, their node ids `nodeids`, xdist's gateways `gateways`), CPU
pinning (`cpus`), the controller's side of the record store (`ledger`), how the run ended, its run section and
exit status (`runend`), the `--apps-baseline` file read before the run (`baseline_file`), the hooks this plugin
offers other plugins (`hookspecs`; the table entries they add, with the plugin's own implementation of the
report-writing hook, `extending`; the table of report formats, `formats`), terminal statistics (`termstats`), the agent's progress line (`progress`),
every path a run writes checked before its first case (`outputs`), the case a lost xdist worker was running
(`crashes`), SIGINT and SIGTERM on a run (`interrupts`) and the report writers' glue (`writers`).

May import every lower layer; nothing outside this package imports pytest.
"""
