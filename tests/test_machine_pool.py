"""One pool of executors per machine (`Evaluator(shared=True)`, `engine.machine`): real callers in several
processes, one real server found at its well-known path, started at the first score; the same verdicts as an
Evaluator's own executors; a server killed mid-batch replaced without a lost score; the server leaving once
idle. Each test has a pool folder of its own (``PYTEST_APPS_POOL_DIR``)."""

from __future__ import annotations

import json
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_apps import Evaluator, load_problems
from pytest_apps.engine.machine import pool_folder

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
SLOW = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\n"


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Any:
    folder = Path(tempfile.mkdtemp(prefix="ap-"))  # short: a unix socket's path holds 107 bytes at most
    monkeypatch.setenv("PYTEST_APPS_POOL_DIR", str(folder / "pool"))
    monkeypatch.setenv("PYTEST_APPS_POOL_IDLE", "2")  # the server leaves 2 s after its last caller
    yield folder / "pool"
    shutil.rmtree(folder, ignore_errors=True)


def work_of() -> list[tuple[Any, str | None]]:
    out: list[tuple[Any, str | None]] = []
    for p in load_problems("sample"):
        out += [(p, (SOLUTIONS / f"{p.id}.py").read_text()), (p, "print(42)\n"), (p, None)]
    return out


def light(results: list[Any]) -> list[tuple[Any, ...]]:
    return [(r.id, r.verdict, r.tests_passed, r.tests_run) for r in results]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


CALLER = """
import json, sys
from pathlib import Path
from pytest_apps import Evaluator, load_problems
out = []
for p in load_problems("sample"):
    out += [(p, (Path(sys.argv[1]) / f"{p.id}.py").read_text()), (p, "print(42)\\n"), (p, None)]
with Evaluator(timeout=1.0, shared=True, workers=2) as ev:
    verdicts = [(r.id, r.verdict, r.tests_passed, r.tests_run) for r in ev.score_many(out)]
    print(json.dumps({"pid": ev.cluster.ready()["pid"], "verdicts": verdicts}))
"""


def test_callers_in_several_processes_share_one_server_with_the_same_verdicts(pool: Path) -> None:
    work = work_of()
    with Evaluator(timeout=1.0, workers=2) as own:
        here = light(own.score_many(work))
    with Evaluator(timeout=1.0, shared=True, workers=2) as first, \
            Evaluator(timeout=1.0, shared=True, workers=2) as second:
        assert not any(pool.glob("*.sock"))  # started at the first score, not before
        assert light(first.score_many(work)) == here
        server = first.cluster.ready()["pid"]
        assert light(second.score_many(work)) == here and second.cluster.ready()["pid"] == server
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        other = subprocess.run([sys.executable, "-c", CALLER, str(SOLUTIONS)], capture_output=True, text=True,
                               env=env, timeout=300, check=True)
        answer = json.loads(other.stdout.strip().splitlines()[-1])
        assert answer["pid"] == server  # another process found the same server at its path
        assert [tuple(v) for v in answer["verdicts"]] == here
        assert first.cluster.ready()["executors"] == 2  # one pool, however many callers


def test_a_server_killed_mid_batch_is_replaced_and_every_program_is_scored(pool: Path) -> None:
    problem = next(p for p in load_problems("sample") if p.id == "900001")  # 5 tests: 1.5 s of CPU
    program = SLOW + (SOLUTIONS / "900001.py").read_text()
    with Evaluator(timeout=2.0, shared=True, workers=2) as ev:
        victim = ev.cluster.ready()["pid"]

        def kill() -> None:
            time.sleep(1.0)  # the first programs are running
            os.kill(victim, signal.SIGKILL)

        killer = threading.Thread(target=kill)
        killer.start()
        results = ev.score_batch([(problem, program)] * 4, budget=120)
        killer.join()
        assert [r.verdict if r else None for r in results] == ["pass"] * 4  # none lost, none scored 0
        assert ev.cluster.resent >= 1
        assert ev.cluster.ready()["pid"] != victim


def test_the_server_leaves_once_no_caller_is_connected(pool: Path) -> None:
    with Evaluator(timeout=1.0, shared=True, workers=1) as ev:
        ev.score_many(work_of()[:2])
        server = ev.cluster.ready()["pid"]
    until = time.monotonic() + 30
    while alive(server) and time.monotonic() < until:
        time.sleep(0.2)
    assert not alive(server) and not any(pool.glob("*.sock"))


def test_a_pool_folder_others_can_read_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "open"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    monkeypatch.setenv("PYTEST_APPS_POOL_DIR", str(folder))
    with pytest.raises(PermissionError, match="mode 0700"):
        pool_folder()
