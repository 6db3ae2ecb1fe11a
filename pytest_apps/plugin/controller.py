"""The controller's role object, as xdist's DSession is its: the process that plans the run (the xdist controller,
or the only process). `Controller.start` builds its state (the settings, the report's lock, the baseline, the
plan) and itself; it owns the record store (ledger.py) and the report lock, reports the cases its records settle
without running them, takes each case's record out of its report, and at the end writes the reports, applies the
gates and sets the exit status. Its two classes: `LoneController`, the only process of a run without xdist, which
also collects and runs the cases (cases.CollectsHere), and `distribution.XdistController`, which hands them to
xdist's workers.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from ..core.record import CaseRecord
from ..core.writing import written_in_place
from ..core.settings import Settings, rerun_args
from ..report.comparison_text import baseline_lines, newly_failing_lines
from ..report.gates import Gate, fail_under_verdict, regression_verdict
from ..report.received import CaseRecords
from ..report.rollup import Summary
from .base import Role
from .baseline_file import BASELINE_KEY, check_baseline, read_baseline
from .cases import CollectsHere
from .collect import CASE_FILES_KEY, RECORD_KEY
from .cpus import available_cpus, executor_cpu, xdist_workers
from .crashes import forget_junit_case
from .extending import requested_reports
from .formats import ReportFormat
from .ledger import Ledger, report_recorded, report_skipped
from .outputs import ReportLock, check_outputs
from .plan import Plan
from .runend import exit_status, interruption, run_of
from .session import collected_arguments, controller_plan, settings_of
from .state import ControllerState
from .termstats import forget_quiet_phase
from .writers import (
    REPORT_NOT_WRITTEN,
    added_header_lines,
    beside,
    build_summary,
    is_complete_report,
    junit_properties,
    run_properties,
    suite_properties,
    terminal_lines,
    write_reports,
    written_beside,
)


def junit_writer(config: pytest.Config) -> Any:
    """--junitxml's writer (pytest's LogXML, with its `logfile`), or None without --junitxml."""
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ == "LogXML" and hasattr(plugin, "logfile"):
            return plugin
    return None


def add_suite_properties(config: pytest.Config, properties: Iterable[tuple[str, str]]) -> None:
    """--junitxml's testsuite properties, as the record_testsuite_property fixture adds them."""
    for name, value in properties:
        for plugin in config.pluginmanager.get_plugins():
            if type(plugin).__name__ == "LogXML" and hasattr(plugin, "add_global_property"):
                plugin.add_global_property(name, value)


def controller_state(settings: Settings, plan: Plan, *, cpus: Collection[int], workers: int,
                     explicit: Iterable[str] = (), narrow: Iterable[Any] = ()) -> ControllerState:
    """The controller's state. `cpus`: the CPUs the run may use here; `workers`: the xdist workers the command
    line asks for (1 without xdist); `explicit`, `narrow`: what the command line named
    (session.explicit_nodeids, nodeids.folder_arguments)."""
    return ControllerState(settings, plan, explicit=explicit, narrow=narrow, cpus=len(cpus) or 1, workers=workers,
                           cpu=executor_cpu(settings.cpu_pinning, None, None, cpus))


def taken_out(properties: list[tuple[str, Any]]) -> tuple[CaseRecord | None, str, list[tuple[str, Any]]]:
    """A test report's user properties, parted: its case's record (the last, if it carries one), why the process
    that ran it could write no failing case's files ("" if it could), and the others, which --junitxml sees (a
    dict property is noise there)."""
    records = [value for key, value in properties if key == RECORD_KEY]
    unwritten = [value for key, value in properties if key == CASE_FILES_KEY]
    others = [(key, value) for key, value in properties if key not in (RECORD_KEY, CASE_FILES_KEY)]
    return CaseRecord.from_json(records[-1]) if records else None, str(unwritten[0]) if unwritten else "", others


def keep_complete_reports(run: dict[str, Any], settings: Settings, started_in: Path,
                          junit_path: Path | None,
                          reports: Sequence[tuple[ReportFormat, Path]] | None = None) -> Path | None:
    """Where an incomplete run writes its reports when a complete run's JSON report is at the path: beside the
    complete ones, never over them (a CI baseline, a debugging rerun without records); said in `run` (`kept`,
    `beside`). Returns where --junitxml writes instead, if elsewhere. A complete run removes the `.incomplete`
    --junitxml file an earlier run left."""
    if not run["complete"] and is_complete_report(settings.report_path):
        run["kept"] = os.path.relpath(settings.report_path, started_in)
        run["beside"] = [os.path.relpath(path, started_in) for path in written_beside(settings, junit_path, reports)]
        if junit_path is not None and junit_path.is_file():
            return beside(junit_path)
    elif run["complete"] and junit_path is not None and not written_in_place(junit_path):
        beside(junit_path).unlink(missing_ok=True)  # an earlier incomplete run's, now stale
    return None


def closing_lines(case_files_failed: str, unwritten: list[str], comparison: dict[str, Any] | None,
                  gate: Gate | None, regression: Gate | None, rerun: list[str]) -> list[tuple[str, dict[str, bool]]]:
    """The terminal summary's lines after the figures, each with its markup: a warning that failing cases' files
    were not written, each report that could not be, the comparison with a baseline, the gates' verdicts, and
    last what a regression gate failed on, ready to paste (`rerun`: the run's options for that command)."""
    lines: list[tuple[str, dict[str, bool]]] = []
    if case_files_failed:
        lines.append((f"WARNING: {case_files_failed}", {"bold": True}))
    lines += [(f"ERROR: {line}: exit status {REPORT_NOT_WRITTEN}", {"bold": True, "red": True}) for line in unwritten]
    if comparison is not None:
        lines += [(line, {}) for line in baseline_lines(comparison)]
    lines += [(g.message, {"bold": True, "red": not g.passed}) for g in (gate, regression) if g is not None]
    if comparison is not None:
        markup = {"bold": regression is not None, "red": bool(regression and not regression.passed)}
        lines += [(line, markup) for line in newly_failing_lines(comparison, rerun)]
    return lines


NO_REPORT = ("apps: no report written: the command line selects no case of this run (an earlier report stays as it "
             "was{})")


def no_report_line(junit: Any, started_in: Path) -> str:
    """The line saying that the run writes no report. With --junitxml, its file is kept too: pytest's writer
    (which writes after this) is pointed at the null device, since an empty suite would replace the last run's."""
    if junit is None:
        return NO_REPORT.format("")
    path, junit.logfile = junit.logfile, os.devnull
    return NO_REPORT.format(f", and so does --junitxml's {os.path.relpath(path, started_in)}: pytest's empty "
                            f"one goes to {os.devnull}")


class Controller(Role):
    """The controller's state and hooks: the run's records, its reports and its exit status."""

    state: ControllerState

    @classmethod
    def start(cls, config: pytest.Config, started: float) -> Controller:
        """The controller of a run started at `started`: the settings from its command line, every output path
        checked and the report's lock taken before any work, the baseline read before the plan is built (a
        missing file costs no benchmark time) and checked against it."""
        settings = settings_of(config)
        unwritable = check_outputs(settings, getattr(config.option, "xmlpath", None),
                                   requested_reports(config, settings))
        if unwritable:  # before any work: not a traceback after every case has run
            raise pytest.UsageError(unwritable)
        lock = ReportLock(settings.report_path)  # held to the end (put_away releases it)
        refused = lock.acquire()
        if refused:  # another live run writes this report: refused before any work, its report left to it
            raise pytest.UsageError(refused)
        try:
            baseline = read_baseline(settings)
            plan = controller_plan(config, settings)
            check_baseline(baseline, settings, plan)
            config.stash[BASELINE_KEY] = baseline
            explicit, narrow = collected_arguments(config, settings, plan, collects=cls.runs_cases)
            workers = xdist_workers(getattr(config.option, "dist", None), getattr(config.option, "tx", None))
            state = controller_state(settings, plan, cpus=available_cpus(), workers=workers, explicit=explicit,
                                     narrow=narrow)
        except BaseException:
            lock.release()
            raise
        cls.warm(config, state)
        return cls(config, state, lock, started)

    def __init__(self, config: pytest.Config, state: ControllerState, lock: ReportLock, started: float) -> None:
        self.config = config
        self.state = state
        self.started = started
        self.records = CaseRecords()
        self.summary: Summary | None = None
        self.gate: Gate | None = None
        self.regression: Gate | None = None
        self.comparison: dict[str, Any] | None = None
        self.finished = 0  # tests whose last report reached the controller
        # the record store, and how this run went, for the reports
        params = config.invocation_params
        self.ledger = Ledger(self.state, config.rootpath, params.dir, [str(a) for a in config.args])
        self.lock = lock  # (taken before the plan: a second run on this report is refused)
        self.selected: int | None = None  # the cases the command line selects (known once collected)
        self.selected_ids: set[str] | None = None  # their node ids (under xdist: the scheduler's, distribution.py)
        self.run: dict[str, Any] | None = None
        self.unwritten: list[str] = []  # a line for each report that could not be written
        self.case_files_failed = ""  # why failing cases' files could not be written (the first worker's words)
        self.no_report = ""  # the line that says why the run writes no report (it selects no case)
        super().__init__(config, state, uuid.uuid4().hex[:16], owns_plan=True, hurry=self.stop_workers)

    def stop_workers(self) -> None:
        """At a signal: the workers to interrupt at once (an xdist controller's, distribution.py); none here."""

    # -- cases settled by their records -------------------------------------------------------------------------

    def report_held(self, nodeids: list[str]) -> None:
        """Report these selected cases from their records, or as skipped after a reused failure (under xdist,
        the scheduler calls this: distribution.py)."""
        if self.selected is None:
            self.selected = len(nodeids)
        for nodeid in nodeids:
            if nodeid in self.ledger.reused:
                report_recorded(self.config, self.ledger.cases[nodeid], self.ledger.reused[nodeid], RECORD_KEY)
            else:
                report_skipped(self.config, self.ledger.cases[nodeid], self.ledger.stopped[nodeid])

    # -- each case's record -------------------------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        add_suite_properties(self.config, suite_properties(self.state))

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        lines = super().pytest_report_header(config)
        return lines + added_header_lines(config.hook.pytest_apps_report_header(settings=self.state.settings))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown" or (report.when == "???" and not getattr(report, "apps_run_again", False)):
            self.finished += 1  # a test's last report; "???": a worker crashed running it (and it runs no more)
        record, unwritten, others = taken_out(report.user_properties)
        if len(others) < len(report.user_properties):
            report.user_properties = others
        self.case_files_failed = self.case_files_failed or unwritten  # (said once, at the end, whoever met it)
        if record is not None:
            self.records.add(record)
            self.ledger.note(record)
        # --junitxml writes the properties of the teardown report (which no longer carries the record)
        record = self.records.get(report.nodeid) if report.when == "teardown" else None
        if record is not None and self.state.settings.junit_properties:
            report.user_properties.extend(junit_properties(record))

    def filed(self, report: pytest.TestReport, stats: dict[str, list[Any]] | None) -> None:
        if stats is not None:
            forget_quiet_phase(stats, report)
        if getattr(report, "apps_run_again", False):  # a lost worker's case that runs again: one JUnit case
            forget_junit_case(self.config.pluginmanager.get_plugins(), report)

    # -- the end ------------------------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True, specname="pytest_sessionfinish")
    def pytest_sessionfinish_run(self, session: pytest.Session) -> None:
        """Before --junitxml writes its file: how the run went (interrupted? cases without a result?), with
        the records of cases this run did not run taken from the store. `--collect-only` runs nothing: no run,
        no summary, no report."""
        self.finishing = True
        if session.config.option.collectonly:
            return
        if self.nothing_to_report(session):
            self.no_report = no_report_line(junit_writer(self.config), self.state.started_in)
            return
        if not self.interrupts.received:  # measured by the executor meanwhile; read below (pytest_sessionfinish)
            self.state.ask_speed()
        crashed = "INTERNALERROR" if session.exitstatus == pytest.ExitCode.INTERNAL_ERROR else None
        self.run = run_of(self.state, self.ledger, self.records, selected=self.selected,
                          selected_ids=self.selected_ids, interrupted=interruption(session, self.signal),
                          crashed=crashed)
        junit = junit_writer(self.config)
        junit_path = keep_complete_reports(self.run, self.state.settings, self.state.started_in,
                                           Path(junit.logfile) if junit is not None else None,
                                           requested_reports(self.config, self.state.settings))
        if junit_path is not None:
            junit.logfile = str(junit_path)
        add_suite_properties(self.config, run_properties(self.run))

    def nothing_to_report(self, session: pytest.Session) -> bool:
        """Whether the command line selects no case of the plan (a node id that names no test: a wrong case
        index, a problem outside the selection; a path pytest refused; `-k` matching nothing): a report of
        nothing, "complete", would replace the last one, and pytest's --junitxml an empty suite. The run writes
        none."""
        named = self.config.args_source == pytest.Config.ArgsSource.ARGS and bool(self.config.args)
        return (session.exitstatus == pytest.ExitCode.USAGE_ERROR or (named and not self.ledger.cases)
                or self.selected == 0)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.run is None:  # (--collect-only, or nothing_to_report: no report, no summary)
            self.state.close(wait=False)
            return
        self.state.isolation()  # for the report; asked before the executor is closed
        if not self.interrupts.received:  # (an interrupted run is not kept waiting for the figure)
            self.state.machine_speed()
        self.state.close(wait=False)  # the server cleans up while the reports are written (waited for at the end)
        self.summary = build_summary(self.state, self.records, time.time() - self.started)
        self.count_never_ran(self.summary.figures["tests_total"])
        comparison, document, self.unwritten = write_reports(self.state, self.summary,
                                                             self.config.stash.get(BASELINE_KEY, None), self.run,
                                                             requested_reports(self.config, self.state.settings))
        self.comparison = None if comparison is None else comparison.to_dict()
        self.config.hook.pytest_apps_summary(summary=document, records=list(self.records))
        incomplete = None if self.run is None or self.run["complete"] else self.run["incomplete"]
        self.gate = fail_under_verdict(self.state.settings.fail_under, self.summary, incomplete)
        self.regression = regression_verdict(self.state.settings.fail_on_regression, comparison, incomplete)
        session.exitstatus = exit_status(session.exitstatus, [self.gate, self.regression],
                                         self.state.cases_not_run, self.unwritten)

    def count_never_ran(self, selected: int) -> None:
        """Of the `selected` cases, those that never ran anywhere because a worker was lost (distribution.py);
        none here."""

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.summary is None:
            if self.no_report:
                terminalreporter.write_line(self.no_report, bold=True)
            return
        terminalreporter.section("APPS summary")
        for line in terminal_lines(self.state, self.summary, self.run):
            terminalreporter.write_line(line)
        for line, markup in closing_lines(self.case_files_failed, self.unwritten, self.comparison, self.gate,
                                          self.regression, rerun_args(self.state.settings)):
            terminalreporter.write_line(line, **markup)

    def put_away(self) -> None:
        self.lock.release()
        self.ledger.close(compact=self.run is not None and self.run["complete"])


class LoneController(CollectsHere, Controller):
    """The only process of a run without xdist: it plans the run, collects and runs every case, and reports."""

    def __init__(self, config: pytest.Config, state: ControllerState, lock: ReportLock, started: float) -> None:
        super().__init__(config, state, lock, started)
        self.held: list[pytest.Item] = []  # the ledger's held items, reported without running

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """After every selection (-k, -m, --lf, --deselect), the reused items leave the run;
        they are reported from their records when the run starts."""
        self.selected = len(items)
        self.selected_ids = {item.nodeid for item in items}
        held = self.ledger.held()
        if held:
            self.held = [item for item in items if item.nodeid in held]
            if self.held:
                items[:] = [item for item in items if item.nodeid not in held]

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        held_failed = 0
        try:
            if self.held and not session.config.option.collectonly:
                session.testscollected += len(self.held)
                before = session.testsfailed
                self.report_held([item.nodeid for item in self.held])
                # pytest's loop reads failures counted before it as collection errors: a held failure counts once
                # the loop has begun (for the exit status; with -x it has already set shouldfail)
                held_failed, session.testsfailed = session.testsfailed - before, before
            return (yield)
        except KeyboardInterrupt:
            if not self.own_interrupt(session):
                raise
            raise KeyboardInterrupt(self.signal) from None  # (our signal: its traceback starts here)
        finally:
            session.testsfailed += held_failed

