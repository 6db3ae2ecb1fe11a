"""Time limits that measure the program, not the machine: the limit counts the program's own time (CPU plus
blocked, not time spent waiting for a CPU), so a busy machine or `-n 8` on two CPUs gives the verdicts a program
gets alone; a wall-clock backstop ends everything; the run's children share execution slots."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import pytest

from conftest import on_cpus, read_report, run, slot_is_free
from pytest_apps.core.outcome import RUN_EXITED, RUN_TIMEOUT
from pytest_apps.executor import Executor, Limits, Program
from pytest_apps.executor.clock import OwnClock, own_time, task_times
from pytest_apps.executor.machine import timing_figures
from pytest_apps.executor.slots import Slot, pool_folder, remove_pool
from pytest_apps.plugin.cpus import available_cpus, slot_of, xdist_workers

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {cpu}:\n    pass\nprint({out!r})\n"


# One after another on one xdist worker: each of these loads the machine on purpose (busy neighbours, -n 8
# runs), and two at once would measure each other rather than the harness.
pytestmark = pytest.mark.xdist_group("time-limits")


@pytest.fixture(autouse=True)
def own_time_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests check the own-time measure alone: their programs spin until they have used so much CPU time,
    whatever work a CPU second does, so the machine's measured slowdown (tests/test_speed.py) is pinned at none
    through the executor's documented seam (a pytester run started from a test inherits it)."""
    monkeypatch.setenv("PYTEST_APPS_SPEED_FACTOR", "1.0")


@contextmanager
def busy(cpus: set[int], count: int = 1):
    """`count` processes spinning on `cpus` beside the test (a CI neighbour, a second evaluation)."""
    code = f"import os\nos.sched_setaffinity(0, {sorted(cpus)!r})\nwhile True:\n    pass\n"
    # each in a session of its own: with autogroup scheduling, each then takes a share of the CPU of its own
    procs = [subprocess.Popen([sys.executable, "-c", code], start_new_session=True) for _ in range(count)]
    time.sleep(0.2)
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def two_cpus() -> set[int]:
    cpus = sorted(available_cpus())
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    return set(cpus[:2])


# -- the accounting, in the executor -----------------------------------------------------------------------


def test_own_time_is_wall_minus_the_wait_for_a_cpu_or_the_cpu_time_of_all_tasks():
    assert own_time(wall=3.0, delay=2.0, cpu=0.9) == 1.0  # waited 2 s for a CPU: not its time
    assert own_time(wall=3.0, delay=0.0, cpu=0.1) == 3.0  # blocked (sleeping, reading a pipe): its time
    assert own_time(wall=1.0, delay=0.2, cpu=2.0) == 2.0  # two busy threads: their CPU time


def test_a_sample_knows_a_program_that_is_runnable_from_one_that_is_blocked():
    """The kernel counts a wait for a CPU only once the task runs again, so a sample must tell a runnable
    program (running, or waiting for a CPU: not judged on a sample where it got no CPU) from a blocked one."""
    spinning = subprocess.Popen([sys.executable, "-c", "while True:\n    pass\n"])
    sleeping = subprocess.Popen([sys.executable, "-c", "import time\ntime.sleep(60)\n"])
    try:
        time.sleep(0.3)
        runnable: set[int] = set()
        task_times(spinning.pid, runnable)
        task_times(sleeping.pid, runnable)
        assert spinning.pid in runnable and sleeping.pid not in runnable
        for process, busy_now in ((spinning, True), (sleeping, False)):
            clock = OwnClock(process.pid)
            begun = time.monotonic()
            clock.start(begun)
            time.sleep(0.2)
            clock.sample(time.monotonic())
            time.sleep(0.2)
            clock.sample(time.monotonic())
            # (on a machine loaded far beyond its CPUs the spinning program may get little CPU in 0.4 s: sample on,
            # as the executor does, until it has had some)
            while busy_now and clock.cpu <= 0.05 and time.monotonic() - begun < 20:
                time.sleep(0.2)
                clock.sample(time.monotonic())
            assert (clock.cpu > 0.05) == busy_now
            elapsed = clock.previous - begun
            # running: a wait since it last ran may be uncounted, at most since the sample before the last one
            # at which it got a CPU (on a quiet machine, the one before last); blocked: every wait is counted
            assert (0.15 < clock.pending <= elapsed) if busy_now else clock.pending == 0.0
            assert clock.settled(elapsed) == max(elapsed - clock.delay - clock.pending, clock.cpu)
    finally:
        for process in (spinning, sleeping):
            process.kill()
            process.wait()


def _unused_pid() -> int:
    with open("/proc/sys/kernel/pid_max") as f:
        return int(f.read())  # (pids are below it: no process has it)


MS = 1_000_000  # nanoseconds


def test_a_wait_the_kernel_counts_while_the_program_slept_is_not_taken_off_its_time():
    """Seen on Linux 6.18 under a load of 10, about one run in a hundred: a program sleeping 0.3 s came back with
    305 ms added to its task's run-queue wait over a 302 ms run, and its own time read 0.001 s. A task seen blocked
    at a sample cannot have waited for a CPU since, beyond the time that has passed less what it ran: a reading
    that adds more is not the program's wait and none of it is taken off. The kernel's readings are fed to the
    clock here as the executor's samples take them (`take`), since that state of the kernel cannot be made at will."""
    pid = _unused_pid()
    clock = OwnClock(pid)
    clock.start(100.0)  # (no such process: the leader's figures at the start are zeros)
    clock.take({pid: (1 * MS, 0)}, set(), 100.1, 100.1)  # asleep at both samples
    clock.take({pid: (1 * MS, 0)}, set(), 100.2, 100.2)
    clock.take({pid: (2 * MS, 305 * MS)}, None, 100.302, 100.302)  # its last figures, once it has exited
    assert clock.delay == 0.0 and clock.own(0.302) == pytest.approx(0.302)
    # with no sample in between (a shorter run), what is taken off is at most the run less its CPU time
    short = OwnClock(pid)
    short.start(100.0)
    short.take({pid: (2 * MS, 100 * MS)}, None, 100.09, 100.09)
    assert short.delay == pytest.approx(0.088)
    # a real wait is taken off: after a wake-up (seen asleep at 0.2 s, 80 ms of wait in the last 102 ms) ...
    woken = OwnClock(pid)
    woken.start(100.0)
    woken.take({pid: (1 * MS, 0)}, set(), 100.2, 100.2)
    woken.take({pid: (3 * MS, 80 * MS)}, None, 100.302, 100.302)
    assert woken.delay == pytest.approx(0.08) and woken.own(0.302) == pytest.approx(0.222)
    # ... and while it stays runnable (a CPU-bound program sharing its CPU with a neighbour: half of each interval)
    busy_clock = OwnClock(pid)
    busy_clock.start(100.0)
    for k in range(1, 6):
        busy_clock.take({pid: (50 * k * MS, 50 * k * MS)}, {pid}, 100 + 0.1 * k, 100 + 0.1 * k)
    assert busy_clock.delay == pytest.approx(0.25, abs=1e-6) and busy_clock.own(0.5) == pytest.approx(0.25, abs=1e-6)
    # a thread seen for the first time: its figures are its own since it began, after the sample before
    busy_clock.take({pid: (300 * MS, 300 * MS), pid + 1: (40 * MS, 20 * MS)}, {pid, pid + 1}, 100.6, 100.6)
    assert busy_clock.delay == pytest.approx(0.3, abs=1e-6) and busy_clock.cpu == pytest.approx(0.34)


def test_a_busy_neighbour_on_the_same_cpu_does_not_cost_the_program_its_verdict():
    cpu = min(available_cpus())
    # a far backstop: what is checked is the program's own time; whatever else shares a loaded machine can take
    # the program's share below a tenth of a CPU, and then the wall-clock stop comes first (confirmed, as its
    # own tests show: tests/test_confirm.py)
    with Executor(Limits(timeout=1.0, backstop=60), cpu=cpu) as ex, busy({cpu}, count=2):
        o = ex.run_stdin(Program(BURN.format(cpu=0.6, out="ok")), "")
        assert (o.status, o.stdout) == (RUN_EXITED, "ok\n"), o
        assert o.wall_time > 1.0 > o.own_time >= 0.6  # a third of the CPU: the wall clock alone would time out
        # the same holds for work in a thread (a deep recursion with a big stack, as competitive programs do)
        threaded = ("import threading, time\ndef work():\n    t = time.process_time()\n"
                    "    while time.process_time() - t < 0.6:\n        pass\n    print('ok')\n"
                    "th = threading.Thread(target=work)\nth.start()\nth.join()\n")
        o = ex.run_stdin(Program(threaded), "")
        assert (o.status, o.stdout) == (RUN_EXITED, "ok\n"), o
        assert o.wall_time > 1.0 > o.own_time


def test_a_program_over_its_limit_times_out_alone_and_beside_a_neighbour():
    cpu = min(available_cpus())
    # a far backstop: what is checked is the program's own time, not the wall-clock stop a loaded machine
    # (the neighbours here and whatever else shares it) can reach first (that stop has tests of its own)
    with Executor(Limits(timeout=0.5, backstop=60), cpu=cpu) as ex:
        for neighbours in (0, 2):
            with busy({cpu}, count=neighbours) if neighbours else _nothing():
                stolen = steal(cpu)
                near = ex.run_stdin(Program(BURN.format(cpu=0.53, out="late")), "")
                # ended in the band (on a virtual machine, time the hypervisor took while it ran counts too; and,
                # as below, a little later when the executor's own wake-up waits for the CPU)
                assert near.status == RUN_TIMEOUT and 0.5 <= near.own_time < 0.7 + steal(cpu) - stolen, near
                far = ex.run_stdin(Program(BURN.format(cpu=5, out="never")), "")
                # stopped at the band's end (a little later when the machine is so busy that the executor's own
                # wake-up waits for the CPU too)
                assert far.status == RUN_TIMEOUT and 0.575 <= far.own_time < 1.0, far
                assert far.stdout == ""


def steal(cpu: int) -> float:
    """Seconds the hypervisor has taken from `cpu` so far (/proc/stat's steal column; 0 on bare metal)."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{cpu} "):
                fields = line.split()
                return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0
    return 0.0


@contextmanager
def _nothing():
    yield


@pytest.mark.parametrize("src", [
    "import time\ntime.sleep(30)\nprint(3)\n",  # sleeps past the limit, then would print the right answer
    "while True:\n    pass\n",
    "import os, time\nif os.fork() == 0:\n    time.sleep(60)\n    os._exit(0)\nos.wait()\n",  # waits on a child
    "import os\nr, w = os.pipe()\nos.read(r, 1)\n",  # blocked reading a pipe of its own
], ids=["sleep-past-limit", "infinite-loop", "forks-a-sleeping-child", "blocked-on-its-own-pipe"])
def test_what_never_ends_is_stopped_and_leaves_nothing_behind(src):
    with Executor(Limits(timeout=0.5)) as ex:
        started = time.monotonic()
        o = ex.run_stdin(Program(src), "")
        assert o.status == RUN_TIMEOUT and o.own_time >= 0.5, o
        assert time.monotonic() - started < ex.limits.wall_backstop + 2
        assert o.stdout == ""
        stats = ex._stats()  # a round trip: the server has cleaned up after the run
        assert _descendants(stats["pid"]) <= _spares(stats["zygote"]) | {stats["zygote"]}


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as f:
            out |= {int(x) for x in f.read().split()}
    return out


def _descendants(pid: int) -> set[int]:
    seen, stack = set(), list(_children(pid))
    while stack:
        p = stack.pop()
        if p not in seen:
            seen.add(p)
            try:
                stack.extend(_children(p))
            except OSError:
                pass
    return seen


def _spares(zygote: int) -> set[int]:
    """The zygote's idle children waiting for the next tests (they have none of their own)."""
    spares = _children(zygote)
    assert all(not _children(k) for k in spares if os.path.exists(f"/proc/{k}"))
    return spares


def test_the_wall_clock_backstop_ends_what_the_accounting_cannot_see():
    """A program that hardly gets a CPU (it lowers its own priority beside many busy neighbours) has little own
    time; the wall-clock backstop (a multiple of the limit) still ends it, as a timeout."""
    cpu = min(available_cpus())
    src = "import os\nos.nice(19)\nwhile True:\n    pass\n"
    with Executor(Limits(timeout=0.5), cpu=cpu) as ex, busy({cpu}, count=24):
        o = ex.run_stdin(Program(src), "")
    assert o.status == RUN_TIMEOUT and "backstop" in o.error, o
    assert ex.limits.wall_backstop <= o.wall_time < ex.limits.wall_backstop + 1.5
    assert o.own_time < 0.575


# -- execution slots -----------------------------------------------------------------------------------------


def test_workers_sharing_a_slot_take_turns_and_the_pool_goes_away():
    run_name = f"test-{os.getpid()}"
    first, second, other = Slot(run_name, 0, 2), Slot(run_name, 2, 2), Slot(run_name, 1, 2)
    try:
        assert (first.index, second.index, other.index) == (0, 0, 1)
        with first:
            with other:  # another slot of the pool: free
                assert other.waited == 0.0
            waiter = threading.Thread(target=lambda: second.__enter__())
            waiter.start()
            time.sleep(0.3)
            assert waiter.is_alive()  # the same slot: waits
        waiter.join(5)
        assert not waiter.is_alive() and second.waited >= 0.25
        second.__exit__()
    finally:
        for slot in (first, second, other):
            slot.close()
        remove_pool(run_name)
    assert not os.path.exists(pool_folder(run_name))


def test_slots_follow_the_workers_as_pinning_does():
    assert [slot_of(f"gw{k}", {0, 1}) for k in range(4)] == [(0, 2), (1, 2), (0, 2), (1, 2)]
    assert slot_of("gw3", {5}) == (0, 1)
    assert slot_of("mygateway", {0, 1})[1] == 2
    assert xdist_workers("loadscope", ["popen"] * 8) == 8
    assert xdist_workers("loadscope", ["2*ssh=host", "popen"]) == 3
    assert xdist_workers("no", []) == 1 and xdist_workers(None, None) == 1
    assert [timing_figures(4, 0.15, 10, 2, n, None)["children_at_once"] for n in (1, 2, 8)] == [1, 2, 2]


def test_the_executor_holds_its_slot_while_the_program_runs():
    run_name = f"test-held-{os.getpid()}"
    mine, theirs = Slot(run_name, 0, 1), Slot(run_name, 1, 1)
    try:
        with Executor(Limits(timeout=2.0), slot=mine) as ex:
            ex.run_stdin(Program("print(1)"), "")  # the server is warm
            done = []
            runner = threading.Thread(target=lambda: done.append(ex.run_stdin(Program(BURN.format(cpu=0.5, out=1)), "")))
            started = time.monotonic()
            runner.start()
            while slot_is_free(run_name, 0):  # until the executor holds it (a busy machine may take a while)
                assert time.monotonic() - started < 10, "the executor never took its slot"
                time.sleep(0.01)
            with theirs:  # the only slot: free only once the program has ended
                acquired = time.monotonic()
            runner.join(10)
            assert done and done[0].status == RUN_EXITED
            # the slot was held for the whole program: half a second of CPU, so at least that much wall time
            assert acquired - started >= 0.5 and theirs.waited > 0.0
    finally:
        mine.close()
        theirs.close()
        remove_pool(run_name)


# -- end to end: the same verdicts at any -n and beside busy neighbours ---------------------------------------


@pytest.fixture
def cpu_bound_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """One stdin problem with 2 tests and 4 samples of a correct program that needs 0.4 s of CPU per test,
    under a 1 s limit (40% of it): 8 tests, enough to keep 4 workers busy."""
    row = {"problem_id": 1, "question": "Print the sum of two integers.", "solutions": "", "difficulty": "interview",
           "url": "", "starter_code": "",
           "input_output": json.dumps({"inputs": ["1 2\n", "3 4\n"], "outputs": ["3\n", "7\n"]})}
    (pytester.path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    program = ("import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4:\n    pass\n"
               "a, b = map(int, input().split())\nprint(a + b)\n")
    for k in range(4):
        (pytester.path / "cands" / "1").mkdir(parents=True, exist_ok=True)
        (pytester.path / "cands" / "1" / f"s{k}.py").write_text(program)
    return pytester


@pytest.mark.parametrize("workers, neighbours", [("1", 0), ("4", 0), ("2", 6)],
                         ids=["n1", "n4", "n2-beside-six-busy-processes"])
def test_a_cpu_bound_correct_program_passes_at_any_n_and_under_load(cpu_bound_project: pytest.Pytester,
                                                                   workers, neighbours):
    two = two_cpus()
    with on_cpus(two), (busy(two, neighbours) if neighbours else _nothing()):
        result = run(cpu_bound_project, "--apps-dataset", "rows.jsonl", "--apps-candidates", "cands",
                     "--apps-timeout", "1", "-n", workers)
    result.assert_outcomes(passed=8)
    report = read_report(cpu_bound_project)
    assert report["summary"]["strict_accuracy"] == 1.0
    assert report["machine"]["cpus"] == 2 and report["machine"]["children_at_once"] == min(int(workers), 2)
    times = [t for p in report["problems"] for t in p["tests"]]
    assert all(0.4 <= t["time"] < 0.85 and t["cpu_time"] >= 0.4 and not t["borderline"] for t in times), times
    if neighbours:
        # each program had about a quarter of a CPU: the wall clock alone would have failed them
        assert max(t["wall_time"] for t in times) > 1.0


def test_a_program_sleeping_past_the_limit_times_out_at_any_n(pytester: pytest.Pytester):
    row = {"problem_id": 1, "question": "Print 3.", "solutions": "", "difficulty": "interview", "url": "",
           "starter_code": "", "input_output": json.dumps({"inputs": ["\n"] * 2, "outputs": ["3\n"] * 2})}
    (pytester.path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    (pytester.path / "cands").mkdir()
    # the right answer, printed after 1.08 s of sleep under a 1 s limit: a timeout, and a near miss
    (pytester.path / "cands" / "1.py").write_text("import time\ntime.sleep(1.08)\nprint(3)\n")
    for workers in ("1", "4"):  # one worker, and more workers than CPUs
        result = run(pytester, "--apps-dataset", "rows.jsonl", "--apps-candidates", "cands", "--apps-timeout", "1",
                     "-n", workers)
        result.assert_outcomes(failed=2)
        tests = read_report(pytester)["problems"][0]["tests"]
        assert [t["kind"] for t in tests] == ["timeout", "timeout"]
        assert all(t["borderline"] and 1.0 <= t["time"] < 1.15 for t in tests), tests  # a near miss, flagged
        assert "2 verdicts within 15% of the time limit" in result.stdout.str()


def test_timeout_scale_multiplies_the_limit_and_is_recorded(pytester: pytest.Pytester):
    row = {"problem_id": 1, "question": "Print 3.", "solutions": "", "difficulty": "interview", "url": "",
           "starter_code": "", "input_output": json.dumps({"inputs": ["\n"], "outputs": ["3\n"]})}
    (pytester.path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    (pytester.path / "cands").mkdir()
    (pytester.path / "cands" / "1.py").write_text(BURN.format(cpu=0.7, out=3))
    args = ["--apps-dataset", "rows.jsonl", "--apps-candidates", "cands", "--apps-timeout", "0.5"]
    run(pytester, *args).assert_outcomes(failed=1)
    result = run(pytester, *args, "--apps-timeout-scale", "2")
    result.assert_outcomes(passed=1)
    report = read_report(pytester)
    assert report["settings"]["timeout_scale"] == 2.0 and report["machine"]["time_limit"] == 1.0
    assert report["machine"]["speed"] > 0
    result.stdout.fnmatch_lines(["apps: time limit 1 s (0.5 s x 2) of each program's own time*machine speed * ms"])
    bad = run(pytester, *args, "--apps-timeout-scale", "0")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--apps-timeout-scale: 0.0 must be more than 0" in bad.stderr.str()
