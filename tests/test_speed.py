"""The time limit on a machine whose CPU itself slows down: a calibrated probe measures the machine's speed around
each test that runs long enough to matter, and the CPU part of a program's own time is charged at quiet-machine
speed when the machine is confidently slower. Slow spells cannot be made on demand, so the decision is pinned
through the documented seam (PYTEST_APPS_SPEED_FACTOR); the probe itself runs with real neighbour processes."""

from __future__ import annotations

import json
import os

import pytest

from conftest import read_report, run
from test_time_limits import busy
from pytest_apps.core.outcome import RUN_EXITED, RUN_TIMEOUT, Outcome, SpeedCredit
from pytest_apps.engine.limits import borderline, starved, undercredited
from pytest_apps.executor import Executor, Limits, Program
from pytest_apps.executor import speed

# CPU-bound: spins on its own CPU time; mixed: sleeps, then spins
BURN = "import time\nt = time.thread_time()\nwhile time.thread_time() - t < {cpu}:\n    pass\nprint('done')\n"
MIXED = "import time\ntime.sleep({sleep})\n" + BURN

pytestmark = pytest.mark.xdist_group("time-limits")  # they load the machine on purpose, like test_time_limits




# the wall-clock backstop well away: on a machine loaded by others a program may get a tenth of a CPU, and these
# tests are about the own-time decision, not the backstop (which has tests of its own)
LIMITS = Limits(timeout=1.0, backstop=60.0)


def one_run(source: str, cpu: int | None = None) -> Outcome:
    with Executor(LIMITS, cpu=cpu) as ex:
        return ex.run_stdin(Program(source), "")


# -- the probe -------------------------------------------------------------------------------------------------


def test_the_probe_measures_a_rate_and_a_factor_never_below_one(tmp_path):
    machine = speed.Speed()
    machine.calibrate(str(tmp_path / "speed.json"))
    assert machine.quiet > 0
    assert json.loads((tmp_path / "speed.json").read_text())["rates"] == [machine.quiet]  # kept for the next server
    factors = [machine.factor() for _ in range(5)]
    assert all(f is not None and f >= 1.0 for f in factors)
    assert machine.low == min(factors) and machine.high == max(factors)


def test_the_quiet_rate_is_a_high_quantile_of_the_kept_calibrations_and_a_cache_that_cannot_be_written_is_lost(
        tmp_path):
    path = tmp_path / "speed.json"
    path.write_text(json.dumps({"rates": [1e12] * (speed.KEPT - 1)}))  # faster than any machine: the kept figures win
    machine = speed.Speed()
    machine.calibrate(str(path))
    assert machine.quiet == 1e12 and machine.factor() > speed.MOST
    assert speed.credit(machine.factor()) == speed.MOST  # the credit stays bounded whatever was measured
    assert len(json.loads(path.read_text())["rates"]) == speed.KEPT  # the calibration just made joined them
    path.write_text("not json")
    machine = speed.Speed()
    machine.calibrate(str(path))
    assert 0 < machine.quiet < 1e12 and json.loads(path.read_text())["rates"] == [machine.quiet]
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        machine = speed.Speed()
        machine.calibrate(str(ro / "sub" / "speed.json"))  # no room / no permission: measured, not kept
        assert machine.quiet > 0
    finally:
        ro.chmod(0o700)


def test_one_fast_calibration_does_not_become_the_quiet_rate_and_the_newest_are_kept(tmp_path, monkeypatch):
    """A host's quiet speed varies from moment to moment: the quiet rate is a high quantile of the calibrations
    kept, not the fastest ever seen, which a quiet machine would then read as slow and be credited on."""
    path = tmp_path / "speed.json"
    path.write_text(json.dumps({"rates": [1000.0] * 20 + [5000.0]}))  # one lucky moment among many
    probes = iter([990.0, 1010.0, 1000.0, 2000.0, 980.0, 995.0, 1005.0])  # one probe of a calibration sped up
    monkeypatch.setattr(speed, "rate", lambda samples=speed.SAMPLES: next(probes))
    machine = speed.Speed()
    machine.calibrate(str(path))
    assert machine.quiet == 1000.0  # (the calibration's own figure, the median of its probes: 1000)
    assert json.loads(path.read_text())["rates"][-1] == 1000.0
    path.write_text(json.dumps({"rates": list(range(1, 2 * speed.KEPT))}))
    assert speed.load_kept(str(path)) == list(range(speed.KEPT, 2 * speed.KEPT))  # the most recent KEPT
    assert speed.quiet_of([]) == 0.0 and speed.quiet_of([3.0]) == 3.0
    assert speed.quiet_of([1.0, 2.0, 3.0, 4.0]) == 4.0 and speed.quiet_of([float(v) for v in range(1, 9)]) == 7.0


def test_the_probe_reads_a_quiet_machine_as_quiet():
    """Against a quiet rate calibrated the same way, most probes on this machine are within the probe's noise. A
    slow spell of the host, or a neighbour test that loads the machine, can raise a whole round: three rounds, each
    calibrated afresh, and one must read quiet (a probe that misreads a quiet machine misreads all three)."""
    rounds = []
    for _ in range(3):
        machine = speed.Speed()
        machine.quiet = speed.quiet_of([speed.typical() for _ in range(4)])
        seen = sorted(machine.factor() for _ in range(15))
        rounds.append(seen)
        if seen[len(seen) // 2] < speed.CONFIDENT:
            return
    pytest.fail(f"no round read the machine as quiet: {rounds}")


def test_cpu_bound_neighbours_on_the_same_cpu_leave_the_probe_within_its_noise():
    """Neighbours that take turns on the probe's CPU take its wall time, not the work a CPU second does: the probe
    counts its own CPU time, so they give it no credit to hand out."""
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        with busy({cpu}, count=2):
            machine = speed.Speed()
            machine.quiet = speed.typical()
            seen = [machine.factor() for _ in range(10)]
    finally:
        os.sched_setaffinity(0, before)
    # the fastest of ten probes is within the noise (a slow spell of the host itself can raise single ones)
    assert min(seen) < speed.CONFIDENT, seen


def test_the_credit_is_one_below_the_noise_and_bounded_above():
    assert speed.credit(None) == speed.credit(float("nan")) == 1.0
    assert speed.credit(1.0) == speed.credit(speed.CONFIDENT - 0.01) == 1.0
    assert speed.credit(1.6) == 1.6
    assert speed.credit(50.0) == speed.MOST


def test_only_the_cpu_part_of_the_own_time_is_charged_at_quiet_speed():
    assert speed.charged(own=1.6, cpu=1.6, factor=2.0) == pytest.approx(0.8)  # all CPU
    assert speed.charged(own=1.6, cpu=0.6, factor=2.0) == pytest.approx(1.3)  # 1 s of sleep stays 1 s
    assert speed.charged(own=1.2, cpu=1.2, factor=1.0) == 1.2


def test_the_seam_reads_one_factor_or_a_list_read_in_turn_by_each_tests_probes():
    assert speed.parse_pinned(None) is None and speed.parse_pinned(" ") is None
    assert speed.parse_pinned("1.6") == (1.6,)
    assert speed.parse_pinned("1.4, 1.0") == (1.4, 1.0)
    assert type(speed.of_seam(None)) is speed.Speed and type(speed.of_seam([1.6])) is speed.Pinned
    machine = speed.of_seam([1.4, 1.0])
    machine.calibrate()  # (nothing to calibrate: no file read or written)
    first = machine.readings()
    assert [first() for _ in range(4)] == [1.4, 1.0, 1.0, 1.0]  # the last one repeats
    assert machine.readings()() == 1.4  # the next test's probes start again from the first
    assert machine.factor() == 1.4 and (machine.low, machine.high) == (1.0, 1.4)  # asked: the first; the range seen


@pytest.mark.parametrize("raw", ["x", "0.5", "-1", "inf", "nan", "1.2,", "1.2,0.9"])
def test_a_bad_seam_value_is_a_one_line_error_naming_the_variable(raw, monkeypatch):
    with pytest.raises(ValueError, match=r"PYTEST_APPS_SPEED_FACTOR=.*expected a speed factor >= 1.0"):
        speed.parse_pinned(raw)
    monkeypatch.setenv(speed.ENV, raw)
    out = one_run(BURN.format(cpu=0.0))
    assert out.status == "harness_error" and "PYTEST_APPS_SPEED_FACTOR" in out.error and "\n" not in out.error


# -- the decision, through the seam --------------------------------------------------------------------------


@pytest.mark.parametrize("source, factor, status, credited", [
    # 1.3 s of CPU under a 1 s limit on a machine 1.6 times slower than quiet: 0.81 s at quiet speed, a pass
    (BURN.format(cpu=1.3), "1.6", RUN_EXITED, 1.6),
    # the same program when the machine is as fast as when quiet: a timeout, as before
    (BURN.format(cpu=1.3), "1.0", RUN_TIMEOUT, 1.0),
    # a slowdown within the probe's noise earns nothing
    (BURN.format(cpu=1.3), "1.1", RUN_TIMEOUT, 1.0),
    # a clear timeout (2.4 s of CPU at 1.6 times slower = 1.5 s at quiet speed) stays one
    (BURN.format(cpu=2.4), "1.6", RUN_TIMEOUT, 1.6),
    # however slow the machine is said to be, the credit is bounded: 2.6 s / 2 = 1.3 s, a timeout
    (BURN.format(cpu=2.6), "9", RUN_TIMEOUT, speed.MOST),
    # compute plus sleep: 0.6 s of sleep is not slowed by a slow CPU; 0.6 + 0.7 / 1.6 = 1.04 s: a timeout
    (MIXED.format(sleep=0.6, cpu=0.7), "1.6", RUN_TIMEOUT, 1.6),
    # ... while 0.3 s of sleep and 0.7 s of CPU is 0.74 s at quiet speed: a pass
    (MIXED.format(sleep=0.3, cpu=0.7), "1.6", RUN_EXITED, 1.6),
], ids=["near-limit-slow-pass", "quiet-unchanged", "noise-no-credit", "clear-timeout-stays", "credit-bounded",
        "mixed-sleep-not-credited", "mixed-pass"])
def test_the_measured_speed_turns_a_near_limit_timeout_into_a_pass_never_a_clear_one(source, factor, status,
                                                                                      credited, monkeypatch):
    monkeypatch.setenv(speed.ENV, factor)
    out = one_run(source)
    assert out.status == status, out
    assert out.speed.factor == credited
    assert out.speed.low == out.speed.high == out.speed.mean == float(factor)
    assert out.own_time < out.cpu_time + 0.5 or factor == "1.0"  # the own time reported is the charged one


def test_a_short_test_is_not_probed():
    out = one_run(BURN.format(cpu=0.05))
    assert out.status == RUN_EXITED and out.speed.factor == 1.0 and not out.speed.measured


def test_a_clear_timeout_stays_one_beside_real_neighbours_and_a_clear_pass_passes():
    """No seam: the real probe with two CPU-bound neighbours on the program's CPU (whatever the host does). The
    program spins for seconds of its own CPU time, not for a fixed amount of work: during a slow spell of the
    host, 1.4 s of CPU is rightly less than 1 s at quiet speed, so the clear timeout spins for more than the
    largest credit can excuse."""
    cpu = min(os.sched_getaffinity(0))
    with busy({cpu}, count=2):
        over = one_run(BURN.format(cpu=LIMITS.timeout * speed.MOST + 0.4), cpu=cpu)
        under = one_run(BURN.format(cpu=0.4), cpu=cpu)
    assert over.status == RUN_TIMEOUT and over.speed.high >= 1.0 and over.own_time >= 1.0
    assert under.status == RUN_EXITED


# -- borderline within the measured range ---------------------------------------------------------------------


def test_borderline_marks_a_verdict_another_speed_within_the_measured_range_would_change():
    lim = Limits(timeout=1.0)
    # charged at x1.6 (the slowest speed seen was x1.6, the fastest x1.2): 1.3 s of CPU is 0.81 s, and at x1.2
    # 1.08 s: the verdict depends on the speed within the range
    out = Outcome(RUN_EXITED, own_time=1.3 / 1.6, cpu_time=1.3, speed=SpeedCredit(1.6, 1.2, 1.6))
    assert borderline(out, lim)
    # measured x1.6 throughout: 0.81 s, out of the band: not fragile
    steady = Outcome(RUN_EXITED, own_time=1.3 / 1.6, cpu_time=1.3, speed=SpeedCredit(1.6, 1.6, 1.6))
    assert not borderline(steady, lim)
    # a run stopped at the end of the band is a timeout at any speed: its time is only a lower bound
    stopped = Outcome(RUN_TIMEOUT, own_time=1.17, cpu_time=1.17 * 1.2, speed=SpeedCredit(1.2, 1.2, 1.6))
    assert not borderline(stopped, lim)
    # unmeasured: the band alone, as before
    assert borderline(Outcome(RUN_TIMEOUT, own_time=1.08, cpu_time=1.08), lim)
    assert not borderline(Outcome(RUN_EXITED, own_time=0.4, cpu_time=0.4), lim)



def test_a_timeout_is_undercredited_when_the_mean_slowdown_measured_around_it_would_bring_it_within_the_limit():
    lim = Limits(timeout=1.0)
    # stopped at the end of the band (1.15 s at x1.0, the smallest slowdown seen) while the probes saw x1.6 on
    # average: 1.15 s of CPU at x1.6 is 0.72 s, within the limit; a spell came and went between the probes
    spell = Outcome(RUN_TIMEOUT, own_time=1.15, cpu_time=1.15, speed=SpeedCredit(1.0, 1.0, 1.9, 1.6))
    assert undercredited(spell, lim)
    # a steady slowdown (smallest = mean): the credit already charged it at the speed seen; a clear timeout
    steady = Outcome(RUN_TIMEOUT, own_time=1.15, cpu_time=1.15 * 1.6, speed=SpeedCredit(1.6, 1.6, 1.6, 1.6))
    assert not undercredited(steady, lim)
    # the mean a little above the smallest: 1.15 s at x1.05 more is still over the limit
    near = Outcome(RUN_TIMEOUT, own_time=1.15, cpu_time=1.15 * 1.4, speed=SpeedCredit(1.4, 1.4, 1.6, 1.47))
    assert not undercredited(near, lim)
    # blocked time (a sleep, a wait) is not charged at any speed: a sleeping program is over the limit at any mean
    sleeper = Outcome(RUN_TIMEOUT, own_time=1.15, cpu_time=0.05, speed=SpeedCredit(1.0, 1.0, 1.9, 1.6))
    assert not undercredited(sleeper, lim)
    # within the limit already, or unmeasured, or a mean within the probe's noise: nothing to make up
    assert not undercredited(Outcome(RUN_EXITED, own_time=0.6, cpu_time=0.6, speed=SpeedCredit(1.0, 1.0, 1.9, 1.6)),
                             lim)
    assert not undercredited(Outcome(RUN_TIMEOUT, own_time=1.15, cpu_time=1.15), lim)
    assert not undercredited(Outcome(RUN_TIMEOUT, own_time=1.15, cpu_time=1.15,
                                     speed=SpeedCredit(1.0, 1.0, 1.4, speed.CONFIDENT - 0.01)), lim)
    assert not undercredited(None, lim)


def test_a_timeout_is_starved_when_the_wall_clock_backstop_ended_it_under_its_own_time_limit():
    lim = Limits(timeout=1.0)  # the backstop: 10 s of the wall clock
    # 0.77 s of its own in 10 s: queued for a CPU the rest of the time, behind neighbours the run does not own
    assert starved(Outcome(RUN_TIMEOUT, own_time=0.77, cpu_time=0.7, wall_time=10.02), lim)
    # over the limit by its own time, however long it waited: its own verdict
    assert not starved(Outcome(RUN_TIMEOUT, own_time=1.15, cpu_time=1.15, wall_time=10.02), lim)
    assert not starved(Outcome(RUN_TIMEOUT, own_time=1.15, cpu_time=1.15, wall_time=1.2), lim)
    # it ended by itself, or nothing ran
    assert not starved(Outcome(RUN_EXITED, own_time=0.77, cpu_time=0.7, wall_time=10.02), lim)
    assert not starved(None, lim)


# -- end to end: the plugin at -n 2 -----------------------------------------------------------------------------


def test_the_plugin_reports_the_speed_factor_per_test_and_the_range_of_the_run(pytester: pytest.Pytester,
                                                                                monkeypatch):
    row = {"problem_id": 1, "question": "Print done.", "solutions": "", "difficulty": "interview", "url": "",
           "starter_code": "", "input_output": json.dumps({"inputs": ["\n"] * 2, "outputs": ["done\n"] * 2})}
    (pytester.path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    (pytester.path / "cands").mkdir()
    (pytester.path / "cands" / "1.py").write_text(BURN.format(cpu=1.3))
    monkeypatch.setenv(speed.ENV, "1.6")
    result = run(pytester, "--apps-dataset", "rows.jsonl", "--apps-candidates", "cands", "--apps-timeout", "1",
                 "-n", "2")
    result.assert_outcomes(passed=2)
    report = read_report(pytester)
    tests = report["problems"][0]["tests"]
    assert [(t["kind"], t["speed_factor"], t["speed_range"], t["speed_mean"]) for t in tests] == \
        [("pass", 1.6, [1.6, 1.6], 1.6)] * 2
    assert report["summary"]["speed_range"] == [1.6, 1.6] and report["summary"]["speed_credited"] == 2
    assert "machine slowdown measured during the run: x1.60 to x1.60" in result.stdout.str()


# -- confirmation: a timeout or near-limit verdict run again when the machine is quiet ----------------------------


def _row(n: int = 1) -> dict:
    return {"problem_id": 7, "question": "Print done.", "solutions": "", "difficulty": "interview", "url": "",
            "starter_code": "", "input_output": {"inputs": ["\n"] * n, "outputs": ["done\n"] * n}}


def test_the_api_confirms_near_limit_verdicts_and_never_a_timeout_no_measured_slowdown_could_explain(monkeypatch):
    """On a machine measured slower than quiet, unevenly (the probes read x1.0, then x2.0: about x1.7 on average),
    the near-limit pass is confirmed. A sleep is not credited, and takes as long at any speed: the program that
    sleeps 1.4 s is over the limit even at the mean slowdown, a clear timeout, not run twice."""
    from pytest_apps import Evaluator
    from pytest_apps.api import problem_from_row

    problem = problem_from_row(_row())
    sleeper = "import time\ntime.sleep({s})\nprint('done')\n"
    monkeypatch.setenv(speed.ENV, "1.0,2.0")
    with Evaluator(workers=2, timeout=1.0, confirm=True) as ev:
        clear, near, quick = ev.score_many([(problem, sleeper.format(s=1.4)), (problem, sleeper.format(s=0.9)),
                                            (problem, sleeper.format(s=0.1))])
        assert ev.confirmations == 1  # the near-limit pass; neither the clear timeout nor the quick pass
        doc = ev.report([clear, near, quick])
    assert [t["kind"] for t in clear.tests] == ["timeout"] and clear.tests[0]["confirmed"] is None
    assert clear.tests[0]["speed_mean"] >= speed.CONFIDENT  # measured slower, yet not run again
    assert [t["kind"] for t in near.tests] == ["pass"] and near.tests[0]["confirmed"] == "pass"
    assert quick.tests[0]["confirmed"] is None
    with Evaluator(workers=2, timeout=1.0, confirm=False) as ev:  # asked not to: nothing is run twice
        (again,) = ev.score_many([(problem, sleeper.format(s=0.9))])
        assert ev.confirmations == 0 and again.tests[0]["confirmed"] is None
    assert doc["summary"]["confirmations"] == 1 and doc["summary"]["confirmations_changed"] == 0


def test_a_confirmation_turns_a_timeout_of_a_slow_spell_into_a_pass_and_runs_the_rest_under_fail_fast(
        monkeypatch):
    """The first run met a slow spell its probe saw only in part (the probes read x1.0, then x1.6: charged at the
    smallest, 1.3 s of CPU is a timeout, stopped at 1.15 s, which the mean slowdown would have brought within the
    limit); the confirmation runs where the machine's slowdown is measured x1.6 throughout (0.81 s at quiet
    speed). The program that needs 2.6 s is confirmed too, and stays a timeout."""
    from pytest_apps.api import problem_from_row
    from pytest_apps.api import _TEST_DATA
    from pytest_apps.candidates.sources import Candidate
    from pytest_apps.engine.confirm import confirm
    from pytest_apps.engine.problem import run_problem
    from pytest_apps.judge.profiles import Judging

    problem = problem_from_row(_row(3))
    cases, judging = _TEST_DATA.get(problem), Judging()
    slow = Candidate(problem.id, "slow.py", BURN.format(cpu=1.3))
    clear = Candidate(problem.id, "clear.py", BURN.format(cpu=2.6))
    monkeypatch.setenv(speed.ENV, "1.0,1.6")
    with Executor(LIMITS) as ex:
        first = run_problem(ex, problem, slow, cases, judging, fail_fast=True)
        first_clear = run_problem(ex, problem, clear, cases, judging, fail_fast=True)
    assert [r.kind for r in first] == [r.kind for r in first_clear] == ["timeout"]  # fail-fast stopped there
    monkeypatch.setenv(speed.ENV, "1.6")
    with Executor(LIMITS) as ex:
        confirmed, made = confirm(ex, problem, slow, cases, judging, True, first)
        still, made_clear = confirm(ex, problem, clear, cases, judging, True, first_clear)
    assert made == made_clear == 1
    assert [(r.kind, r.confirmed) for r in confirmed] == [("pass", "timeout"), ("pass", ""), ("pass", "")], confirmed
    assert [(r.kind, r.confirmed) for r in still] == [("timeout", "timeout")]  # 2.6 s / 2 (the most credited)


def test_a_server_calibrates_on_a_few_probes_and_keeps_its_figure_for_the_next(tmp_path, monkeypatch):
    """Each server takes `CALIBRATION_PROBES` probes when it starts (a few milliseconds), and adds their median to
    what is kept: the next server's quiet rate counts it."""
    asked = []
    monkeypatch.setattr(speed, "rate", lambda samples=speed.SAMPLES: asked.append(samples) or 1000.0)
    path = tmp_path / "speed.json"
    speed.Speed().calibrate(str(path))
    machine = speed.Speed()
    machine.calibrate(str(path))
    assert asked == [speed.SAMPLES] * (2 * speed.CALIBRATION_PROBES)
    assert machine.quiet == 1000.0 and json.loads(path.read_text())["rates"] == [1000.0, 1000.0]
