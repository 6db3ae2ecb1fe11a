"""An xdist worker's role object, as xdist's WorkerInteractor is its: a process that collects and runs the cases
its controller hands it. `LocalWorker` (on the controller's machine) reads the controller's plan folder and leaves
its pid there, where its controller can interrupt it; `RemoteWorker` (on another machine) receives the plan in
`workerinput` and its test data from the controller (remote.py). Each builds its state and itself in its
`start`. Both stop at the run's first signal, keep their terminal's counts out of the controller's, and send the
controller their machine's isolation layers and speed (so that a controller whose workers ran every case starts
no executor of its own only to ask).

What the controller puts in a worker's `workerinput` (distribution.py) is named here, where it is read: the plan
folder (`PLAN_KEY`), the run's pools of execution slots (`SLOTS_KEY`) and the worker's place on its machine
(`PLACE_KEY`).
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import pytest

from ..core.settings import Settings
from ..executor.slots import Slot
from .base import ISOLATION_KEY, SPEED_KEY, Role
from .cases import CollectsFromPlan, CollectsHere
from .cpus import available_cpus, executor_cpu, place_cpu, slot_of
from .interrupts import note_worker
from .plan import PLAN_FILE, Plan, ProblemTestData, load_plan
from .remote import RemoteFile, worker_setup
from .session import collected_arguments, controller_plan, settings_of
from .state import RunState
from .termstats import forget_on_worker

PLAN_KEY = "apps_plan"  # workerinput: the plan folder's path, for a worker on the controller's machine
SLOTS_KEY = "apps_slots"  # workerinput: the run's name for its pools of execution slots
PLACE_KEY = "apps_machine_place"  # workerinput: (the worker's place among its machine's workers, their count)


def placement(settings: Settings, workerinput: dict[str, Any],
              cpus: Collection[int]) -> tuple[int | None, int, Slot | None]:
    """A worker's CPU, the count of workers it shares its machine with (each machine counts its own), and its
    slot in the run's pool on this machine (None when the controller named no pool)."""
    place = workerinput.get(PLACE_KEY)
    if place is not None:
        cpu = place_cpu(settings.cpu_pinning, place[0], place[1], cpus)
    else:
        cpu = executor_cpu(settings.cpu_pinning, workerinput.get("workerid"), workerinput.get("workercount"), cpus)
    workers = int(place[1] if place is not None else workerinput.get("workercount") or 1)
    slot = None
    if workerinput.get(SLOTS_KEY):
        index, count = slot_of(workerinput.get("workerid"), cpus)
        if place is not None:
            index = place[0] % count
        slot = Slot(workerinput[SLOTS_KEY], index, count)
    return cpu, workers, slot


def worker_state(settings: Settings, plan: Plan, workerinput: dict[str, Any], *, cpus: Collection[int],
                 explicit: Iterable[str] = (), narrow: Iterable[Any] = (),
                 test_data: ProblemTestData | None = None) -> RunState:
    """A worker's state: `plan` read from the controller's plan folder (or, on another machine, received with
    `test_data`, the controller as the source of each problem's data), placed as `workerinput` says."""
    cpu, workers, slot = placement(settings, workerinput, cpus)
    return RunState(settings, plan, test_data=test_data, explicit=explicit, narrow=narrow, cpu=cpu,
                    cpus=len(cpus) or 1, workers=workers, slot=slot)


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


def remote_explicit(files: Iterable[RemoteFile]) -> set[str]:
    """The node ids the controller's command line named in its candidate files: they always run."""
    return {"::".join([f.ids.nodeid, *names]) for f in files for names in f.selectors if names}


def checker_copies(settings: Settings, plan: Plan) -> list[str]:
    """A remote worker's copy of the controller's checker folder (remote.put_checkers), to remove at its end: the
    settings name a folder other than the plan's."""
    return [settings.checkers] if settings.checkers != plan.settings.get("checkers") else []


def remove_folders(folders: list[str]) -> None:
    while folders:
        shutil.rmtree(folders.pop(), ignore_errors=True)


class Worker(Role):
    """What every xdist worker does besides collecting and running cases."""

    def __init__(self, config: pytest.Config, state: RunState, *, owns_plan: bool = False) -> None:
        workerinput = getattr(config, "workerinput", {})
        super().__init__(config, state, workerinput.get(SLOTS_KEY) or uuid.uuid4().hex[:16], owns_plan=owns_plan)
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


class LocalWorker(CollectsHere, Worker):
    """A worker on the controller's machine: it reads the controller's plan folder, collects this machine's
    candidate files, and leaves its pid in the plan folder. (Given no plan folder, by a controller where the
    plugin is dormant, it plans for itself and removes that plan at its end.)"""

    @classmethod
    def start(cls, config: pytest.Config, workerinput: dict[str, Any]) -> LocalWorker:
        settings = settings_of(config)
        given = PLAN_KEY in workerinput
        plan = worker_plan(workerinput) if given else controller_plan(config, settings)
        explicit, narrow = collected_arguments(config, settings, plan, collects=True)
        state = worker_state(settings, plan, workerinput, cpus=available_cpus(), explicit=explicit, narrow=narrow)
        cls.warm(config, state)
        worker = cls(config, state, owns_plan=not given)
        if given:  # (once its handlers are in place: from then on, the controller's SIGINT stops it as Ctrl-C does)
            note_worker(Path(workerinput[PLAN_KEY]), str(workerinput.get("workerid")))
        return worker


class RemoteWorker(CollectsFromPlan, Worker):
    """A worker that cannot see the controller's files: the plan and the settings it was made with (not this
    machine's command line, ini file or environment) came in `workerinput`, each problem's test data comes from
    the controller, and it collects the candidate files the controller named. A copy of the controller's checker
    folder is removed at its end."""

    def __init__(self, config: pytest.Config, state: RunState, files: list[RemoteFile],
                 temporary: list[str]) -> None:
        super().__init__(config, state)
        self.remote_files = files
        self.temporary = temporary  # folders made here for the run (a checker folder), removed at the end

    @classmethod
    def start(cls, config: pytest.Config, workerinput: dict[str, Any]) -> RemoteWorker:
        plan, settings, files, test_data = worker_setup(config, workerinput)
        # Collected from the plan (collect.PlanRoot at the rootdir), never from this machine's files; the
        # command line's paths are the controller's and were matched against the plan there.
        config.args = [str(config.rootpath)]
        state = worker_state(settings, plan, workerinput, cpus=available_cpus(), explicit=remote_explicit(files),
                             test_data=test_data)
        cls.warm(config, state)
        return cls(config, state, files, checker_copies(settings, plan))

    def put_away(self) -> None:
        remove_folders(self.temporary)  # (the checkers run in this process: nothing of the server's needs them)


def quiet_terminal(config: pytest.Config) -> None:
    """A worker's terminal output goes nowhere (the controller reports every test), but its terminal reporter
    still asks every plugin for a terminal summary at the end: hypothesis's imports the whole hypothesis
    package there, which pytest rewrites for assertions (every module of a plugin's distribution is marked) and,
    under PYTHONDONTWRITEBYTECODE=1, recompiles on each worker, seconds at every stop. Without the reporter
    the end of a worker depends on no other plugin's summary."""
    config.pluginmanager.unregister(name="terminalreporter")
