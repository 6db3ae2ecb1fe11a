"""The options on pytest's command line and in its ini file: declared from the one table in `core.settings`."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from ..core.settings import OPTIONS, OptionError, Settings, argparse_kwargs, resolve

# workerinput: the plan, for a worker that cannot read the controller's files (remote.py). Such a worker is
# active whatever its options say; declared here, with the other tests of activity, so that the entry point
# can tell without importing the rest.
REMOTE_KEY = "apps_remote_plan"


def add_options(parser: Any) -> None:
    group = parser.getgroup("apps", "APPS benchmark (pytest-apps)")
    group.addoption("--apps", action="store_true", dest="apps", default=None,
                    help="Collect and run the APPS benchmark (implied by any selection option).")
    parser.addini("apps", "Enable the APPS benchmark collection.", type="bool", default=False)
    for opt in OPTIONS:
        group.addoption(opt.flag, **argparse_kwargs(opt))
        ini_type = {"list": "linelist", "bool": "bool"}.get(opt.kind, "string")
        parser.addini(opt.dest, opt.help, type=ini_type)


def is_active(getoption: Callable[[str], Any], getini: Callable[[str], Any], args: Sequence[str] = (),
              sources: Sequence[Path] = (), started_in: str | Path = ".") -> bool:
    """`--apps`, a selection option, a command-line path in the candidates' `sources` (a node id pasted
    from a run: it runs fenced, as a candidate, never as a test module), or the ini's `apps = true`."""
    if getoption("apps"):
        return True
    if any(getoption(opt.dest) is not None for opt in OPTIONS if opt.selects):
        return True
    if any(lies_in(arg, sources, started_in) for arg in args):
        return True
    return switched_on(getini)


def switched_on(getini: Callable[[str], Any]) -> bool:
    """The ini file's `apps = true`; a value that is neither true nor false is a usage error naming the key."""
    try:
        return bool(checked_ini(getini)("apps"))
    except ValueError as exc:
        raise pytest.UsageError(f"ini option apps: {exc}; give apps = true or apps = false") from None


def checked_ini(getini: Callable[[str], Any]) -> Callable[[str], Any]:
    """`getini` whose switch that is neither true nor false is a ValueError (pytest's own message names no key;
    `core.settings.resolve` and `switched_on` name it)."""
    def read(name: str) -> Any:
        try:
            return getini(name)
        except pytest.UsageError as exc:
            raise ValueError(str(exc)) from None

    return read


def dormant_line(getini: Callable[[str], Any], inipath: Path | None) -> str | None:
    """For a dormant run whose ini file sets `apps_*` options without `apps = true`: one line saying how to turn
    the plugin on (reads the ini's values only). None otherwise."""
    if inipath is None or switched_on(getini):
        return None
    named = [opt.dest for opt in OPTIONS if _given(getini, opt.dest)]
    if not named:
        return None
    shown = ", ".join(named[:3]) + (" ..." if len(named) > 3 else "")
    return (f"apps: the benchmark is off although {Path(inipath).name} sets {shown}: add 'apps = true' there, "
            "or run pytest --apps")


def _given(getini: Callable[[str], Any], dest: str) -> bool:
    try:
        return checked_ini(getini)(dest) not in (None, "", [], False)
    except ValueError:  # (a switch set to neither true nor false: set all the same)
        return True


def candidate_sources(getoption: Callable[[str], Any], getini: Callable[[str], Any], started_in: str,
                      ini_dir: str | Path | None = None, project: str | Path = "") -> list[Path]:
    """Where the programs of a run with these options would come from: the candidates source (a folder or a
    generations file; the default `solutions`) and the generations folder, as absolute paths. Candidate code
    lies there, so pytest's Python collector must never import a file of theirs, the plugin active or not.
    A folder that holds where pytest started (`--apps-candidates=.`) is left out: it is the project itself."""
    try:
        settings = resolve(getoption, checked_ini(getini), started_in, ini_dir, project)
    except OptionError:  # the run itself says so when it is active; dormant, the defaults
        settings = Settings(rootdir=started_in, project=str(project or ""))
    here = _absolute(started_in)
    out: list[Path] = []
    for path in (settings.candidates_path, settings.generations_path):
        for form in (_absolute(path), _absolute(path).resolve()):  # as given, and with links followed
            if form not in out and not (form == here or form in here.parents):
                out.append(form)
    return out


def lies_in(arg: str | Path, sources: Sequence[Path], started_in: str | Path = ".") -> bool:
    """Whether a command-line argument (`path` or `path::names`, relative to where pytest started) or a
    collected path is one of `sources` (as `candidate_sources` gives them) or lies below one of them."""
    if not sources:
        return False
    path = _absolute(Path(started_in, str(arg).split("::")[0]))
    return any(p == src or src in p.parents for p in (path, path.resolve()) for src in sources)


def _absolute(path: str | Path) -> Path:
    return Path(os.path.abspath(os.path.expanduser(path)))


def project_folder(config: Any) -> str:
    """Where the path options' defaults lie: the rootdir of a project with an ini file (its folder, wherever in it
    the run started); "" without one (pytest's rootdir then depends on the arguments: the defaults are taken
    from where the run started)."""
    return "" if config.inipath is None else str(config.rootpath)


def ini_folder(config: Any) -> Path | None:
    """The folder of the ini file (pytest.ini, tox.ini, setup.cfg or pyproject.toml) the run read, if any."""
    return None if config.inipath is None else Path(config.inipath).parent
