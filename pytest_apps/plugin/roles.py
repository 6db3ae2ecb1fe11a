"""Each role's run state built whole, by one plain function taking what that role needs (no pytest config):

- `controller_state`: the controller, or the only process without xdist. It built the plan (and owns it),
  keeps the record store and what happens to its workers.
- `worker_state`: an xdist worker on the controller's machine. It read the controller's plan folder and runs
  cases on its CPU and its slot of the machine's pool, as the controller placed it (`workerinput`).
- `remote_worker_state`: an xdist worker on another machine. The plan came in `workerinput`, the settings with
  it (not this machine's command line), and each problem's test data comes from the controller (remote.py).

`session.activate` reads the command line or `workerinput`, then calls the one that fits.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from ..core.settings import Settings
from ..executor.slots import Slot
from .cpus import executor_cpu, place_cpu, slot_of
from .plan import Plan, ProblemTestData
from .remote import RemoteFile
from .state import ControllerState, RemoteWorkerState, WorkerState

PLAN_KEY = "apps_plan"  # workerinput: the plan folder's path, for a worker on the controller's machine
SLOTS_KEY = "apps_slots"  # workerinput: the run's name for its pools of execution slots
PLACE_KEY = "apps_machine_place"  # workerinput: (the worker's place among its machine's workers, their count)


def controller_state(settings: Settings, plan: Plan, *, cpus: Collection[int], workers: int,
                     explicit: Iterable[str] = (), narrow: Iterable[Any] = ()) -> ControllerState:
    """`cpus`: the CPUs the run may use here; `workers`: the xdist workers the command line asks for (1
    without xdist); `explicit`, `narrow`: what the command line named (session.explicit_nodeids,
    nodeids.folder_arguments)."""
    return ControllerState(settings, plan, explicit=explicit, narrow=narrow, cpus=len(cpus) or 1, workers=workers,
                           cpu=executor_cpu(settings.cpu_pinning, None, None, cpus))


def worker_state(settings: Settings, plan: Plan, workerinput: dict[str, Any], *, cpus: Collection[int],
                 explicit: Iterable[str] = (), narrow: Iterable[Any] = (), owns_plan: bool = False) -> WorkerState:
    """A local xdist worker's: `plan` read from the controller's plan folder, placed as `workerinput` says.
    (`owns_plan`: the worker of a controller that gave it no plan made its own, and removes it.)"""
    cpu, workers, slot = placement(settings, workerinput, cpus)
    return WorkerState(settings, plan, owns_plan=owns_plan, explicit=explicit, narrow=narrow, cpu=cpu,
                       cpus=len(cpus) or 1, workers=workers, slot=slot)


def remote_worker_state(settings: Settings, plan: Plan, files: list[RemoteFile], test_data: ProblemTestData,
                        workerinput: dict[str, Any], *, cpus: Collection[int]) -> RemoteWorkerState:
    """A remote worker's, from what remote.worker_setup read out of `workerinput`: the plan, the controller's
    settings, the candidate files to collect and the controller as the source of the test data. The node ids
    the controller's command line named always run; a copy of the controller's checker folder is removed
    when the worker ends."""
    cpu, workers, slot = placement(settings, workerinput, cpus)
    copied = [settings.checkers] if settings.checkers != plan.settings.get("checkers") else []
    explicit = {"::".join([f.ids.nodeid, *names]) for f in files for names in f.selectors if names}
    return RemoteWorkerState(settings, plan, remote_files=files, temporary=copied, test_data=test_data,
                             explicit=explicit, cpu=cpu, cpus=len(cpus) or 1, workers=workers, slot=slot)


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
