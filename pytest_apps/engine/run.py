"""One test of one candidate: run it through the executor, judge it in this process, return plain data.

Shared by the pytest items and any other front end, so a program scores the same whichever way it runs.
"""

from __future__ import annotations

from ..candidates.sources import Candidate
from ..core.outcome import NO_CODE, PASS, Verdict
from ..core.record import CaseRecord
from ..dataset.problems import CALL, Cases, Problem, call_args, stdin_text
from ..executor import Executor, Program
from ..judge.cascade import HarnessError, judge
from .failtext import failure_detail
from .result import CaseResult


def run_case(
    executor: Executor, problem: Problem, candidate: Candidate, cases: Cases, index: int
) -> CaseResult:
    """Execute `candidate` on test `index` of `problem` and judge the result.

    The child receives only the input; the expected output stays here. Raises the judge's
    HarnessError when the executor itself failed.
    """
    raw_input, expected = cases.inputs[index], cases.outputs[index]
    if candidate.code is None or not candidate.code.strip():
        verdict = Verdict(NO_CODE, reason="no program for this problem")
        return CaseResult(verdict, None, raw_input, expected)
    program = Program(candidate.code, candidate.file)
    if problem.fmt == CALL:
        assert problem.fn_name is not None
        outcome = executor.run_call(program, problem.fn_name, call_args(raw_input))
    else:
        outcome = executor.run_stdin(program, stdin_text(raw_input))
    limits = executor.limits
    near = outcome.own_time > 0 and abs(outcome.own_time - limits.timeout) < limits.band * limits.timeout
    return CaseResult(judge(problem.fmt, expected, outcome), outcome, raw_input, expected, borderline=near)


def case_record(
    problem: Problem,
    candidate: Candidate,
    index: int,
    result: CaseResult | HarnessError,
    nodeid: str = "",
    rerun_id: str = "",
) -> CaseRecord:
    """The plain record of one case, as every front end reports it (a harness fault included). `rerun_id`:
    for a failure, the node id to paste where the run was started (when it differs from `nodeid`)."""
    if isinstance(result, HarnessError):
        return CaseRecord(problem.id, index, "harness_error", sample=candidate.sample, reason=str(result),
                          nodeid=nodeid, rerun_id=rerun_id)
    verdict, outcome = result.verdict, result.outcome
    return CaseRecord(
        problem=problem.id,
        case=index,
        kind=verdict.kind,
        sample=candidate.sample,
        step=verdict.step,
        reason=verdict.reason,
        time=outcome.own_time if outcome else 0.0,
        memory=outcome.peak_memory if outcome else 0,
        nodeid=nodeid,
        detail=failure_detail(result) if verdict.kind != PASS else {},
        rerun_id=rerun_id if verdict.kind != PASS else "",
        cpu_time=outcome.cpu_time if outcome else 0.0,
        wall_time=outcome.wall_time if outcome else 0.0,
        borderline=result.borderline,
    )
