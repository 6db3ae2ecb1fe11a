"""The active run: what the plugin does once it is turned on (`hooks.py`, the `pytest11` entry point, imports this
module only then, so that a pytest run that does not use the plugin pays for none of it). `activate` builds the
run's state for the role this process plays (the controller, a local or a remote xdist worker) and returns the
`AppsPlugin` that holds the run's hooks.

When active, the controller (or the only process) plans the run before any xdist worker starts; workers read
that plan (or, on other machines, receive it: remote.py), collect ids only, run cases, and send plain records
back; the controller rolls them up into the report.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from ..candidates.sources import CandidateError
from ..core.record import CaseRecord
from ..core.settings import OptionError, Settings, resolve
from ..dataset.rows import DatasetError
from ..executor.slots import remove_pool
from ..judge.special import SpecialJudgeError
from ..report.comparison_text import baseline_lines, newly_failing_lines
from ..report.gates import Gate, fail_under_verdict, passed, regression_verdict
from ..report.received import CaseRecords
from ..report.rollup import Summary
from . import gateways, nodeids, transport
from .baseline_file import BASELINE_KEY, check_baseline, read_baseline
from .collect import RECORD_KEY, CandidateDir, CandidateFile, PlanRoot, home_of, remote_selected
from .cpus import available_cpus, xdist_workers
from .crashes import forget_junit_case, settle_crash_report
from .crashes import teststatus as crash_teststatus
from .interrupts import Interrupts, interrupt_workers, note_worker, starting_workers, worker_pids
from .ledger import Ledger, report_recorded, report_skipped
from .options import REMOTE_KEY, ini_folder
from .outputs import ReportLock, check_outputs
from .plan import PLAN_FILE, HookError, Plan, build_plan, collection_roots, load_plan, remove_plan
from .progress import progress_printer
from .remote import RemoteWorkers, worker_setup
from .roles import PLACE_KEY, PLAN_KEY, SLOTS_KEY, controller_state, remote_worker_state, worker_state
from .state import STATE_KEY, ControllerState, RemoteWorkerState, RunState, WorkerState
from .termstats import forget_on_worker, forget_quiet_phase
from .writers import (
    REPORT_NOT_WRITTEN,
    added_header_lines,
    build_summary,
    is_complete_report,
    junit_properties,
    lacking_verdicts,
    run_properties,
    run_section,
    suite_properties,
    terminal_lines,
    write_reports,
)

ISOLATION_KEY = "apps_isolation"  # workeroutput: the isolation layers of a worker that ran cases


def activate(config: pytest.Config, worker: dict[str, Any]) -> AppsPlugin:
    """Turn the plugin on in this process: its run state for its role, and the plugin object with the run's hooks
    (for the caller to register)."""
    started = time.time()
    # APPS data holds integers longer than the default int/str conversion limit allows.
    sys.set_int_max_str_digits(0)
    config.stash[BASELINE_KEY] = None  # (the controller's, when it has one)
    if REMOTE_KEY in worker:
        state: RunState = configure_remote_worker(config, worker)
    elif worker:
        state = configure_worker(config, worker)
    else:
        state = configure_controller(config)
    config.stash[STATE_KEY] = state
    if not config.option.collectonly and (worker or not config.pluginmanager.has_plugin("dsession")):
        # The server's start and the zygote's preload overlap this process's collection (and, on a worker,
        # the controller's scheduling) rather than following them: the first item would wait for all of it.
        # (An xdist controller runs no case: its executor starts only if the report asks it for something.)
        state.executor.start()
    if getattr(config.option, "dist", "no") not in ("no", "loadscope"):
        # All cases of a candidate stay on one worker (loadscope groups by the node id's parent).
        config.option.dist = "loadscope"
    return AppsPlugin(config, started)


def configure_controller(config: pytest.Config) -> ControllerState:
    """The controller (or the only process): the settings from its command line, the baseline read before the
    plan is built (a missing file costs no benchmark time) and checked against it."""
    settings = settings_of(config)
    unwritable = check_outputs(settings, getattr(config.option, "xmlpath", None))
    if unwritable:  # before any work: not a traceback after every case has run
        raise pytest.UsageError(unwritable)
    baseline = read_baseline(settings)
    plan = controller_plan(config, settings)
    check_baseline(baseline, settings, plan)
    config.stash[BASELINE_KEY] = baseline
    explicit, narrow = collected_arguments(config, settings, plan)
    workers = xdist_workers(getattr(config.option, "dist", None), getattr(config.option, "tx", None))
    return controller_state(settings, plan, cpus=available_cpus(), workers=workers, explicit=explicit, narrow=narrow)


def configure_worker(config: pytest.Config, workerinput: dict[str, Any]) -> WorkerState:
    """A local xdist worker: the settings from the command line xdist gave it, the plan the controller wrote.
    (Given none, by a controller where the plugin is dormant, it plans for itself and removes that plan.)"""
    settings = settings_of(config)
    given = PLAN_KEY in workerinput
    plan = worker_plan(workerinput) if given else controller_plan(config, settings)
    explicit, narrow = collected_arguments(config, settings, plan)
    return worker_state(settings, plan, workerinput, cpus=available_cpus(), explicit=explicit, narrow=narrow,
                        owns_plan=not given)


def settings_of(config: pytest.Config) -> Settings:
    try:
        # Relative paths are taken from where pytest was started (as --junitxml does), not the rootdir,
        # which pytest may place elsewhere (e.g. above a dataset path given as an option); the ini file's
        # from its folder, as pytest's own path settings.
        return resolve(config.getoption, config.getini, str(config.invocation_params.dir), ini_folder(config))
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None


def collected_arguments(config: pytest.Config, settings: Settings, plan: Plan) -> tuple[set[str], list[Any]]:
    """On a process that collects from this machine's files: the node ids the command line names, and the
    command line as given when names below the candidates' folder were taken off it (`narrow`). Sets the
    arguments pytest collects from."""
    explicit = explicit_nodeids(config.args, config.rootpath)
    narrow: list[Any] = []
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        # Active with no paths given: collect the APPS items only, not the project's own tests.
        config.args = collection_roots(settings, plan)
    elif not config.pluginmanager.has_plugin("dsession"):  # this process collects (no xdist controller)
        # a no-code item's node id pasted (`solutions::7::no_code`): pytest takes no names after a folder
        config.args, narrow = nodeids.folder_arguments(config.args, plan.home, config.invocation_params.dir)
    return explicit, narrow


def worker_plan(workerinput: dict[str, Any]) -> Plan:
    """A local xdist worker reads the plan the controller wrote."""
    folder = Path(workerinput[PLAN_KEY])
    if not (folder / PLAN_FILE).is_file():
        raise pytest.UsageError(
            f"apps: this worker cannot read the run plan at {folder}, which a popen gateway without a "
            "chdir reads from the controller's machine; give gateways on other machines as ssh (see "
            "docs/remote.md, 'Beyond one machine')"
        )
    return load_plan(folder)


def controller_plan(config: pytest.Config, settings: Settings) -> Plan:
    """The controller (or the only process) builds the plan, and owns it."""
    try:
        return build_plan(settings, progress=progress_printer(config), provide=implemented(config, "candidates"),
                          checker=implemented(config, "checker"))
    except (DatasetError, CandidateError, HookError, SpecialJudgeError) as exc:
        raise pytest.UsageError(str(exc)) from None


def implemented(config: pytest.Config, name: str) -> Any:
    """`pytest_apps_<name>` as a function of a problem, or None when no conftest or plugin implements it."""
    hook = getattr(config.hook, f"pytest_apps_{name}")
    if not hook.get_hookimpls():
        return None
    return lambda problem: hook(problem=problem)


def configure_remote_worker(config: pytest.Config, workerinput: dict[str, Any]) -> RemoteWorkerState:
    """A worker that cannot see the controller's files: the plan, the settings it was made with (not this
    machine's command line, ini file or environment), and the controller as the source of the test data."""
    plan, settings, files, test_data = worker_setup(config, workerinput)
    # Collected from the plan (collect.PlanRoot at the rootdir), never from this machine's files; the
    # command line's paths are the controller's and were matched against the plan there.
    config.args = [str(config.rootpath)]
    return remote_worker_state(settings, plan, files, test_data, workerinput, cpus=available_cpus())


def explicit_nodeids(args: list[str], rootdir: Path) -> set[str]:
    """Node ids named on the command line (`path::name...`), as pytest spells them (relative to rootdir)."""
    out = set()
    for arg in args:
        if "::" not in arg:
            continue
        path, rest = arg.split("::", 1)
        try:
            rel = Path(path).resolve().relative_to(rootdir.resolve()).as_posix()
        except ValueError:
            rel = path
        out.add(f"{rel}::{rest}")
    return out


def narrowed(item: pytest.Item, args: list[nodeids.Argument]) -> bool:
    """Whether the command line as given asks for `item` (see nodeids.folder_arguments)."""
    node, names = home_of(item)
    if node is None:
        return nodeids.reaches(args, item.path, item.nodeid.split("::")[1:])
    return nodeids.reaches(args, node.path, names)


class AppsPlugin:
    """The active run's hooks; registered only when the plugin is active."""

    def __init__(self, config: pytest.Config, started: float) -> None:
        self.config = config
        self.state = RunState.of(config)
        # the controller's own state (None on a worker): its record store, workers lost, other machines' fences
        self.controller = self.state if isinstance(self.state, ControllerState) else None
        self.started = started
        self.is_worker = self.controller is None
        self.records = CaseRecords()
        self.summary: Summary | None = None
        self.gate: Gate | None = None
        self.regression: Gate | None = None
        self.comparison: dict[str, Any] | None = None
        self.files = {str(Path(f).resolve()): entries for f, entries in self.state.plan.by_file().items()}
        # names this run's pools of execution slots (one per machine its workers run on)
        self.run_name = getattr(config, "workerinput", {}).get(SLOTS_KEY) or uuid.uuid4().hex[:16]
        self.scheduler: Any = None  # the xdist scheduler, on the controller
        self.finished = 0  # tests whose last report reached the controller
        self.specs: list[Any] = []  # the controller's xdist gateway specs
        self._remote: RemoteWorkers | None = None
        # the record store (the controller's alone), and how this run went, for the reports
        self.ledger: Ledger | None = None
        if self.controller is not None:
            params = config.invocation_params
            self.ledger = Ledger(self.controller, config.rootpath, params.dir, [str(a) for a in config.args])
        # a second run writing the same report at once is said (at the start and at the end)
        self.lock = ReportLock(self.state.settings.report_path) if self.controller is not None else None
        self.sharing = self.lock.acquire() if self.lock is not None else ""
        self.selected: int | None = None  # the cases the command line selects (known once collected)
        self.selected_ids: set[str] | None = None  # their node ids (without xdist; the scheduler has them with it)
        self.held: list[pytest.Item] = []  # without xdist: the ledger's held items, reported without running
        self.signal: str | None = None  # the signal that interrupted the run
        self.finishing = False  # the session is ending: a signal now no longer interrupts it (interrupts.py)
        self.run: dict[str, Any] | None = None
        self.unwritten: list[str] = []  # a line for each report that could not be written
        self._handlers: dict[int, Any] = {}
        hurry = None if self.is_worker else self._stop_workers
        self.interrupts = Interrupts(on_first=hurry, on_later=hurry)
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._handlers[sig] = signal.signal(sig, self._interrupted)
        workerinput = getattr(config, "workerinput", {})
        if self.is_worker and PLAN_KEY in workerinput and REMOTE_KEY not in workerinput:
            # (once its handlers are in place: from then on, the controller's SIGINT stops it as Ctrl-C does)
            note_worker(Path(workerinput[PLAN_KEY]), str(workerinput.get("workerid")))

    def _stop_workers(self) -> None:
        """At a signal on the controller: interrupt its local workers now (see interrupts.py)."""
        folder = self.state.plan.folder
        interrupt_workers(worker_pids(folder))
        nodemanager = getattr(self.config.pluginmanager.getplugin("dsession"), "nodemanager", None)
        interrupt_workers(starting_workers(getattr(nodemanager, "group", None) or (), folder), signal.SIGTERM)

    def _interrupted(self, signum: int, frame: Any) -> None:
        """SIGINT or SIGTERM: the first stops the run as Ctrl-C does (the reports are written, and say so; the
        controller interrupts its local workers at once); a later one never breaks the shutdown it began."""
        if self.interrupts.receive(signum) and not self.finishing:
            self.signal = self.interrupts.first
            raise KeyboardInterrupt(self.signal)

    @pytest.hookimpl(wrapper=True)
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> Any:
        collected = yield
        entries = self.files.get(str(file_path.resolve()))
        if entries is None:
            return collected
        # Only our collector may take a candidate file: pytest's python plugin would import a
        # candidate `.py` named on the command line, running candidate code inside pytest.
        return [CandidateFile.from_parent(parent, path=file_path, entries=entries)]

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> Any:
        if not isinstance(self.state, RemoteWorkerState):
            entries = self.files.get(str(path.resolve()))  # the candidates' folder: its problems without code
            return None if entries is None else CandidateDir.from_parent(parent, path=path, entries=entries)
        if path != self.config.rootpath:
            return None
        return PlanRoot.from_parent(parent, path=path, files=self.state.remote_files)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """On a remote worker, what the controller's command line named (`file::names`), as pytest's own
        collection narrows it where the files are (silently: those items were never collected there)."""
        if isinstance(self.state, RemoteWorkerState):
            items[:] = [item for item in items if remote_selected(item)]
        elif self.state.narrow:  # what the arguments asked for below the candidates' folder (folder_arguments)
            items[:] = [item for item in items if narrowed(item, self.state.narrow)]

    @pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
    def pytest_collection_modifyitems_reused(self, items: list[pytest.Item]) -> None:
        """Without xdist: after every selection (-k, -m, --lf, --deselect), the reused items leave the run;
        they are reported from their records when the run starts."""
        if self.ledger is None:
            return
        self.selected = len(items)
        self.selected_ids = {item.nodeid for item in items}
        held = self.ledger.held()
        if held:
            self.held = [item for item in items if item.nodeid in held]
            if self.held:
                items[:] = [item for item in items if item.nodeid not in held]

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        try:
            if self.held and not session.config.option.collectonly:
                session.testscollected += len(self.held)
                before = session.testsfailed
                self.report_held([item.nodeid for item in self.held])
                # pytest's loop reads failures counted before it as collection errors: a held failure counts once
                # the loop has begun (for the exit status; with -x it has already set shouldfail)
                held_failed, session.testsfailed = session.testsfailed - before, before
                try:
                    return (yield)
                finally:
                    session.testsfailed += held_failed
            return (yield)
        except KeyboardInterrupt:
            if self.signal is None or session.config.option.fulltrace:
                raise
            # our signal: pytest's terminal renders an interrupt's traceback with every frame's arguments, seconds
            # of a deep xdist loop on a busy machine, to print its last line; this one starts here
            raise KeyboardInterrupt(self.signal) from None

    def report_held(self, nodeids: list[str]) -> None:
        """Report these selected cases from their records, or as skipped after a reused failure (the scheduler
        calls this under xdist)."""
        assert self.ledger is not None
        if self.selected is None:
            self.selected = len(self.scheduler.collection) if self.scheduler is not None else len(nodeids)
        for nodeid in nodeids:
            if nodeid in self.ledger.reused:
                report_recorded(self.config, self.ledger.cases[nodeid], self.ledger.reused[nodeid], RECORD_KEY)
            else:
                report_skipped(self.config, self.ledger.cases[nodeid], self.ledger.stopped[nodeid])

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") != "loadscope":
            return None
        from .scheduling import ProblemScheduling

        settings = self.state.settings
        self.scheduler = ProblemScheduling(config, log, stealing=settings.work_stealing == "on",
                                           fail_fast=settings.fail_fast,
                                           held=self.ledger.held() if self.ledger is not None else (),
                                           report_held=self.report_held,
                                           has_verdict=lambda nodeid: nodeid in self.records)
        return self.scheduler

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_to_serializable(self, report: Any) -> dict[str, Any] | None:
        return transport.pack(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_from_serializable(self, data: dict[str, Any]) -> Any:
        return transport.unpack(data)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Any) -> None:
        self.specs = list(specs)
        if any(gateways.is_remote(spec) for spec in self.specs):
            gateways.pass_command_line(config, [str(a) for a in config.invocation_params.args])

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[PLAN_KEY] = str(self.state.plan.folder)
        node.workerinput[SLOTS_KEY] = self.run_name
        node.workerinput[PLACE_KEY] = gateways.machine_place(node.gateway.spec, self.specs)
        if gateways.is_remote(node.gateway.spec):
            # the plan in workerinput, the test data over a channel of its own (see remote.py)
            if self._remote is None:
                state = self.state
                self._remote = RemoteWorkers(self.config, state.plan, state.cases_folder, state.settings)
            node.workerinput.update(self._remote.inputs(node.gateway))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        assert self.controller is not None
        layers = (getattr(node, "workeroutput", None) or {}).get(ISOLATION_KEY)
        if layers is not None and gateways.is_remote(node.gateway.spec):
            self.controller.machine_isolation(gateways.machine_of(node.gateway.spec), layers)
        if error is None:
            return
        # before xdist takes the node's work back: what it had been given and not finished
        sched = getattr(self.config.pluginmanager.getplugin("dsession"), "sched", None)
        self.controller.worker_lost(gateways.down_record(node, error, gateways.unfinished(sched, node)))

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        assert self.controller is not None
        worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", None)
        run_again = crashitem in getattr(sched, "run_again", ())
        self.controller.worker_crashed(worker, crashitem, run_again)
        if settle_crash_report(report, run_again, crashitem in self.records):
            report.apps_run_again = run_again  # (for the hooks below: how the terminal and JUnit take it)

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: Any) -> tuple[str, str, str] | None:
        if hasattr(report, "apps_run_again"):
            return crash_teststatus(report, report.apps_run_again)
        return None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.is_worker:
            return
        # --junitxml's testsuite properties, as the record_testsuite_property fixture adds them
        for plugin in self.config.pluginmanager.get_plugins():
            if type(plugin).__name__ == "LogXML" and hasattr(plugin, "add_global_property"):
                for name, value in suite_properties(self.state):
                    plugin.add_global_property(name, value)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        from .writers import header_lines

        lines = header_lines(self.state) + ([self.sharing] if self.sharing else [])
        if not self.is_worker:
            lines += added_header_lines(config.hook.pytest_apps_report_header(settings=self.state.settings))
        return lines

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_worker:
            return
        if report.when == "teardown" or (report.when == "???" and not getattr(report, "apps_run_again", False)):
            self.finished += 1  # a test's last report; "???": a worker crashed running it (and it runs no more)
        if report.failed and self.scheduler is not None:
            self.scheduler.note_failure(report.nodeid)
        # Take our record out before --junitxml sees it: a dict property is noise there.
        mine = [value for key, value in report.user_properties if key == RECORD_KEY]
        if mine:
            report.user_properties = [(k, v) for k, v in report.user_properties if k != RECORD_KEY]
            record = CaseRecord.from_json(mine[-1])
            self.records.add(record)
            if self.ledger is not None:
                self.ledger.note(record)
        # --junitxml writes the properties of the teardown report (which no longer carries the record)
        record = self.records.get(report.nodeid) if report.when == "teardown" else None
        if record is not None and self.state.settings.junit_properties:
            report.user_properties.extend(junit_properties(record))

    @pytest.hookimpl(trylast=True, specname="pytest_runtest_logreport")
    def pytest_runtest_logreport_quiet(self, report: pytest.TestReport) -> None:
        """After the terminal reporter has filed the report (see termstats). (pytest takes only hooks whose
        names begin with pytest_: `specname` names the one this is.)"""
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            (forget_on_worker if self.is_worker else forget_quiet_phase)(terminal.stats, report)
        if getattr(report, "apps_run_again", False):  # a lost worker's case that runs again: one JUnit case
            forget_junit_case(self.config.pluginmanager.get_plugins(), report)

    @pytest.hookimpl(tryfirst=True, specname="pytest_sessionfinish")
    def pytest_sessionfinish_run(self, session: pytest.Session) -> None:
        """Before --junitxml writes its file: how the run went (interrupted? cases without a result?), with
        the records of cases this run did not run taken from the store."""
        self.finishing = True
        if self.controller is None or self.ledger is None:
            return
        if self.scheduler is not None and self.scheduler.collection is not None:
            self.selected_ids = set(self.scheduler.collection)
            if self.selected is None:
                self.selected = len(self.selected_ids)
        self.ledger.check_store()
        executed = len(self.ledger.executed)
        reused = sum(1 for nodeid in self.ledger.reused if nodeid in self.records)
        self.ledger.carry(self.records)
        interrupted = None
        if session.exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldstop:
            interrupted = self.signal or ("interrupted" if session.exitstatus == pytest.ExitCode.INTERRUPTED
                                          else str(session.shouldstop))
        elif session.shouldfail:
            interrupted = str(session.shouldfail)
        crashed = "INTERNALERROR" if session.exitstatus == pytest.ExitCode.INTERNAL_ERROR else None
        for down in self.controller.workers_down:  # given to another worker, but xdist stopped before it ran
            if down.get("run_again") and down["crashed"] not in self.records:
                down["run_again"] = False
        lacking = lacking_verdicts(
            self.ledger.cases, self.records, interrupted=interrupted, workers_lost=bool(self.controller.workers_down),
            lost=[down["crashed"] for down in self.controller.workers_down if down["crashed"]],
            skipped_by_design=self.ledger.skipped_by_design(self.records), selected=self.selected_ids)
        self.run = run_section(
            cases=len(self.ledger.cases), selected=self.selected, executed=executed, reused=reused,
            carried=self.ledger.carried, without_result=self.ledger.without_result(self.records),
            interrupted=interrupted, workers_lost=len(self.controller.workers_down), rerun=self.ledger.executed,
            store=self.ledger.folder, resume=self.ledger.resume, dropped=self.ledger.dropped_text(),
            started_in=self.state.started_in, not_selected=self.ledger.not_selected(self.records, self.selected_ids),
            crashed=crashed, store_failed=self.ledger.failed, not_kept=self.ledger.not_kept, lacking=lacking,
        )
        if not self.run["complete"] and is_complete_report(self.state.settings.report_path):
            # never replaced by an incomplete run's (a CI baseline, a debugging rerun without records)
            self.run["kept"] = os.path.relpath(self.state.settings.report_path, self.state.started_in)
        for name, value in run_properties(self.run):
            for plugin in self.config.pluginmanager.get_plugins():
                if type(plugin).__name__ == "LogXML" and hasattr(plugin, "add_global_property"):
                    plugin.add_global_property(name, value)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.is_worker:  # for the report; asked before the executor is closed
            self.state.isolation()
            if not self.interrupts.received:  # (an interrupted run is not kept waiting for the figure)
                self.state.machine_speed()
        elif self.state.started():
            self.config.workeroutput[ISOLATION_KEY] = self.state.isolation()  # type: ignore[attr-defined]
        self.state.close()
        if self.controller is None:
            return
        self.summary = build_summary(self.state, self.records, time.time() - self.started)
        if self.controller.workers_down:
            sched = getattr(self.config.pluginmanager.getplugin("dsession"), "sched", None)
            self.controller.never_ran(gateways.never_ran(sched, self.finished, self.summary.figures["tests_total"]))
        comparison, document, self.unwritten = write_reports(self.controller, self.summary,
                                                             self.config.stash.get(BASELINE_KEY, None), self.run)
        self.comparison = None if comparison is None else comparison.to_dict()
        self.config.hook.pytest_apps_summary(summary=document, records=list(self.records))
        incomplete = None if self.run is None or self.run["complete"] else self.run["incomplete"]
        self.gate = fail_under_verdict(self.state.settings.fail_under, self.summary, incomplete)
        self.regression = regression_verdict(self.state.settings.fail_on_regression, comparison, incomplete)
        gates_passed = passed([self.gate, self.regression])  # either failing fails the run
        # (the gate decides, "no tests ran" included: the README promises 0 or 1)
        ran = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)
        if gates_passed is not None and session.exitstatus in ran:
            session.exitstatus = pytest.ExitCode.OK if gates_passed else pytest.ExitCode.TESTS_FAILED
        if self.controller.cases_not_run and session.exitstatus in (pytest.ExitCode.OK,
                                                                      pytest.ExitCode.NO_TESTS_COLLECTED):
            # a run that lost cases with a worker is not a pass (nor "no tests": xdist stopped before any ran)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.unwritten and session.exitstatus != pytest.ExitCode.INTERRUPTED:
            session.exitstatus = REPORT_NOT_WRITTEN  # not "tests failed": the run's output is missing

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.summary is None:
            return
        terminalreporter.section("APPS summary")
        assert self.controller is not None
        for line in terminal_lines(self.controller, self.summary, self.run):
            terminalreporter.write_line(line)
        if self.sharing:
            terminalreporter.write_line(self.sharing, bold=True)
        for line in self.unwritten:
            terminalreporter.write_line(f"ERROR: {line}: exit status {REPORT_NOT_WRITTEN}", bold=True, red=True)
        if self.comparison is not None:
            for line in baseline_lines(self.comparison):
                terminalreporter.write_line(line)
        if self.gate is not None:
            terminalreporter.write_line(self.gate.message, bold=True, red=not self.gate.passed)
        if self.regression is not None:
            terminalreporter.write_line(self.regression.message, bold=True, red=not self.regression.passed)
        if self.comparison is not None:  # last: what a regression gate failed on, ready to paste
            for line in newly_failing_lines(self.comparison):
                terminalreporter.write_line(line, bold=self.regression is not None,
                                            red=bool(self.regression and not self.regression.passed))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.finishing = True
        if not self.interrupts.received:  # (once interrupted, a signal to come still breaks nothing)
            for sig, handler in self._handlers.items():
                signal.signal(sig, handler)
        if self.lock is not None:
            self.lock.release()
        if self.ledger is not None:
            self.ledger.close(compact=self.run is not None and self.run["complete"])
        self.state.close()
        remove_pool(self.run_name)  # this machine's pool, if its workers made one (they all end together)
        if self.state.owns_plan:
            remove_plan(self.state.plan.folder)
