"""What a role reads from pytest as its process starts: the settings (`settings_of`: the command line, the ini
file, the environment), the plan a process builds for itself (`controller_plan`, with the conftests' and plugins'
hooks), and the arguments a process that collects takes from the command line (`collected_arguments`). Plain
functions of the config, for the role classes (controller.py, worker.py) to call; roles.py picks the class.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..candidates.generation import GenerationInterrupted
from ..candidates.sources import CandidateError
from ..core.settings import OptionError, Settings, resolve
from ..dataset.rows import DatasetError
from ..judge import profiles
from ..judge.special import SpecialJudgeError
from . import nodeids
from .options import checked_ini, ini_folder, project_folder
from .plan import HookError, Plan, build_plan, collection_roots
from .progress import progress_printer


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


def collected_arguments(config: pytest.Config, settings: Settings, plan: Plan, *,
                        collects: bool) -> tuple[set[str], list[Any]]:
    """On a process that collects from this machine's files: the node ids the command line names, and the
    command line as given when names below the candidates' folder were taken off it (`narrow`). Sets the
    arguments pytest collects from. (`collects`: whether this process collects the cases; an xdist controller
    hands them to its workers.)"""
    explicit = explicit_nodeids(config.args, config.rootpath)
    narrow: list[Any] = []
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        # Active with no paths given: collect the APPS items only, not the project's own tests.
        config.args = collection_roots(settings, plan)
    elif collects:
        # a no-code item's node id pasted (`solutions::7::no_code`): pytest takes no names after a folder
        config.args, narrow = nodeids.folder_arguments(config.args, plan.home, config.invocation_params.dir)
    return explicit, narrow


def controller_plan(config: pytest.Config, settings: Settings) -> Plan:
    """The plan of a process that builds its own (the controller, or the only process), which owns it."""
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
