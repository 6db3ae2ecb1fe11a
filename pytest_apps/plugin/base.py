"""What every role object shares, as a small base class (`Role`): the process's run state (put where items read
it), SIGINT and SIGTERM on the run (interrupts.py), pytest's reports packed for another process (transport.py),
the run's header lines, and what the process puts away at the end (its executor, its machine's pool of execution
slots, a plan it made). Nothing here asks which role the process plays: where the roles differ, each class says
so itself (controller.py, distribution.py, worker.py).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

import pytest

from ..executor.slots import remove_pool
from . import transport
from .interrupts import Interrupts
from .plan import remove_plan
from .state import STATE_KEY, RunState

ISOLATION_KEY = "apps_isolation"  # workeroutput: the isolation layers of a worker that ran cases
SPEED_KEY = "apps_machine_speed"  # workeroutput: its machine's speed figure (executor/machine.py), or None


class Role:
    """The hooks every pytest process of an active run has, whatever its role. A role's class builds its state
    and itself in its `start` (roles.activate picks the class); `runs_cases`: whether a process of this role
    runs cases (its executor starts as soon as it exists); `owns_plan`: whether it made the plan folder, and
    removes it at the end."""

    runs_cases = True

    def __init__(self, config: pytest.Config, state: RunState, run_name: str, *, owns_plan: bool = False,
                 hurry: Callable[[], None] | None = None) -> None:
        self.config = config
        self.state = state
        config.stash[STATE_KEY] = state  # (items read it there: collect.py)
        self.owns_plan = owns_plan
        self.run_name = run_name  # names this run's pools of execution slots (one per machine its workers run on)
        self.signal: str | None = None  # the signal that interrupted the run
        self.finishing = False  # the session is ending: a signal now no longer interrupts it (interrupts.py)
        self._handlers: dict[int, Any] = {}
        self.interrupts = Interrupts(on_first=hurry, on_later=hurry)
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._handlers[sig] = signal.signal(sig, self._interrupted)

    @classmethod
    def warm(cls, config: pytest.Config, state: RunState) -> None:
        """Start the executor of a role that runs cases as soon as its state exists: the server's start and the
        zygote's preload overlap this process's collection (and, on a worker, the controller's scheduling) rather
        than following them, where the first item would wait for all of it."""
        if cls.runs_cases and not config.option.collectonly:
            state.executor.start()

    def _interrupted(self, signum: int, frame: Any) -> None:
        """SIGINT or SIGTERM: the first stops the run as Ctrl-C does (the reports are written, and say so; the
        controller interrupts its local workers at once); a later one never breaks the shutdown it began."""
        if self.interrupts.receive(signum) and not self.finishing:
            self.signal = self.interrupts.first
            raise KeyboardInterrupt(self.signal)

    def own_interrupt(self, session: pytest.Session) -> bool:
        """Whether the KeyboardInterrupt ending the loop is this run's signal, to be shown without pytest's
        traceback: pytest's terminal renders an interrupt's traceback with every frame's arguments, seconds of a
        deep xdist loop on a busy machine, to print its last line."""
        return self.signal is not None and not session.config.option.fulltrace

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        try:
            return (yield)
        except KeyboardInterrupt:
            if not self.own_interrupt(session):
                raise
            raise KeyboardInterrupt(self.signal) from None  # (our signal: its traceback starts here)

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_to_serializable(self, report: Any) -> dict[str, Any] | None:
        return transport.pack(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_from_serializable(self, data: dict[str, Any]) -> Any:
        return transport.unpack(data)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        from .writers import header_lines  # (with the report writers it brings: an xdist worker shows no header)

        return header_lines(self.state)

    @pytest.hookimpl(trylast=True, specname="pytest_runtest_logreport")
    def pytest_runtest_logreport_quiet(self, report: pytest.TestReport) -> None:
        """After the terminal reporter has filed the report (see termstats). (pytest takes only hooks whose
        names begin with pytest_: `specname` names the one this is.)"""
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        self.filed(report, None if terminal is None else terminal.stats)

    def filed(self, report: pytest.TestReport, stats: dict[str, list[Any]] | None) -> None:
        """What this role takes back once the terminal reporter has filed `report` in its `stats` (if it has one)."""

    @pytest.hookimpl(tryfirst=True, specname="pytest_sessionfinish")
    def pytest_sessionfinish_run(self, session: pytest.Session) -> None:
        self.finishing = True

    def put_away(self) -> None:
        """What this role closes at the end, before the executor (see pytest_unconfigure)."""

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.finishing = True
        if not self.interrupts.received:  # (once interrupted, a signal to come still breaks nothing)
            for sig, handler in self._handlers.items():
                signal.signal(sig, handler)
        self.put_away()
        self.state.close()
        remove_pool(self.run_name)  # this machine's pool, if its workers made one (they all end together)
        if self.owns_plan:
            remove_plan(self.state.plan.folder)
        if self.interrupts.received:
            # Its work is done. Python sets a signal handled in Python back to its default as it finalizes, and
            # SIGINT's default ends the process: a Ctrl-C then would make the exit status a death by that signal.
            # What is left (the executors' exit handlers) is bounded and ends by itself.
            for sig in self._handlers:
                signal.signal(sig, signal.SIG_IGN)
