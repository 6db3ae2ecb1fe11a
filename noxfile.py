"""The project's tests against the pytest versions users get: one nox session per combination.

- `tests-newest`: the whole suite with the newest releases of pytest, pytest-xdist, pytest-timeout and execnet
  (what `pip install pytest-apps` gives a new environment today).
- `tests-oldest`: the lowest versions `pyproject.toml` accepts, on the tests marked `interfaces` (those that use
  pytest's, xdist's and execnet's interfaces most directly: the plugin's hooks and collection, the rootdir found again and pasted node ids, xdist scheduling,
  report transport, remote and ssh workers, the terminal statistics), with the project alone (no extras).
- `tests-pythons`: the newest releases on the other supported Pythons found on this machine, on the same
  tests as `tests-oldest`.

Each pytest run prints its 25 slowest tests (`--durations`), to keep the suite's time in view.

- `docs`: the documentation site, built with `mkdocs build --strict`.

`.ci/run` runs `docs`, `tests-oldest` and `tests-newest`. Each session has its own virtual environment under `.nox/`
with the project installed there as a user installs it (built and installed, not editable: package data
included; never in the environment nox itself runs in), and runs pytest's own command, so the tests import
that installed package. A checkout under /tmp (a CI clone, say) keeps its environments outside /tmp, in
~/.cache/pytest-apps/nox: a child's private /tmp would hide a package there, and the fence's tests of it
would skip. Arguments after `--` go to pytest: `nox -s tests-oldest -- -k remote -x`.
"""

from __future__ import annotations

import glob
import os
import tomllib

import nox

nox.options.sessions = ["tests-newest", "tests-oldest"]
nox.options.reuse_existing_virtualenvs = True
# uv makes the environments and installs into them where it is installed (.ci/run installs it): a new environment
# with the test extras (Ray, datasets, SciPy) takes uv seconds where pip takes a minute and a half; pip otherwise.
nox.options.default_venv_backend = "uv|virtualenv"
# uv leaves compiling to bytecode to the first import, as pip does not: under PYTHONDONTWRITEBYTECODE=1 (as
# container images often set) nothing would ever write it, and every process outside the test sessions' pytest
# (which writes it, see pytest() below: the docs build, the version check) would compile its imports again
os.environ.setdefault("UV_COMPILE_BYTECODE", "1")

HERE = os.path.realpath(os.path.dirname(__file__))
if any(HERE == top or HERE.startswith(top + "/") for top in ("/tmp", "/dev/shm")):
    # one place for every such checkout (a CI clone's path changes from run to run: no environment left behind
    # per clone); each session reinstalls the project, so a reused environment tests this checkout
    nox.options.envdir = os.path.expanduser("~/.cache/pytest-apps/nox")

PYTHON = "3.11"
# The floors in pyproject.toml (execnet, which pytest-xdist brings, at the release pytest-xdist 3.5 came out with).
OLDEST = ["pytest==8.0.0", "pytest-xdist==3.5.0", "pytest-timeout==2.2.0", "execnet==2.0.2"]
NEWEST = ["pytest", "pytest-xdist", "pytest-timeout", "execnet"]
# The modules holding the tests marked `interfaces` (their other tests are left out by the marker).
INTERFACE_TESTS = [
    "-m", "interfaces",
    "tests/test_plugin.py",
    "tests/test_running.py",
    "tests/test_remote.py",
    "tests/test_ssh.py",
    "tests/test_scheduling.py",
    "tests/test_transport.py",
    "tests/test_termstats.py",
]


VERSIONS = ("import importlib.metadata as m, sys; print('python', sys.version.split()[0], *(f'{n} {m.version(n)}' "
            "for n in ('pytest', 'pytest-xdist', 'pytest-timeout', 'execnet', 'pluggy')))")


def install(session: nox.Session, *pins: str, project: str = ".[test]") -> None:
    # --force-reinstall --no-deps first: the same version number must not keep an older build of the project
    session.install("--force-reinstall", "--no-deps", ".")
    session.install(project)
    # --upgrade: a reused environment (or pip's "already satisfied") keeps older releases otherwise
    session.install("--upgrade", *pins)
    session.run("python", "-c", VERSIONS)


def pytest(session: nox.Session, *tests: str) -> None:
    # The suite starts some 650 pytest processes (the runs its tests make, and their xdist workers). pytest rewrites
    # the assertions of every module of a distribution with a pytest11 entry point (this plugin's, xdist's,
    # pytest-timeout's) and of the test modules, and keeps the result as bytecode only where bytecode may be
    # written: under PYTHONDONTWRITEBYTECODE=1 each of those processes would compile them all again.
    session.env["PYTHONDONTWRITEBYTECODE"] = ""  # (empty: unset, for Python)
    # pytest's command, not `python -m pytest`, which would put the checkout first on the module path
    session.run("pytest", "--durations=25", *(session.posargs or tests))


@nox.session(name="docs", python=PYTHON)
def docs(session: nox.Session) -> None:
    """The documentation site, built strictly: a broken link, a missing anchor or a page left out of the nav fails.
    Only the docs extra is installed (the pages need nothing of the project's code)."""
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as fh:
        session.install(*tomllib.load(fh)["project"]["optional-dependencies"]["docs"])
    session.run("mkdocs", "build", "--strict", "--quiet", "--site-dir", session.create_tmp())


@nox.session(name="tests-newest", python=PYTHON)
def tests_newest(session: nox.Session) -> None:
    install(session, *NEWEST)
    pytest(session, "tests")


@nox.session(name="tests-oldest", python=PYTHON)
def tests_oldest(session: nox.Session) -> None:
    install(session, *OLDEST, project=".")  # (the interface tests need none of the test extras)
    pytest(session, *INTERFACE_TESTS)


def pyenv_pythons() -> list[str]:
    """The supported CPythons besides PYTHON that pyenv holds on this machine (newest patch release of each),
    put first on PATH so that nox finds them by version (pyenv's shims refuse a version not selected)."""
    found: dict[str, str] = {}
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    for folder in sorted(glob.glob(os.path.join(root, "versions", "3.*.*", "bin")), key=_version):
        minor = ".".join(os.path.basename(os.path.dirname(folder)).split(".")[:2])
        if minor != PYTHON and _version(folder) >= (3, 11) and os.path.exists(os.path.join(folder, f"python{minor}")):
            found[minor] = folder
    if found:
        os.environ["PATH"] = os.pathsep.join([*found.values(), os.environ.get("PATH", "")])
    return sorted(found, key=lambda v: tuple(map(int, v.split("."))))


def _version(folder: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in os.path.basename(os.path.dirname(folder)).split("."))
    except ValueError:
        return (0,)


@nox.session(name="tests-pythons", python=pyenv_pythons() or ["3.12", "3.13"])
def tests_pythons(session: nox.Session) -> None:
    install(session, *NEWEST)
    pytest(session, *INTERFACE_TESTS)
