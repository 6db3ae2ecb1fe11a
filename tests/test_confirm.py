"""Confirmation: a timeout or near-limit verdict met while the machine was measured slower than quiet runs again,
alone on the machine, before it is final; on a quiet machine nothing is run twice. Slow spells cannot be made on
demand, so the measured slowdown is pinned through the executor's seam (PYTEST_APPS_SPEED_FACTOR), and the spell
the probe missed is a real stall of the program's process (SIGSTOP from outside, as a hypervisor taking the CPU:
its own time grows, its CPU time does not)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from contextlib import contextmanager

import pytest

from conftest import slot_is_free
from pytest_apps.executor.slots import Slot, remove_pool

pytestmark = pytest.mark.xdist_group("time-limits")  # they load the machine on purpose, like test_time_limits


# -- holding the whole pool ------------------------------------------------------------------------------------


def test_a_slot_can_hold_the_whole_pool_and_waits_for_every_slot_in_use():
    run_name = f"test-whole-{os.getpid()}"
    mine, theirs = Slot(run_name, 0, 2), Slot(run_name, 1, 2)
    got, release, seen = threading.Event(), threading.Event(), []

    def alone() -> None:
        with mine.whole():
            got.set()
            with mine:  # its own run inside: takes nothing more, gives nothing back
                pass
            seen.append(slot_is_free(run_name, 0) or slot_is_free(run_name, 1))
            release.wait(5)

    try:
        with theirs:  # another worker's program runs: the whole pool waits for it
            holder = threading.Thread(target=alone)
            holder.start()
            time.sleep(0.3)
            assert not got.is_set()
        assert got.wait(5)
        assert not slot_is_free(run_name, 0) and not slot_is_free(run_name, 1)
        release.set()
        holder.join(5)
        assert seen == [False]
        assert slot_is_free(run_name, 0) and slot_is_free(run_name, 1)  # all given back
    finally:
        release.set()
        mine.close()
        theirs.close()
        remove_pool(run_name)


def test_two_workers_holding_the_whole_pool_at_once_take_turns_without_deadlock():
    run_name = f"test-turns-{os.getpid()}"
    slots = [Slot(run_name, k, 2) for k in range(2)]
    held: list[tuple[int, float, float]] = []

    def confirm(k: int) -> None:
        for _ in range(5):
            with slots[k].whole():
                started = time.monotonic()
                time.sleep(0.02)
                held.append((k, started, time.monotonic()))

    remove_pool(run_name)  # a worker that ended first removes the pool's folder: the others go on with it
    try:
        workers = [threading.Thread(target=confirm, args=(k,)) for k in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(20)
        assert not any(w.is_alive() for w in workers), "deadlock"
        spans = sorted((s, e) for _, s, e in held)
        assert len(spans) == 10 and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # never both at once
    finally:
        for slot in slots:
            slot.close()
        remove_pool(run_name)


# -- which verdicts ---------------------------------------------------------------------------------------------


def test_only_a_near_limit_verdict_or_an_undercredited_timeout_met_while_the_machine_was_measured_slower_is_confirmed():
    from pytest_apps.core.outcome import SpeedCredit
    from pytest_apps.core.record import CaseRecord
    from pytest_apps.engine.confirm import needs_confirmation
    from pytest_apps.executor.speed import CONFIDENT

    def rec(kind: str, low: float = 0.0, high: float = 0.0, borderline: bool = False,
            mean: float | None = None, undercredited: bool = False, starved: bool = False) -> CaseRecord:
        return CaseRecord("7", 0, kind, borderline=borderline, undercredited=undercredited, starved=starved,
                          speed=SpeedCredit(1.0, low, high, high if mean is None else mean))

    slow = CONFIDENT + 0.01
    # a timeout the mean slowdown around it would have brought within the limit (engine/limits.py)
    assert needs_confirmation(rec("timeout", 1.0, 1.8, mean=slow, undercredited=True))
    assert needs_confirmation(rec("pass", slow, slow, borderline=True))
    assert needs_confirmation(rec("wrong_answer", 1.0, 1.6, borderline=True, mean=1.3))
    # a clear timeout: over the limit even at the mean slowdown measured around it (a steady slow machine)
    assert not needs_confirmation(rec("timeout", 1.6, 1.6))
    # on a quiet machine (within the probe's noise) or unmeasured: the verdict is final, as it ran
    assert not needs_confirmation(rec("timeout", 1.0, CONFIDENT - 0.01, undercredited=True))
    assert not needs_confirmation(rec("timeout"))
    assert not needs_confirmation(rec("pass", 1.0, 1.0, borderline=True))
    # a brief spike among quiet probes: the machine was not slower on average around the test
    assert not needs_confirmation(rec("timeout", 1.0, 1.9, mean=CONFIDENT - 0.01))
    assert not needs_confirmation(rec("pass", 1.0, 1.9, borderline=True, mean=1.1))
    # a timeout the wall-clock backstop ended under the limit: confirmed whatever the probe saw (it sees no queueing)
    assert needs_confirmation(rec("timeout", starved=True))
    assert needs_confirmation(rec("timeout", 1.0, 1.0, starved=True))
    # a verdict far from the limit is final whatever the machine did
    assert not needs_confirmation(rec("pass", 1.6, 1.6)) and not needs_confirmation(rec("wrong_answer", 1.6, 1.6))


# -- a slow spell the probe missed: the program's process stalled from outside ---------------------------------

BURN = "import time\nt = time.thread_time()\nwhile time.thread_time() - t < {cpu}:\n    pass\nprint('done')\n"
ENDLESS = "while True:\n    pass\n"


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _is_server(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"pytest_apps/executor/serve.py" in f.read()
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


def programs_below(root: int) -> dict[int, float]:
    """Candidate programs running below process `root` (this test's own runs, never another's on the machine):
    the children of an executor's zygote, and theirs: pid -> CPU seconds."""
    found: dict[int, float] = {}
    stack = [(root, 0)]  # (pid, how many executor processes above it and itself: server 1, zygote 2, child 3)
    while stack:
        pid, depth = stack.pop()
        depth = depth + 1 if _is_server(pid) else 0
        if depth >= 3:
            stat = _stat(pid)
            if stat is not None:
                found[pid] = stat[1]
        stack.extend((child, depth) for child in _children(pid))
    return found


class Watch:
    """What `stalls` saw: the pids it stalled, and each sweep's CPU seconds of every program then running."""

    def __init__(self) -> None:
        self.stalled: list[int] = []
        self.sweeps: list[dict[int, float]] = []

    def busy_together(self, pid: int) -> int:
        """In how many sweeps `pid` and another program both used CPU since the sweep before."""
        both = 0
        for before, now in zip(self.sweeps, self.sweeps[1:]):
            grew = {p for p, cpu in now.items() if cpu > before.get(p, cpu)}
            both += pid in grew and len(grew) > 1
        return both


@contextmanager
def stalls(count: int, seconds: float = 2.5, after_cpu: float = 0.2):
    """Stall (SIGSTOP, then SIGCONT `seconds` later) each of the first `count` candidate programs of this test's
    runs seen busy (with `after_cpu` seconds of CPU): a slow spell that the machine-speed probe around the test
    does not see, as a hypervisor taking the CPU. Yields a `Watch`."""
    watch = Watch()
    done = threading.Event()

    resume: dict[int, float] = {}  # stalled pid -> when it goes on

    def signal_to(pid: int, sig: int) -> None:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass

    def sweep() -> None:
        while not done.is_set():
            programs = programs_below(os.getpid())
            watch.sweeps.append(programs)
            for pid, cpu in programs.items():
                if len(watch.stalled) < count and pid not in watch.stalled and cpu >= after_cpu:
                    watch.stalled.append(pid)
                    signal_to(pid, signal.SIGSTOP)
                    resume[pid] = time.monotonic() + seconds
            for pid, when in list(resume.items()):
                if time.monotonic() >= when:
                    signal_to(pid, signal.SIGCONT)
                    del resume[pid]
            done.wait(0.02)
        for pid in resume:
            signal_to(pid, signal.SIGCONT)

    watcher = threading.Thread(target=sweep, daemon=True)
    watcher.start()
    try:
        yield watch
    finally:
        done.set()
        watcher.join(10)


# -- end to end: the plugin at -n 2 --------------------------------------------------------------------------


def _plugin_run(pytester: pytest.Pytester, programs: dict[int, str], *args: str,
                cases: dict[int, int] | None = None) -> tuple[pytest.RunResult, dict]:
    from conftest import read_report, run

    n = cases or {}
    rows = [{"problem_id": pid, "question": "Print done.", "solutions": "", "difficulty": "interview", "url": "",
             "starter_code": "", "input_output": json.dumps({"inputs": ["\n"] * n.get(pid, 1),
                                                             "outputs": ["done\n"] * n.get(pid, 1)})}
            for pid in programs]
    (pytester.path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (pytester.path / "cands").mkdir()
    for pid, source in programs.items():
        (pytester.path / "cands" / f"{pid}.py").write_text(source)
    result = run(pytester, "--apps-dataset", "rows.jsonl", "--apps-candidates", "cands", "--apps-timeout", "1",
                 "--apps-markdown", "report.md", "--apps-html", "report.html", *args)
    return result, read_report(pytester)


def _tests(report: dict) -> dict[str, list[tuple[str, str | None]]]:
    return {p["id"]: [(t["kind"], t["confirmed"]) for t in p["tests"]] for p in report["problems"]}


# The probes around a test read the seam's list in turn: x1.0 first, then x2.0. Its own time is charged at the
# smallest (x1.0, no credit); on average the machine was about x1.7 slower around it: a slow spell that came and
# went between the probes, as far as the credit knows.
SPELL = "1.0,2.0"


def test_the_plugin_confirms_a_near_limit_timeout_of_a_slow_spell_alone_and_it_becomes_a_pass(
        pytester: pytest.Pytester, monkeypatch):
    """The near-limit program (0.9 s of CPU) was stalled in its first run after 0.6 s of it: a timeout, stopped
    with about 0.55 s blocked, which the mean slowdown measured around it (x1.5 or more: its CPU time 0.6 s is
    0.4 s or less at that speed) would have brought within the limit: confirmed by a run that is a pass."""
    monkeypatch.setenv("PYTEST_APPS_SPEED_FACTOR", SPELL)
    short = BURN.format(cpu=0.2)  # the other worker's: tests of 0.2 s of CPU, one after another
    with stalls(1, after_cpu=0.6) as watch:  # (the short ones never get there)
        result, report = _plugin_run(pytester, {1: BURN.format(cpu=0.9), 2: short}, "-n", "2",
                                     cases={2: 12})
    assert len(watch.stalled) == 1
    assert _tests(report) == {"1": [("pass", "timeout")], "2": [("pass", None)] * 12}, report["problems"][0]["tests"]
    # the confirmation (the program that used more CPU than the short ones, after the stalled run) ran alone
    (confirmation,) = {pid for sweep in watch.sweeps for pid, cpu in sweep.items()
                       if cpu > 0.6 and pid not in watch.stalled}
    assert watch.busy_together(confirmation) <= 1  # (a sweep may straddle the hand-over)
    assert report["summary"]["confirmations"] == 1 and report["summary"]["confirmations_changed"] == 1
    result.assert_outcomes(passed=13)
    out = result.stdout.str()
    assert "1 timeout or near-limit verdict confirmed by a second run" in out and "(1 changed)" in out
    for name in ("report.md", "report.html"):
        assert "confirmed by a second run" in (pytester.path / name).read_text(), name


def test_the_plugin_confirms_a_timeout_the_mean_slowdown_could_explain_and_a_clear_one_stays_one(
        pytester: pytest.Pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_APPS_SPEED_FACTOR", SPELL)
    result, report = _plugin_run(pytester, {1: ENDLESS, 2: BURN.format(cpu=0.1)}, "-n", "2")
    assert _tests(report) == {"1": [("timeout", "timeout")], "2": [("pass", None)]}, result.stdout.str()
    assert report["summary"]["confirmations"] == 1 and report["summary"]["confirmations_changed"] == 0
    result.assert_outcomes(passed=1, failed=1)


def test_on_a_steadily_slow_machine_the_plugin_credits_and_runs_no_clear_timeout_twice(
        pytester: pytest.Pytester, monkeypatch):
    """Every probe read x1.6: the program of 1.3 s of CPU is charged 0.81 s and passes; the endless one, over the
    limit charged at the speed every probe saw, is a clear timeout, final as it ran, with no second run."""
    monkeypatch.setenv("PYTEST_APPS_SPEED_FACTOR", "1.6")
    result, report = _plugin_run(pytester, {1: ENDLESS, 2: BURN.format(cpu=1.3)}, "-n", "2")
    assert _tests(report) == {"1": [("timeout", None)], "2": [("pass", None)]}, result.stdout.str()
    assert [t["speed_factor"] for p in report["problems"] for t in p["tests"]] == [1.6, 1.6]
    assert report["summary"]["confirmations"] == 0
    assert "confirmed by a second run" not in result.stdout.str()
    result.assert_outcomes(passed=1, failed=1)


def test_the_plugin_does_not_confirm_a_timeout_that_met_a_brief_spike_among_quiet_probes(
        pytester: pytest.Pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_APPS_SPEED_FACTOR", "1.4,1.0")  # one probe x1.4, then quiet (the seam's list)
    result, report = _plugin_run(pytester, {1: ENDLESS, 2: BURN.format(cpu=0.1)}, "-n", "2")
    assert _tests(report) == {"1": [("timeout", None)], "2": [("pass", None)]}, result.stdout.str()
    (spiked,) = report["problems"][0]["tests"]
    assert spiked["speed_range"] == [1.0, 1.4] and spiked["speed_mean"] < 1.14
    assert report["summary"]["confirmations"] == 0 and report["summary"]["speed_range"] == [1.0, 1.4]
    assert "confirmed by a second run" not in result.stdout.str()


def test_on_a_quiet_machine_the_plugin_confirms_nothing_and_a_near_limit_timeout_stays_one(
        pytester: pytest.Pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_APPS_SPEED_FACTOR", "1.0")
    result, report = _plugin_run(pytester, {1: BURN.format(cpu=1.2), 2: ENDLESS}, "-n", "2")
    assert _tests(report) == {"1": [("timeout", None)], "2": [("timeout", None)]}, result.stdout.str()
    assert report["summary"]["confirmations"] == 0
    assert "confirmed by a second run" not in result.stdout.str()


# -- a program the wall-clock backstop ended under its limit: starved by the machine ---------------------------


def test_a_program_starved_of_a_cpu_until_the_backstop_is_confirmed_and_passes_once_the_machine_has_room(
        monkeypatch):
    """24 processes the run does not own spin on the program's CPU: the program (0.25 s of CPU, its limit 0.5 s)
    gets a 25th of it, and the wall-clock backstop (3 s) ends it at about 0.12 s of its own time: a timeout by the
    machine, not by the program (`starved`), which the probe cannot see (each CPU second did its
    full work). It is confirmed, whatever the probe says, once the neighbours are gone: a pass. A program that
    spins for ever is a timeout by its own time, not starved, and is not run again."""
    from test_time_limits import busy

    from conftest import make_problem
    from pytest_apps.candidates.sources import Candidate
    from pytest_apps.dataset.problems import Cases
    from pytest_apps.engine.confirm import confirm_case
    from pytest_apps.engine.run import run_case
    from pytest_apps.executor import Executor, Limits
    from pytest_apps.judge.profiles import Judging
    from pytest_apps.plugin.cpus import available_cpus

    monkeypatch.setenv("PYTEST_APPS_SPEED_FACTOR", "1.0")  # a quiet machine, as far as the probe knows
    problem, cases, judging = make_problem(), Cases(["\n"], ["done\n"]), Judging()
    near = Candidate(problem.id, "c.py", BURN.format(cpu=0.25))
    cpu = min(available_cpus())
    with Executor(Limits(timeout=0.5, backstop=6), cpu=cpu) as ex:
        ex.start()
        with contextlib.ExitStack() as neighbours:
            neighbours.enter_context(busy({cpu}, count=24))
            first = run_case(ex, problem, near, cases, 0, judging)
            assert first.verdict.kind == "timeout" and first.starved and not first.undercredited, first.outcome
            assert first.outcome.own_time < 0.5 < 3.0 <= first.outcome.wall_time

            @contextlib.contextmanager
            def once_they_are_gone():
                neighbours.close()
                yield

            confirmed, was = confirm_case(ex, problem, near, cases, 0, judging, first, alone=once_they_are_gone)
        assert (confirmed.verdict.kind, was) == ("pass", "timeout"), confirmed.outcome
        assert not confirmed.starved
        endless = Candidate(problem.id, "c.py", ENDLESS)
        clear = run_case(ex, problem, endless, cases, 0, judging)
        assert clear.verdict.kind == "timeout" and not clear.starved
        assert confirm_case(ex, problem, endless, cases, 0, judging, clear) == (clear, "")


# -- the same in the Python API (and the reward functions, which score through it) ----------------------------


def _api_row() -> dict:
    return {"problem_id": 7, "question": "Print done.", "solutions": "", "difficulty": "interview", "url": "",
            "starter_code": "", "input_output": {"inputs": ["\n"], "outputs": ["done\n"]}}


def test_the_api_confirms_as_the_plugin_does_by_default(monkeypatch):
    from pytest_apps import Evaluator
    from pytest_apps.api import problem_from_row

    problem = problem_from_row(_api_row())
    monkeypatch.setenv("PYTEST_APPS_SPEED_FACTOR", SPELL)
    with Evaluator(workers=1, timeout=1.0) as ev:
        ev.score(problem, "print('done')")  # a warm executor
        with stalls(1, after_cpu=0.6):
            near = ev.score(problem, BURN.format(cpu=0.9))
        clear = ev.score(problem, ENDLESS)
        assert ev.confirmations == 2
    assert [(t["kind"], t["confirmed"]) for t in near.tests] == [("pass", "timeout")] and near.verdict == "pass"
    assert [(t["kind"], t["confirmed"]) for t in clear.tests] == [("timeout", "timeout")]


def test_a_timeout_that_met_a_brief_spike_among_quiet_probes_is_not_confirmed(monkeypatch):
    """The probes around an endless program read x1.4 once, then x1.0 (the seam's list, in turn): the machine was
    slower for a moment, not on average (at least three probes: a mean of at most 1.13), so the timeout stands as
    it ran, with no second run; the range and the mean the probes saw are in its record."""
    from pytest_apps import Evaluator
    from pytest_apps.api import problem_from_row

    problem = problem_from_row(_api_row())
    monkeypatch.setenv("PYTEST_APPS_SPEED_FACTOR", "1.4,1.0")
    with Evaluator(workers=1, timeout=1.0) as ev:
        clear = ev.score(problem, ENDLESS)
        assert ev.confirmations == 0
    (test,) = clear.tests
    assert (test["kind"], test["confirmed"]) == ("timeout", None)
    assert test["speed_range"] == [1.0, 1.4] and 1.0 < test["speed_mean"] < 1.14, test


def test_on_a_quiet_machine_the_api_confirms_nothing(monkeypatch):
    from pytest_apps import Evaluator
    from pytest_apps.api import problem_from_row

    problem = problem_from_row(_api_row())
    monkeypatch.setenv("PYTEST_APPS_SPEED_FACTOR", "1.0")
    with Evaluator(workers=2, timeout=1.0) as ev:
        near, clear = ev.score_many([(problem, BURN.format(cpu=1.2)), (problem, ENDLESS)])
        assert ev.confirmations == 0
    assert [(t["kind"], t["confirmed"]) for r in (near, clear) for t in r.tests] == [("timeout", None)] * 2


def test_a_ray_actor_confirms_on_its_node_as_the_api_does(monkeypatch):
    """The actor's own class, without Ray (tests/test_ray.py runs it in a cluster where Ray is installed)."""
    from pytest_apps.api import _TEST_DATA, problem_from_row
    from pytest_apps.candidates.sources import Candidate
    from pytest_apps.core.settings import Settings
    from pytest_apps.engine.cluster import NodeRunner, Setup

    problem = problem_from_row(_api_row())
    cases = _TEST_DATA.get(problem)
    monkeypatch.setenv("PYTEST_APPS_SPEED_FACTOR", SPELL)
    seen = []
    for confirm in (True, False):
        runner = NodeRunner(Setup(Settings(timeout=1.0), 1, confirm=confirm))
        try:
            records = runner.run(problem, Candidate(problem.id, "endless.py", ENDLESS), 0, [cases], None, False)
        finally:
            runner.close()
        seen.append([(r.kind, r.confirmed) for r in records])
    assert seen == [[("timeout", "timeout")], [("timeout", "")]]
