"""The active run: what the plugin does once it is turned on (`hooks.py`, the `pytest11` entry point, imports this
module only then, so that a pytest run that does not use the plugin pays for none of it). `activate` builds the
run's state for the role this process plays (the controller, a local or a remote xdist worker) and returns the
plugin objects that hold its hooks (controller.py or worker.py, and cases.py or distribution.py), for the entry
point to register.

When active, the controller (or the only process) plans the run before any xdist worker starts; workers read
that plan (or, on other machines, receive it: remote.py), collect ids only, run cases, and send plain records
back; the controller rolls them up into the report.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..candidates.generation import GenerationInterrupted
from ..candidates.sources import CandidateError
from ..core.settings import OptionError, Settings, resolve
from ..dataset.rows import DatasetError
from ..judge import profiles
from ..judge.special import SpecialJudgeError
from . import nodeids
from .base import RunPlugin
from .baseline_file import BASELINE_KEY, check_baseline, read_baseline
from .cases import CasePlugin, RemoteCasePlugin
from .cpus import available_cpus, xdist_workers
from .extending import requested_reports
from .options import REMOTE_KEY, checked_ini, ini_folder, project_folder
from .outputs import ReportLock, check_outputs
from .plan import PLAN_FILE, HookError, Plan, build_plan, collection_roots, load_plan
from .progress import progress_printer
from .remote import worker_setup
from .roles import PLAN_KEY, controller_state, remote_worker_state, worker_state
from .state import STATE_KEY, ControllerState, RemoteWorkerState, RunState, WorkerState
from .worker import WorkerPlugin

if TYPE_CHECKING:
    from .distribution import DistributionPlugin


def activate(config: pytest.Config, worker: dict[str, Any]) -> tuple[RunPlugin, CasePlugin | DistributionPlugin]:
    """Turn the plugin on in this process: its run state for its role, and the plugin objects with its role's
    hooks (for the caller to register; see role_plugins)."""
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
    if not config.option.collectonly and (worker or not xdist_controller(config)):
        # The server's start and the zygote's preload overlap this process's collection (and, on a worker,
        # the controller's scheduling) rather than following them: the first item would wait for all of it.
        # (An xdist controller runs no case: its executor starts only if the report asks it for something.)
        state.executor.start()
    if getattr(config.option, "dist", "no") not in ("no", "loadscope"):
        # All cases of a candidate stay on one worker (loadscope groups by the node id's parent).
        config.option.dist = "loadscope"
    return role_plugins(config, worker, started)


def role_plugins(config: pytest.Config, worker: dict[str, Any],
                 started: float) -> tuple[RunPlugin, CasePlugin | DistributionPlugin]:
    """This process's two plugin objects, as xdist registers a DSession on its controller and a WorkerInteractor
    on each worker: its role's (the controller's or a worker's), and how its cases run: collected and run here
    (the only process without xdist; a worker, from its machine's files or, on another machine, from the plan)
    or handed to xdist's workers (an xdist controller, which runs no case)."""
    if REMOTE_KEY in worker:
        return WorkerPlugin(config), RemoteCasePlugin(config)
    if worker:  # (a local worker leaves its pid in the controller's plan folder)
        return WorkerPlugin(config, Path(worker[PLAN_KEY]) if PLAN_KEY in worker else None), CasePlugin(config)
    # (the controller's modules, its report writers among them, are imported by the controller alone: a worker's
    # start goes without them)
    from .controller import ControllerPlugin
    from .distribution import DistributionPlugin

    controller = ControllerPlugin(config, started)
    if xdist_controller(config):
        return controller, DistributionPlugin(controller)
    return controller, CasePlugin(config)


def xdist_controller(config: pytest.Config) -> bool:
    """Whether this process is pytest-xdist's controller, handing the cases to workers. xdist registers its
    DSession in a last `pytest_configure`, as the plugin turns on in one, and pytest calls the two in the order
    their plugins were loaded, which differs between environments: so, while it is not registered yet, xdist's
    own condition on its options (which its `pytest_cmdline_main` settled before any `pytest_configure`)."""
    if config.pluginmanager.has_plugin("dsession"):
        return True
    option = config.option
    return (not getattr(config, "workerinput", None) and not option.collectonly
            and getattr(option, "dist", "no") != "no" and bool(getattr(option, "tx", None)))


def configure_controller(config: pytest.Config) -> ControllerState:
    """The controller (or the only process): the settings from its command line, the baseline read before the
    plan is built (a missing file costs no benchmark time) and checked against it."""
    settings = settings_of(config)
    unwritable = check_outputs(settings, getattr(config.option, "xmlpath", None), requested_reports(config, settings))
    if unwritable:  # before any work: not a traceback after every case has run
        raise pytest.UsageError(unwritable)
    lock = ReportLock(settings.report_path)  # held to the end (the controller's plugin releases it)
    refused = lock.acquire()
    if refused:  # another live run writes this report: refused before any work, its report left to it
        raise pytest.UsageError(refused)
    try:
        baseline = read_baseline(settings)
        plan = controller_plan(config, settings)
        check_baseline(baseline, settings, plan)
        config.stash[BASELINE_KEY] = baseline
        explicit, narrow = collected_arguments(config, settings, plan)
        workers = xdist_workers(getattr(config.option, "dist", None), getattr(config.option, "tx", None))
        state = controller_state(settings, plan, cpus=available_cpus(), workers=workers, explicit=explicit,
                                 narrow=narrow)
    except BaseException:
        lock.release()
        raise
    state.report_lock = lock
    return state


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
        # A path option left at its default lies in the project's folder (`project_folder`).
        return resolve(config.getoption, checked_ini(config.getini), str(config.invocation_params.dir),
                       ini_folder(config), project_folder(config), check=profiles.checked)
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
    elif not xdist_controller(config):  # this process collects
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
    except GenerationInterrupted as exc:  # what was generated is kept; said in one line, as an interrupt
        pytest.exit(f"apps: {exc}", returncode=pytest.ExitCode.INTERRUPTED)
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
