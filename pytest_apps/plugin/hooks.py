"""pytest hooks for pytest-apps, the `pytest11` entry point: loaded by every pytest run in an environment that
has the plugin installed, so it holds only what declaring the options and deciding whether the plugin is on
needs (no engine, no judges, no numpy).

The plugin is dormant unless `--apps`, an `--apps-*` selection option, the ini option `apps` or a path in the
candidates' folder asks for it; dormant, it only keeps pytest from importing candidate code. Turned on, it
imports `roles.py` and registers the one object that `roles.activate` builds for this process: its role's (the
controller's, a local or a remote worker's), which holds the state and every hook of that role, after putting the
judge profiles and datasets that conftests and plugins add in their tables (`extending.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .early import correct_setup
from .options import (REMOTE_KEY, add_options, candidate_sources, dormant_line, ini_folder, is_active, lies_in,
                      project_folder)

SOURCES_KEY = pytest.StashKey[list[Path]]()  # where this run's candidate code lies (options.candidate_sources)
DORMANT_KEY = pytest.StashKey["str | None"]()  # dormant: the line saying how to turn the plugin on, if any
SESSION = "apps-session"  # the name this process's role object is registered under (the run is active)
EXTENDING = "apps-extending"  # the plugin's own implementations of its table hooks (extending.py)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """The rootdir and ini file as `--apps-dataset=PATH` gives them, for `--apps-dataset PATH` too (early.py)."""
    line = correct_setup(early_config, parser, args)
    if line:
        early_config.issue_config_time_warning(pytest.PytestConfigWarning(line), stacklevel=2)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    worker = getattr(config, "workerinput", None) or {}
    if config.option.help:
        return
    started_in = str(config.invocation_params.dir)
    # where candidate code lies (this machine's paths; a remote worker collects from the plan instead)
    sources = [] if REMOTE_KEY in worker else candidate_sources(config.getoption, config.getini, started_in,
                                                                ini_folder(config), project_folder(config))
    config.stash[SOURCES_KEY] = sources
    given = config.args if config.args_source == pytest.Config.ArgsSource.ARGS else []
    if not (REMOTE_KEY in worker or is_active(config.getoption, config.getini, given, sources, started_in)):
        if not worker:
            config.stash[DORMANT_KEY] = dormant_line(config.getini, config.inipath)
        return
    from . import extending
    from .roles import activate  # (the engine, the judges, the dataset readers: only for an active run)

    config.pluginmanager.register(extending, EXTENDING)  # (its own implementation of the table hooks)
    extending.add_entries(config)  # (before the options are checked: --apps-judge takes the profiles added)
    config.pluginmanager.register(activate(config, worker), SESSION)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Dormant, in a project whose ini file sets `apps_*` options but not `apps = true`: how to turn it on."""
    line = config.stash.get(DORMANT_KEY, None)
    return [line] if line else []


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The same line at the end when `-q` hides the header: a quiet run is where it is missed."""
    line = config.stash.get(DORMANT_KEY, None)
    if line and config.get_verbosity() < 0:
        terminalreporter.write_line(line)


@pytest.hookimpl(tryfirst=True)
def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With the plugin dormant, pytest does not walk into the candidates' folders: nothing there is a test, and
    pytest's Python collector would import a `test_*.py` there, running candidate code inside pytest."""
    if config.pluginmanager.has_plugin(SESSION) or not lies_in(collection_path, config.stash.get(SOURCES_KEY, [])):
        return None
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> Any:
    """A folder of candidates is a plain folder to pytest, never a package (whose `__init__.py` it imports)."""
    if lies_in(path, parent.config.stash.get(SOURCES_KEY, [])):
        return pytest.Dir.from_parent(parent, path=path)
    return None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> Any:
    """Only the plugin's own collector takes a file where candidates lie, active or dormant, walked or named
    on the command line: any other (pytest's Python collector above all) would import candidate code."""
    collected = yield
    if not collected or not lies_in(file_path, parent.config.stash.get(SOURCES_KEY, [])):
        return collected
    if not parent.config.pluginmanager.has_plugin(SESSION):
        return []  # dormant: none of these is ours
    from .collect import CandidateFile  # (active: loaded with roles.py)

    return [node for node in collected if isinstance(node, CandidateFile)]
