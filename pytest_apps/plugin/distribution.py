"""The controller's role object when xdist hands the cases to workers (`XdistController`, as xdist's DSession):
the controller's (controller.py) with xdist's hooks: our scheduler, the workerinput each worker needs (the plan,
the run's pools of execution slots, its place on its machine; for a worker on another machine, what remote.py
sends), and what a lost worker had been given or was running. It runs no case itself.
"""

from __future__ import annotations

import signal
from typing import Any

import pytest

from . import gateways
from .base import ISOLATION_KEY, SPEED_KEY
from .controller import Controller
from .crashes import settle_crash_report
from .crashes import teststatus as crash_teststatus
from .interrupts import interrupt_workers, starting_workers, worker_pids
from .outputs import ReportLock
from .remote import RemoteWorkers
from .state import ControllerState
from .worker import PLACE_KEY, PLAN_KEY, SLOTS_KEY


class XdistController(Controller):
    """The controller of an xdist run: xdist's hooks, what they learn kept in its state and its records."""

    runs_cases = False  # (its executor starts only if the report asks it for something)

    def __init__(self, config: pytest.Config, state: ControllerState, lock: ReportLock, started: float) -> None:
        super().__init__(config, state, lock, started)
        self.specs: list[Any] = []  # the xdist gateway specs
        self.scheduler: Any = None  # ours (scheduling.py), once xdist asked for one
        self._remote: RemoteWorkers | None = None

    def stop_workers(self) -> None:
        """At a signal: interrupt the local workers now (see interrupts.py)."""
        folder = self.state.plan.folder
        interrupt_workers(worker_pids(folder))
        nodemanager = getattr(self.config.pluginmanager.getplugin("dsession"), "nodemanager", None)
        interrupt_workers(starting_workers(getattr(nodemanager, "group", None) or (), folder), signal.SIGTERM)

    def count_never_ran(self, selected: int) -> None:
        if self.state.workers_down:
            sched = getattr(self.config.pluginmanager.getplugin("dsession"), "sched", None)
            self.state.never_ran(gateways.never_ran(sched, self.finished, selected))

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") != "loadscope":
            return None
        from .scheduling import ProblemScheduling

        settings, records = self.state.settings, self.records
        self.scheduler = ProblemScheduling(config, log, stealing=settings.work_stealing == "on",
                                           fail_fast=settings.fail_fast, held=self.ledger.held(),
                                           report_held=self.report_scheduled_held,
                                           has_verdict=lambda nodeid: nodeid in records)
        return self.scheduler

    def report_scheduled_held(self, nodeids: list[str]) -> None:
        """The scheduler hands the controller the cases its records settle: the selected cases are the
        scheduler's collection."""
        if self.selected is None:
            self.selected = len(self.scheduler.collection)
        self.report_held(nodeids)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and self.scheduler is not None:  # (for its fail-fast, before the record is taken)
            self.scheduler.note_failure(report.nodeid)
        super().pytest_runtest_logreport(report)

    @pytest.hookimpl(wrapper=True, specname="pytest_sessionfinish")
    def pytest_sessionfinish_selected(self, session: pytest.Session) -> Any:
        """Before the controller says how the run went (pytest_sessionfinish_run): the selected cases are the
        scheduler's. (Its own name: the controller's class has a `pytest_sessionfinish` of its own.)"""
        if self.scheduler is not None and self.scheduler.collection is not None:
            self.selected_ids = set(self.scheduler.collection)
            if self.selected is None:
                self.selected = len(self.selected_ids)
        return (yield)

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
        output = getattr(node, "workeroutput", None) or {}
        layers = output.get(ISOLATION_KEY)
        if layers is not None and gateways.is_remote(node.gateway.spec):
            self.state.machine_isolation(gateways.machine_of(node.gateway.spec), layers)
        elif layers is not None:  # a worker on this machine: the controller's report takes its figures
            self.state.local_machine(layers, output.get(SPEED_KEY))
        if error is None:
            return
        # before xdist takes the node's work back: what it had been given and not finished
        sched = getattr(self.config.pluginmanager.getplugin("dsession"), "sched", None)
        self.state.worker_lost(gateways.down_record(node, error, gateways.unfinished(sched, node)))

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", None)
        run_again = crashitem in getattr(sched, "run_again", ())
        self.state.worker_crashed(worker, crashitem, run_again)
        if settle_crash_report(report, run_again, crashitem in self.records):
            report.apps_run_again = run_again  # (how the terminal and JUnit take it: below, and in controller.py)

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: Any) -> tuple[str, str, str] | None:
        if hasattr(report, "apps_run_again"):
            return crash_teststatus(report, report.apps_run_again)
        return None
