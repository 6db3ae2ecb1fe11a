"""Parking a running test (executor/parking.py, `Executor.park`, and the sandbox server's pool that uses it), with
real executors and real programs: a parked program's own time stops, so its verdict is the one it gets unparked,
however long it is parked; a program that uses no CPU is not parked; the server resumes a test by itself after the
wall-clock backstop; a parked test killed with its client leaves nothing behind. (The sandbox server's use of it:
tests/test_serve.py.)"""

from __future__ import annotations

import os
import threading
import time

import pytest

from pytest_apps.executor import Executor, Limits, Program

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\nprint('done')\n"


@pytest.fixture
def executor():
    ex = Executor(Limits(timeout=1.0, backstop=10))
    if "cgroup-per-test" not in ex.isolation():
        ex.close()
        pytest.skip("parking freezes the test's cgroup: none here (not root, no delegated cgroup)")
    yield ex
    ex.close()


def parked_for(ex: Executor, program: Program, after: float, hold: float | None) -> tuple:
    """Run `program`, parked `after` seconds in for `hold` seconds (None: never resumed); (outcome, asked)."""
    asked: list[bool] = []

    def parker() -> None:
        time.sleep(after)
        asked.append(ex.park())
        if hold is not None:
            time.sleep(hold)
            ex.resume()

    thread = threading.Thread(target=parker)
    thread.start()
    out = ex.run_stdin(program, "")
    thread.join()
    return out, asked[0]


def test_a_parked_program_keeps_its_verdict_however_long_it_is_parked(executor):
    out, asked = parked_for(executor, Program(BURN.format(s=0.7)), after=0.3, hold=2.0)
    assert asked and out.status == "exited" and out.stdout == "done\n"
    assert out.wall_time > 2.5  # it was parked: the wall clock went on
    assert 0.65 < out.cpu_time < 0.9 and out.own_time < 1.0  # its own time did not: within its 1 s limit
    over, _ = parked_for(executor, Program(BURN.format(s=5)), after=0.3, hold=1.5)
    assert over.status == "timeout" and 1.0 <= over.own_time < 1.4  # a program over its limit still is
    assert over.wall_time > 2.5


def test_a_test_parked_and_never_resumed_runs_again_after_the_backstop(executor):
    with executor.limited(Limits(timeout=0.4, backstop=5)):  # a backstop of 2 s
        start = time.monotonic()
        out, asked = parked_for(executor, Program(BURN.format(s=0.3)), after=0.15, hold=None)
    assert asked and out.status == "exited" and out.stdout == "done\n" and out.own_time < 0.4
    assert 2.0 <= time.monotonic() - start < 8  # resumed by its server, not stopped by the backstop


def test_a_program_that_uses_no_cpu_is_not_parked(executor):
    """Frozen while it sleeps, its sleep would end unseen: the server declines, and it ends when it would."""
    out, asked = parked_for(executor, Program("import time\ntime.sleep(1.3)\nprint('late')\n"), after=0.3, hold=2.0)
    assert asked  # (asked: the server declines)
    assert out.status == "timeout" and out.own_time >= 1.0 and out.wall_time < 2.0


def test_a_program_with_less_own_time_than_asked_is_not_parked_and_the_caller_is_told(executor):
    answers: list[tuple[str, bool]] = []

    def parker() -> None:
        time.sleep(0.2)  # at most 0.2 s of its own time: under half its limit
        assert executor.park(0.5, lambda parked: answers.append((threading.current_thread().name, parked)))
        while not answers:
            time.sleep(0.01)
        assert executor.resume() is False  # (not parked)
        while not answers[-1][1]:  # asked again until its own time has reached half its limit
            time.sleep(0.1)
            asked = len(answers)
            if not executor.park(0.5, lambda parked: answers.append(("again", parked))):
                return  # (it ended first)
            while len(answers) == asked:
                time.sleep(0.01)
        time.sleep(0.5)
        executor.resume()

    thread = threading.Thread(target=parker)
    thread.start()
    out = executor.run_stdin(Program(BURN.format(s=0.9)), "")
    thread.join()
    assert answers[0] == (threading.current_thread().name, False)  # (told in the run's thread)
    assert answers[-1] == ("again", True)
    assert out.status == "exited" and out.own_time < 1.0 and out.wall_time > out.own_time + 0.4


def test_park_and_resume_without_a_running_test_do_nothing(executor):
    assert executor.park() is False and executor.resume() is False
    assert executor.run_stdin(Program("print(1)"), "").stdout == "1\n"


def parked_with_a_child(ex: Executor) -> tuple[str, threading.Thread]:
    """A test that started a busy child, parked: (the marker in the child's command line, the run's thread)."""
    marker = f"parked-{os.getpid()}-{time.monotonic_ns()}"
    program = Program(f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', "
                      f"'import time\\nwhile 1: pass', '{marker}'])\n" + BURN.format(s=30))
    thread = threading.Thread(target=lambda: ex.run_stdin(program, ""))
    thread.start()
    time.sleep(0.6)
    assert ex.park()
    time.sleep(0.3)
    return marker, thread


def alive(marker: str) -> list[str]:
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    left.append(pid)
        except OSError:
            pass
    return left


def test_a_parked_test_whose_client_goes_away_leaves_nothing_behind(executor):
    marker, thread = parked_with_a_child(executor)
    executor.close()  # its server sees the end of its pipe while the test is frozen
    thread.join(30)
    time.sleep(0.5)
    assert alive(marker) == []


def test_a_parked_test_whose_server_is_killed_is_gone_once_another_server_starts(executor):
    """A frozen process dies of SIGKILL only once thawed (cgroup v1): a server killed while its test was parked
    cannot thaw it, and the next server's start empties the groups of servers that are gone (cgroups.py)."""
    marker, thread = parked_with_a_child(executor)
    os.kill(executor._server_pid(), 9)
    thread.join(30)
    other = Executor(Limits(timeout=1.0))
    try:
        assert "cgroup-per-test" in other.isolation()
        deadline = time.monotonic() + 10
        while alive(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert alive(marker) == []
    finally:
        other.close()
