"""Confirmation: a timeout or a near-limit verdict met on a slow machine is run again, alone, before it is final.

The backstop of the speed credit (executor/speed.py): the credit is that of the smallest slowdown measured around
a test, so a slow spell that came and went between two probes can still push a program over its limit. So a test
run while the probe saw the machine slower than quiet on average around it (the mean of the slowdowns measured
at or above the probe's noise, `speed.CONFIDENT`) runs again with no other program of the run running (the
plugin's item holds every slot of its machine's pool, slots.py; the API once a call's other work is done) when
its verdict is `borderline`, or a timeout that the mean slowdown would have brought within the limit
(`undercredited`, engine/limits.py); the confirmation's verdict is the test's. So only tests in a band around
the limit are run twice: a clear timeout, over the limit even at the mean slowdown (a steadily slow machine, an
endless loop, a long sleep), is final as it ran. On a quiet machine nothing is run twice and verdicts are those
of a single run; nor after a brief spike among quiet probes (a host's passing burst: one probe at x1.7 among ten
at x1.0), which cannot have taken a program's run from 70% of its limit to over it (that takes the machine x1.4
slower over the whole run). A confirmed timeout can stay one: the confirmation is held to the same limit, and
charged at quiet-machine speed only where the machine is measured confidently slower. Its record keeps what the
first run said (`confirmed`).

Under fail-fast a problem stopped at its first failure: when the confirmation turns that failure into a pass,
the problem's remaining cases run now, as they would have.

A timeout the wall-clock backstop ended before the program's own time reached its limit (`starved`) is confirmed
too, whatever the probe says: the probe measures the work a CPU second does, not how long a program queues for a
CPU, and a program that had a tenth of a CPU or less (a machine loaded far beyond its run) was stopped by the
machine, not by its own time. One that starves itself (lowering its own priority) is stopped the same way again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace

from ..candidates.sources import Candidate
from ..core.errors import HarnessError
from ..core.outcome import PASS, RUN_HARNESS_ERROR, TIMEOUT
from ..core.record import CaseRecord
from ..dataset.problems import Cases, Problem, case_order
from ..executor import Executor
from ..executor.speed import CONFIDENT
from ..judge.profiles import Judging
from .result import CaseResult
from .run import case_record, run_case


def needs_confirmation(record: CaseRecord) -> bool:
    """Whether a verdict is confirmed before it is final: a verdict within the borderline band, or a timeout the
    mean slowdown around it would have brought within the limit, met while the machine was measured slower than
    quiet (beyond the probe's noise) on average around the test; or a timeout the wall-clock backstop ended before
    the program's own time reached the limit (`starved`: queueing for a CPU, which the probe does not see)."""
    return confirmable(record.kind, record.borderline, record.undercredited, record.speed.mean, record.starved)


def confirmable(kind: str, borderline: bool, undercredited: bool, speed_mean: float, starved: bool) -> bool:
    """`needs_confirmation` on a verdict's parts."""
    return ((borderline or (kind == TIMEOUT and undercredited)) and speed_mean >= CONFIDENT
            or kind == TIMEOUT and starved)


def confirm_case(executor: Executor, problem: Problem, candidate: Candidate, cases: Cases, index: int,
                 judging: Judging, first: CaseResult,
                 alone: Callable[[], AbstractContextManager[object]] = nullcontext) -> tuple[CaseResult, str]:
    """One case's verdict confirmed where it needs it, inside `alone()` (where no other program of the run runs):
    the result that stands, and the first run's verdict kind when a confirmation ran ("" otherwise). A harness
    fault of the confirmation leaves the first verdict standing."""
    kind = first.verdict.kind
    slowdown = first.outcome.speed.mean if first.outcome is not None else 0.0
    # (no record made only to ask)
    if not confirmable(kind, first.borderline, first.undercredited, slowdown, first.starved):
        return first, ""
    try:
        with alone():
            return run_case(executor, problem, candidate, cases, index, judging), kind
    except HarnessError:
        return first, kind


def pending(records: Iterable[CaseRecord]) -> int:
    return sum(needs_confirmation(r) for r in records)


def _run(executor: Executor, problem: Problem, candidate: Candidate, cases: Cases, index: int,
         judging: Judging) -> CaseRecord:
    try:
        return case_record(problem, candidate, index, run_case(executor, problem, candidate, cases, index, judging))
    except HarnessError as exc:
        return case_record(problem, candidate, index, exc)


def confirm(executor: Executor, problem: Problem, candidate: Candidate, cases: Cases, judging: Judging,
            fail_fast: bool, records: list[CaseRecord]) -> tuple[list[CaseRecord], int]:
    """`records` with each verdict that needs it (`needs_confirmation`) replaced by its confirmation's, and how
    many were run."""
    out: list[CaseRecord] = []
    made = 0
    for record in records:
        if not needs_confirmation(record):
            out.append(record)
            continue
        again = _run(executor, problem, candidate, cases, record.case, judging)
        made += 1
        if again.kind == RUN_HARNESS_ERROR:  # the harness failed the confirmation: the first verdict stands
            out.append(replace(record, confirmed=record.kind))
            continue
        out.append(replace(again, nodeid=record.nodeid, confirmed=record.kind,
                           rerun_id=record.rerun_id if again.kind != PASS else ""))
    if fail_fast and out and records and records[-1].kind not in (PASS, RUN_HARNESS_ERROR) \
            and all(r.kind in (PASS, RUN_HARNESS_ERROR) for r in out):
        done = {r.case for r in out}
        for index in case_order(problem, fail_fast):
            if index in done:
                continue
            record = _run(executor, problem, candidate, cases, index, judging)
            out.append(record)
            if record.kind not in (PASS, RUN_HARNESS_ERROR):
                break
    return out, made
