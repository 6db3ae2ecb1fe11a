"""Per-problem limits (``--apps-limits row``): a TACO row's own time and memory limit instead of the fixed ones.

The time limit replaces the executor's (scaled like the fixed one by ``--apps-timeout-scale``) and is enforced as
every limit is, from outside the child. The memory limit is a bound on the program's peak resident memory, decided
after the run from its resource usage (``ru_maxrss``, measured by the executor): applying a judge's "256 megabytes"
as an address-space limit would stop the Python interpreter itself, whose address space (shared libraries, the
preloaded modules) is larger than what it uses. The fixed address-space limit stays in force as the hard stop.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.outcome import MEMORY_LIMIT, PASS, RUN_TIMEOUT, WRONG_ANSWER, Outcome, Verdict
from ..dataset.problems import Problem
from ..dataset.limits import time_limit_of
from ..executor import Limits
from ..executor.speed import charged, credit

FIXED, ROW = "fixed", "row"


def problem_limits(base: Limits, problem: Problem, row: bool, scale: float = 1.0) -> Limits:
    """The limits `problem` runs under: `base`, or with ``row`` its row's time limit (times `scale`)."""
    if not row or problem.time_limit is None:
        return base
    return replace(base, timeout=time_limit_of(problem, row, base.timeout, scale))


def over_row_memory(problem: Problem, outcome: Outcome | None, verdict: Verdict) -> Verdict:
    """A run that ended (passed or gave a wrong answer) but used more resident memory than its row allows is a
    memory limit verdict; anything else is unchanged."""
    limit = problem.memory_limit
    if limit is None or outcome is None or verdict.kind not in (PASS, WRONG_ANSWER) or outcome.peak_memory <= limit:
        return verdict
    used = outcome.peak_memory / (1 << 20)
    return Verdict(MEMORY_LIMIT, reason=f"peak resident memory {used:.1f} MiB over the row's limit "
                                        f"{limit / (1 << 20):g} MiB", details=dict(verdict.details))


def borderline(outcome: Outcome | None, limits: Limits) -> bool:
    """Whether the test's time verdict is fragile: its own time (charged at the machine's quiet speed) is within
    the band of the limit, either side, or (for a run that ended by itself) the verdict would differ at another
    speed of the machine within the range measured around it (the slowest speed seen credits the most)."""
    if outcome is None or outcome.own_time <= 0:
        return False
    band = limits.band * limits.timeout
    times = [outcome.own_time]
    # its CPU time charged at each end of the range instead (executor/speed.py); not for a run stopped at the end of
    # the band, whose time is only a lower bound: at any speed it would have run on to that point
    if outcome.speed.measured and outcome.own_time < limits.stop:
        times += [_charged_at(outcome, outcome.speed.low), _charged_at(outcome, outcome.speed.high)]
    return (any(abs(t - limits.timeout) < band for t in times)
            or len({t >= limits.timeout for t in times}) > 1)


def undercredited(outcome: Outcome | None, limits: Limits) -> bool:
    """Whether a run over the limit would have been within it charged at the mean slowdown measured around it:
    its own time is charged at the smallest slowdown seen (never more lenient than what was seen), so a slow spell
    that came and went between the probes may have cost it its verdict, and a confirmation decides
    (engine/confirm.py). Not a run over the limit even at the mean: a clear timeout on a steadily slow machine,
    or one whose time is blocked time (sleeps and waits take as long at any speed)."""
    if outcome is None or not outcome.speed.measured or outcome.own_time < limits.timeout:
        return False
    return _charged_at(outcome, outcome.speed.mean) < limits.timeout


def starved(outcome: Outcome | None, limits: Limits) -> bool:
    """Whether the wall-clock backstop stopped a run before its own time reached the limit: the machine, not the
    program, ended it (it had too little of a CPU, behind neighbours the run does not own), so a confirmation
    decides (engine/confirm.py). A program that starves itself (one that lowers its own priority) is stopped by
    the backstop again when confirmed, and stays a timeout."""
    return (outcome is not None and outcome.status == RUN_TIMEOUT and outcome.own_time < limits.timeout
            and outcome.wall_time >= limits.wall_backstop)


def _charged_at(outcome: Outcome, factor: float) -> float:
    """The run's own time charged at the credit of slowdown `factor` instead of the one it was charged at."""
    cpu = min(outcome.cpu_time, outcome.own_time * outcome.speed.factor)
    raw = outcome.own_time + cpu * (1 - 1 / outcome.speed.factor)
    return charged(raw, cpu, credit(factor))
