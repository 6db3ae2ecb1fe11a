"""One program on one problem: its cases run one after another on one executor, into records.

The loop every front end outside pytest shares (the `Evaluator` in this process, and the executors that live
in Ray actors on other nodes), so a program gets the same records wherever it runs: the plugin's order (the
cheapest input first under fail-fast) and the plugin's rule (only a failure of the program, never one of the
harness, stops the problem early).
"""

from __future__ import annotations

from collections.abc import Callable

from ..candidates.sources import Candidate
from ..core.errors import HarnessError
from ..core.outcome import PASS, RUN_HARNESS_ERROR
from ..core.record import CaseRecord
from ..dataset.problems import Cases, Problem, case_order
from ..executor import Executor
from ..judge.profiles import Judging
from .run import case_record, run_case


def run_problem(
    executor: Executor,
    problem: Problem,
    candidate: Candidate,
    cases: Cases,
    judging: Judging,
    fail_fast: bool,
    stop: Callable[[], bool] | None = None,
) -> list[CaseRecord] | None:
    """The records of `candidate`'s run on `problem`'s cases (its first `problem.n_cases`).

    `stop`, asked before each case, ends the run early: then the result is None ("not scored"), never a
    partial record list that would read as failed or passed tests.
    """
    records: list[CaseRecord] = []
    for index in case_order(problem, fail_fast):
        if stop is not None and stop():
            return None
        try:
            result = run_case(executor, problem, candidate, cases, index, judging)
            record = case_record(problem, candidate, index, result)
        except HarnessError as exc:
            record = case_record(problem, candidate, index, exc)
        records.append(record)
        if fail_fast and record.kind not in (PASS, RUN_HARNESS_ERROR):
            break
    return records
