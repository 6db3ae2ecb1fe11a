"""The controller's plugin object, as xdist's DSession is its: registered in the process that planned the run
(the xdist controller, or the only process). It owns the record store (ledger.py) and the report lock, reports
the cases its records settle without running them, takes each case's record out of its report, and at the end
writes the reports, applies the gates and sets the exit status. Beside it, how its cases run: the case-running
plugin (cases.py) without xdist, xdist's wiring (distribution.py) with it.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from ..core.record import CaseRecord
from ..core.writing import written_in_place
from ..core.settings import rerun_args
from ..report.comparison_text import baseline_lines, newly_failing_lines
from ..report.gates import Gate, fail_under_verdict, regression_verdict
from ..report.received import CaseRecords
from ..report.rollup import Summary
from . import gateways
from .base import RunPlugin
from .baseline_file import BASELINE_KEY
from .collect import CASE_FILES_KEY, RECORD_KEY
from .crashes import forget_junit_case
from .extending import requested_reports
from .interrupts import interrupt_workers, starting_workers, worker_pids
from .ledger import Ledger, report_recorded, report_skipped
from .runend import exit_status, interruption, run_of
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


NO_REPORT = "apps: no report written: the command line selects no case of this run (an earlier report stays as it was)"


class ControllerPlugin(RunPlugin):
    """The controller's hooks: the run's records, its reports and its exit status."""

    state: ControllerState

    def __init__(self, config: pytest.Config, started: float) -> None:
        self.config = config
        self.state = ControllerState.of(config)  # type: ignore[assignment]
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
        self.lock = self.state.report_lock  # (taken before the plan: a second run on this report is refused)
        self.selected: int | None = None  # the cases the command line selects (known once collected)
        self.selected_ids: set[str] | None = None  # their node ids (under xdist: the scheduler's, distribution.py)
        self.held: list[pytest.Item] = []  # without xdist: the ledger's held items, reported without running
        self.run: dict[str, Any] | None = None
        self.unwritten: list[str] = []  # a line for each report that could not be written
        self.case_files_failed = ""  # why failing cases' files could not be written (the first worker's words)
        super().__init__(config, uuid.uuid4().hex[:16], hurry=self._stop_workers)

    def _stop_workers(self) -> None:
        """At a signal: interrupt the local workers now (see interrupts.py)."""
        folder = self.state.plan.folder
        interrupt_workers(worker_pids(folder))
        nodemanager = getattr(self.config.pluginmanager.getplugin("dsession"), "nodemanager", None)
        interrupt_workers(starting_workers(getattr(nodemanager, "group", None) or (), folder), signal.SIGTERM)

    # -- cases settled by their records -------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Without xdist: after every selection (-k, -m, --lf, --deselect), the reused items leave the run;
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
        # Take our record out before --junitxml sees it: a dict property is noise there.
        mine = [value for key, value in report.user_properties if key == RECORD_KEY]
        unwritten = [value for key, value in report.user_properties if key == CASE_FILES_KEY]
        if unwritten:  # (said once, at the end, whichever worker met it)
            self.case_files_failed = self.case_files_failed or str(unwritten[0])
            report.user_properties = [(k, v) for k, v in report.user_properties if k != CASE_FILES_KEY]
        if mine:
            report.user_properties = [(k, v) for k, v in report.user_properties if k != RECORD_KEY]
            record = CaseRecord.from_json(mine[-1])
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
        if session.config.option.collectonly or self.nothing_to_report(session):
            return
        if not self.interrupts.received:  # measured by the executor meanwhile; read below (pytest_sessionfinish)
            self.state.ask_speed()
        crashed = "INTERNALERROR" if session.exitstatus == pytest.ExitCode.INTERNAL_ERROR else None
        self.run = run_of(self.state, self.ledger, self.records, selected=self.selected,
                          selected_ids=self.selected_ids, interrupted=interruption(session, self.signal),
                          crashed=crashed)
        junit = junit_writer(self.config)
        junit_path = Path(junit.logfile) if junit is not None else None
        if not self.run["complete"] and is_complete_report(self.state.settings.report_path):
            # never replaced by an incomplete run's (a CI baseline, a debugging rerun without records): nor is
            # the complete run's --junitxml file
            self.run["kept"] = os.path.relpath(self.state.settings.report_path, self.state.started_in)
            places = written_beside(self.state.settings, junit_path,
                                    requested_reports(self.config, self.state.settings))
            self.run["beside"] = [os.path.relpath(path, self.state.started_in) for path in places]
            if junit_path is not None and junit_path.is_file():
                junit.logfile = str(beside(junit_path))
        elif self.run["complete"] and junit_path is not None and not written_in_place(junit_path):
            beside(junit_path).unlink(missing_ok=True)  # an earlier incomplete run's, now stale
        add_suite_properties(self.config, run_properties(self.run))

    def nothing_to_report(self, session: pytest.Session) -> bool:
        """Whether the command line named no case of the plan (a node id that selects nothing, a path pytest
        refused): a report of nothing, "complete", would replace the last one. The run writes none."""
        named = self.config.args_source == pytest.Config.ArgsSource.ARGS and bool(self.config.args)
        return session.exitstatus == pytest.ExitCode.USAGE_ERROR or (named and not self.ledger.cases)

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
        if self.state.workers_down:
            sched = getattr(self.config.pluginmanager.getplugin("dsession"), "sched", None)
            self.state.never_ran(gateways.never_ran(sched, self.finished, self.summary.figures["tests_total"]))
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

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.summary is None:
            if self.finishing and self.run is None:
                terminalreporter.write_line(NO_REPORT, bold=True)
            return
        terminalreporter.section("APPS summary")
        for line in terminal_lines(self.state, self.summary, self.run):
            terminalreporter.write_line(line)
        if self.case_files_failed:
            terminalreporter.write_line(f"WARNING: {self.case_files_failed}", bold=True)
        for line in self.unwritten:
            terminalreporter.write_line(f"ERROR: {line}: exit status {REPORT_NOT_WRITTEN}", bold=True, red=True)
        if self.comparison is not None:
            for line in baseline_lines(self.comparison):
                terminalreporter.write_line(line)
        for gate in (self.gate, self.regression):
            if gate is not None:
                terminalreporter.write_line(gate.message, bold=True, red=not gate.passed)
        if self.comparison is not None:  # last: what a regression gate failed on, ready to paste
            for line in newly_failing_lines(self.comparison, rerun_args(self.state.settings)):
                terminalreporter.write_line(line, bold=self.regression is not None,
                                            red=bool(self.regression and not self.regression.passed))

    def put_away(self) -> None:
        self.lock.release()
        self.ledger.close(compact=self.run is not None and self.run["complete"])
