"""An xdist worker's plugin object, as xdist's WorkerInteractor is its: what a worker process does besides
collecting and running cases (cases.py, registered beside it). It stops at the run's first signal, leaves its pid
where its controller can interrupt it (a local worker), keeps its terminal's counts out of the controller's, and
sends the controller its machine's isolation layers and speed (so that a controller whose workers ran every case
starts no executor of its own only to ask).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from .base import ISOLATION_KEY, SPEED_KEY, RunPlugin
from .interrupts import note_worker
from .roles import SLOTS_KEY
from .termstats import forget_on_worker


class WorkerPlugin(RunPlugin):
    """`plan_folder`: the controller's plan folder on this machine, where a local worker leaves its pid (None on
    another machine)."""

    def __init__(self, config: pytest.Config, plan_folder: Path | None = None) -> None:
        workerinput = getattr(config, "workerinput", {})
        super().__init__(config, workerinput.get(SLOTS_KEY) or uuid.uuid4().hex[:16])
        if plan_folder is not None:
            # (once its handlers are in place: from then on, the controller's SIGINT stops it as Ctrl-C does)
            note_worker(plan_folder, str(workerinput.get("workerid")))
        quiet_terminal(config)

    def filed(self, report: pytest.TestReport, stats: dict[str, list[Any]] | None) -> None:
        if stats is not None:
            forget_on_worker(stats, report)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.state.started():
            output = self.config.workeroutput  # type: ignore[attr-defined]
            output[ISOLATION_KEY] = self.state.isolation()
            # (an interrupted run is not kept waiting for the figure)
            output[SPEED_KEY] = None if self.interrupts.received else self.state.machine_speed()
        self.state.close(wait=False)  # it cleans up as the controller hears this worker finish (waited for at the end)


def quiet_terminal(config: pytest.Config) -> None:
    """A worker's terminal output goes nowhere (the controller reports every test), but its terminal reporter
    still asks every plugin for a terminal summary at the end: hypothesis's imports the whole hypothesis
    package there, which pytest rewrites for assertions (every module of a plugin's distribution is marked) and,
    under PYTHONDONTWRITEBYTECODE=1, recompiles on each worker, seconds at every stop. Without the reporter
    the end of a worker depends on no other plugin's summary."""
    config.pluginmanager.unregister(name="terminalreporter")
