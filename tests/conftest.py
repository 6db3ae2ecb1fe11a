"""Fixtures and helpers shared by the project's tests: the bundled sample, broken candidates, the shared APPS data."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from pathlib import Path

import numpy  # noqa: F401  (see below)
import pytest

from pytest_apps.dataset.problems import Problem
from pytest_apps.executor.slots import pool_folder
from pytest_apps.plugin.options import is_active

# numpy is imported here, before any test: the judges import it only when a comparison needs it, and pytester's
# in-process runs remove the modules first imported inside them when they end; numpy's C extension cannot be
# loaded a second time in one process ("cannot load module more than once per process").

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"


def pytest_configure(config: pytest.Config) -> None:
    """The problem-index cache of this test session: a temporary folder, never ~/.cache. Set in the
    environment, so pytester subprocesses and xdist workers (which inherit it) use it too. Only for a
    session of the project's own tests: pytest loads this file for any run in the checkout (`tests` is in
    `testpaths`), and a benchmark run there keeps the user's cache."""
    if hasattr(config, "workerinput") and os.environ.get("PYTEST_APPS_CACHE"):
        return  # an xdist worker: the controller's folder
    if not runs_own_tests(config):
        return
    folder = tempfile.mkdtemp(prefix="pytest-apps-cache-")
    config.stash[_CACHE_KEY] = (folder, os.environ.get("PYTEST_APPS_CACHE"))
    os.environ["PYTEST_APPS_CACHE"] = folder


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The project's own tests run on up to four xdist workers (two on a two-CPU machine), those that load the
    machine on purpose one after another (xdist group "time-limits"). Set here for a session of the project's
    own tests only, not in `addopts`, which would give a benchmark run in the checkout workers it did not ask
    for. Any -n (`-n 0`: one process), --dist or --tx given is kept. (Before xdist's own hook reads them.)"""
    option = config.option
    if (hasattr(config, "workerinput") or not config.pluginmanager.has_plugin("xdist")
            or not runs_own_tests(config)):
        return
    if option.numprocesses is None and not option.tx and option.dist == "no":
        option.numprocesses, option.maxprocesses, option.dist = "auto", 4, "loadgroup"


def pytest_unconfigure(config: pytest.Config) -> None:
    if _CACHE_KEY in config.stash:
        folder, before = config.stash[_CACHE_KEY]
        shutil.rmtree(folder, ignore_errors=True)
        if before is None:
            os.environ.pop("PYTEST_APPS_CACHE", None)
        else:
            os.environ["PYTEST_APPS_CACHE"] = before


_CACHE_KEY = pytest.StashKey[tuple]()


def runs_own_tests(config: pytest.Config) -> bool:
    """Whether this session collects the project's own tests: the plugin is dormant (a run with `--apps*` or
    ini `apps = true` is a benchmark run) and a test path lies in this folder. (An xdist worker decides the
    same from the same command line; pytester's runs are in folders of their own, which never load this file.)"""
    if is_active(config.getoption, config.getini):
        return False
    here = Path(__file__).resolve().parent
    for arg in config.args:
        path = Path(config.invocation_params.dir, str(arg).split("::")[0]).resolve()
        if path == here or here in path.parents:
            return True
    return False


def shared_data_dir() -> Path:
    """Real APPS rows and model candidates, beside the project (override with APPS_SHARED_DATA)."""
    return Path(os.environ.get("APPS_SHARED_DATA", REPO.parent / "shared" / "apps-data"))


def shared_datasets_dir() -> Path:
    """Real rows of other benchmarks in their hub schemas, beside the project (override with
    APPS_SHARED_DATASETS)."""
    return Path(os.environ.get("APPS_SHARED_DATASETS", REPO.parent / "shared" / "datasets"))


@pytest.fixture
def shared_datasets() -> Path:
    folder = shared_datasets_dir()
    if not (folder / "lcb" / "rows.jsonl").is_file() or not (folder / "code_contests" / "rows.jsonl").is_file():
        pytest.skip(f"no shared datasets at {folder} (set APPS_SHARED_DATASETS to the datasets folder)")
    return folder


@pytest.fixture
def shared_data() -> Path:
    folder = shared_data_dir()
    if not (folder / "apps_test_rows.jsonl").is_file():
        pytest.skip(f"no shared APPS data at {folder} (set APPS_SHARED_DATA to the apps-data folder)")
    return folder


@pytest.fixture
def sample_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project folder holding the sample's correct solutions in solutions/."""
    shutil.copytree(SOLUTIONS, pytester.path / "solutions")
    return pytester


def read_report(pytester: pytest.Pytester, name: str = "reports/apps-report.json") -> dict:
    return json.loads((pytester.path / name).read_text())


# Third-party pytest plugins an environment may hold that no run under test uses. Every pytest process a test
# starts (and each of its xdist workers) would load them from their entry points: hypothesis's and anyio's
# (which huggingface_hub's HTTP client brings) cost a process about a second of start-up together.
UNUSED_PLUGINS = ("-p", "no:benchmark", "-p", "no:hypothesispytest", "-p", "no:anyio", "-p", "no:platformdirs")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """pytest in a real subprocess, as users run it (our plugin from its entry point)."""
    return pytester.runpytest_subprocess(*UNUSED_PLUGINS, *args)


def run_in(folder: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """pytest in a real subprocess in `folder`, as `run` starts it, for what a fixture wider than one test
    makes once (pytester's folders are one test's)."""
    return subprocess.run([sys.executable, "-m", "pytest", *UNUSED_PLUGINS, "-p", "no:cacheprovider", *args],
                          cwd=folder, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


def descendants_of(pid: int) -> set[int]:
    """Every process below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            ppid = parent_of(int(entry.name))
            if ppid is not None:
                children.setdefault(ppid, []).append(int(entry.name))
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def kill_tree(pid: int) -> None:
    """SIGKILL a process and everything below it, as a lost machine ends them: a descendant that ended by itself
    meanwhile (a fenced child finishing its test) is passed over."""
    for each in [pid, *descendants_of(pid)]:
        try:
            os.kill(each, signal.SIGKILL)
        except ProcessLookupError:
            pass


def cmdline(pid: int) -> bytes:
    """A process's command line from /proc (empty once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def parent_of(pid: int) -> int | None:
    """A process's parent from /proc (None once it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def slot_is_free(run_name: str, index: int) -> bool:
    """Whether nobody holds slot `index` of a run's pool now (a lock taken and given back at once, through a file of
    its own)."""
    fd = os.open(os.path.join(pool_folder(run_name), f"slot-{index}"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def junit_outcomes(path: Path) -> dict[tuple[str, str], str]:
    """(classname, name) -> outcome of every test case of a JUnit file."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        out[(case.get("classname"), case.get("name"))] = kinds[0] if kinds else "passed"
    return out


@contextmanager
def on_cpus(cpus: set[int]):
    """pytest subprocesses started inside run on `cpus` only (they inherit this process's affinity)."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


# -- projects several test modules run ----------------------------------------------------------------------

BROKEN = {
    # wrong answer
    "900001": "a, b = map(int, input().split())\nprint(a - b)\n",
    # runtime error on every test
    "900002": "def reverse_words(s):\n    raise ValueError('nope')\n",
    # compile error
    "900003": "def broken(:\n    pass\n",
    # 900004: no file at all -> no code
    # timeout (with a short --apps-timeout): asleep, as a program waiting for input that never comes is (its own
    # time is its wall time, so it times out as a busy loop does, without taking a CPU from the suite's other tests)
    "900005": "import time\nwhile True:\n    time.sleep(60)\n",
}


@pytest.fixture
def broken_project(sample_project: pytest.Pytester) -> pytest.Pytester:
    folder = sample_project.path / "solutions"
    for pid, code in BROKEN.items():
        (folder / f"{pid}.py").write_text(code)
    (folder / "900004.py").unlink()
    return sample_project


def verdict_outline(report: dict) -> dict:
    """A report's verdicts, kinds and steps by problem, and its summary without the wall time: what two runs of the
    same programs must agree on (not times, memory, the machine's speed each run measured, how many verdicts it
    confirmed for that, or where files are)."""
    measured = ("wall_time", "speed_range", "speed_credited", "confirmations", "confirmations_changed")
    summary = {k: v for k, v in report["summary"].items() if k not in measured}
    problems = [
        {
            "id": p["id"],
            "verdict": p["verdict"],
            "tests_passed": p["tests_passed"],
            "tests_run": p["tests_run"],
            "kinds": [t["kind"] for t in p["tests"]],
            "steps": [t["step"] for t in p["tests"]],
        }
        for p in report["problems"]
    ]
    return {"summary": summary, "problems": problems}


PERMUTATION_ROW = {
    "problem_id": 910001, "difficulty": "introductory", "url": "", "starter_code": "", "solutions": "",
    "question": "Print any permutation of 1..n.",
    "input_output": json.dumps({"inputs": ["3\n", "4\n", "1\n"], "outputs": ["1 2 3\n", "1 2 3 4\n", "1\n"]}),
}
PERMUTATION_CHECKER = """
def check(input, expected, got):
    n = int(input)
    values = got.split()
    return sorted(values) == [str(i) for i in range(1, n + 1)] and len(values) == n, f"not a permutation: {got!r}"
"""


def permutation_project(pytester: pytest.Pytester, checker: str = PERMUTATION_CHECKER) -> list[str]:
    (pytester.path / "rows.jsonl").write_text(json.dumps(PERMUTATION_ROW) + "\n")
    (pytester.path / "cands").mkdir()
    (pytester.path / "cands" / "910001.py").write_text("n = int(input())\nprint(*range(n, 0, -1))\n")
    (pytester.path / "mine").mkdir()
    (pytester.path / "mine" / "910001.py").write_text(checker)
    return ["--apps-dataset", "rows.jsonl", "--apps-candidates", "cands", "--rootdir", str(pytester.path)]


def make_problem(pid: str = "1", tier: str = "interview", *, fmt: str = "stdin", fn_name: str | None = None, n: int = 1,
                 total: int | None = None, index: int | None = None, **fields) -> Problem:
    """A problem as the dataset layer makes one, with what a test names: `n` tests selected of `total` (all by
    default); its row index is its id's number unless given."""
    return Problem(id=pid, index=int(pid) if index is None else index, difficulty=tier, fmt=fmt, fn_name=fn_name,
                   n_cases=n, n_cases_total=n if total is None else total, **fields)
