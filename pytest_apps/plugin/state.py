"""What one pytest process holds for the run: the settings, the plan, its test data, the executor and the judging
(`RunState`, the same whatever the process's role), and what the controller learns of its xdist workers
(`ControllerState`). Each role's object (controller.py, distribution.py, worker.py) builds its state and puts it
in the config's stash, where items read it with `RunState.of(config)`; what only one role has otherwise lives on
its object."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from ..core.settings import Settings
from ..core.writing import written_in_place
from ..engine.spec import RunSpec, run_spec
from ..executor import Executor, Limits, Slot
from ..judge.profiles import Judging
from .plan import Plan, PlanTestData, ProblemTestData

STATE_KEY = pytest.StashKey["RunState"]()
BACKSTOP_MARGIN = 30.0  # seconds above the case limit before pytest-timeout steps in


class RunState:
    """What every role has: the settings, the plan and its test data, this process's executor (on its CPU and
    slot), the judging, and the cases that ran here."""

    def __init__(
        self, settings: Settings, plan: Plan, *, test_data: ProblemTestData | None = None,
        explicit: Iterable[str] = (), narrow: Iterable[Any] = (), cpu: int | None = None, cpus: int = 1,
        workers: int = 1, slot: Slot | None = None,
    ) -> None:
        self.settings = settings
        self.plan = plan
        # where a problem's test data comes from: the plan's files, or the controller (remote.ControllerTestData)
        self.test_data: ProblemTestData = test_data if test_data is not None else PlanTestData(plan)
        self.explicit = set(explicit)  # node ids named on the command line: they always run
        self.narrow = list(narrow)  # the command line as given, when names after the candidates' folder were taken off
        self.cpu = cpu  # the CPU this process's executor is kept on (see cpus.py)
        self.cpus = cpus  # CPUs the run may use on this machine
        self.workers = workers  # processes running tests in this run (xdist workers)
        self.slot = slot  # this worker's execution slot in the run's pool (see executor/slots.py)
        self._failed_at: dict[tuple[str, int], str] = {}  # (problem, sample) -> first failing node id here
        self._executor: Executor | None = None
        self._isolation: list[str] | None = None
        self._speed: float | None = None
        self._closed = False
        self.case_files_failed = ""  # why a failing case's files could not be written here (none are tried again)

    def first_failure(self, key: tuple[str, int]) -> str | None:
        """The node id of the first case of (problem, sample) that failed in this process, if one did."""
        return self._failed_at.get(key)

    def note_failure(self, key: tuple[str, int], nodeid: str) -> None:
        self._failed_at.setdefault(key, nodeid)

    @staticmethod
    def of(config: Any) -> RunState:
        return config.stash[STATE_KEY]

    @functools.cached_property
    def spec(self) -> RunSpec:
        """The run's spec (engine/spec.py): its judging, limits and preload; each process builds it from the same
        settings and the plan's checkers (each loads the checker files itself)."""
        return run_spec(self.settings, checker_code=self.plan.checker_code)

    def limits(self) -> Limits:
        return self.spec.limits

    @functools.cached_property
    def backstop(self) -> pytest.MarkDecorator:
        """pytest-timeout's marker for every item: a backstop well above the case limit, so a fault of
        the harness can never wedge a worker. Made once: a hundred thousand items share it. A test may first
        wait for its slot while the workers sharing it run theirs, each at most the wall-clock backstop; a
        confirmation (engine/confirm.py) then waits for the other workers' confirmations and runs, and for every
        slot, each at most one more backstop."""
        sharers = -(-self.workers // self.slot.count) if self.slot is not None else 1
        runs = sharers + self.workers + 1
        return pytest.mark.timeout(self.limits().wall_backstop * runs + BACKSTOP_MARGIN, method="signal")

    @property
    def started_in(self) -> Path:
        """Where the run was started (on the controller): paths shown to the user are relative to it."""
        return Path(self.settings.rootdir)

    @property
    def cases_folder(self) -> Path | None:
        """Where failing cases' inputs are written for debugging: beside the JSON report; None when the report
        goes to a device or a FIFO (`/dev/null`: nothing is made in `/dev`)."""
        report = self.settings.report_path
        return None if written_in_place(report) else report.parent / "cases"

    @property
    def executor(self) -> Executor:
        """Started on first use, so a process that runs no case starts no server."""
        if self._executor is None:
            self._executor = self.spec.executor(cpu=self.cpu, slot=self.slot)
        return self._executor

    def machine_speed(self) -> float | None:
        """The machine speed figure (executor/machine.py), measured once per run and process (or taken from a
        worker on this machine: ControllerState.local_machine)."""
        if self._speed is None and not self._closed:
            self._speed = self.executor.machine_speed()
        return self._speed

    @property
    def judging(self) -> Judging:
        """The run's judge profile and checkers; a reference run also audits the references (see
        engine.run.reference_audit)."""
        return self.spec.judging

    def isolation(self) -> list[str]:
        """The executor's active isolation layers (asked once; the same for every worker on a machine)."""
        if self._isolation is None:
            self._isolation = self.executor.isolation() if not self._closed else []
        return self._isolation

    def started(self) -> bool:
        """Whether this process started its executor (ran a case)."""
        return self._executor is not None

    def ask_speed(self) -> None:
        """Have a running executor measure the machine speed now, while this process finishes its run; asking for
        `machine_speed()` later reads it."""
        if self._executor is not None and self._speed is None and not self._closed:
            self._executor.ask_speed()

    def close(self, wait: bool = True) -> None:
        """Stops the executor's server. Asking for the isolation layers afterwards starts none. `wait=False` tells
        it to stop and returns at once (it cleans up meanwhile); a later `close()` waits for it."""
        self._closed = True
        if self._executor is not None:
            self._executor.close(wait=wait)
            if wait:
                self._executor = None
        if self.slot is not None:
            self.slot.close()


class ControllerState(RunState):
    """The controller's (or the only process's): with xdist, it also keeps what happened to its workers, for the
    reports. (Its record store, the Ledger, and the report's lock are its role object's: controller.py.)"""

    def __init__(self, settings: Settings, plan: Plan, **core: Any) -> None:
        super().__init__(settings, plan, **core)
        self.workers_down: list[dict[str, Any]] = []  # xdist workers lost mid-run (gateways.down_record)
        self.cases_not_run = 0  # with a worker lost: the selected cases that never ran anywhere
        self.remote_isolation: dict[str, list[str]] = {}  # other machines' isolation layers

    def worker_lost(self, down: dict[str, Any]) -> None:
        self.workers_down.append(down)

    def worker_crashed(self, worker: str | None, nodeid: str, run_again: bool | None = None) -> None:
        """The case a lost worker was running when it went down (and whether it runs again on another worker)."""
        for down in self.workers_down:
            if down["worker"] == worker and not down["crashed"]:
                down["crashed"] = nodeid
                if run_again is not None:
                    down["run_again"] = run_again

    def local_machine(self, layers: list[str], speed: float | None) -> None:
        """This machine's isolation layers and speed as a worker here found them, unless this process knows its
        own: then the controller, which runs no case under xdist, starts no executor only to ask."""
        if self._isolation is None:
            self._isolation = list(layers)
        if self._speed is None:
            self._speed = speed

    def machine_isolation(self, machine: str, layers: list[str]) -> None:
        """Another machine's fences, as one of its workers found them; the report claims only what every
        machine had."""
        self.remote_isolation[machine] = list(layers)

    def never_ran(self, cases: int) -> None:
        """With a worker lost: how many selected cases never ran anywhere."""
        self.cases_not_run = cases

