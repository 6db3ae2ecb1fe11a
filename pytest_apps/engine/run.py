"""One test of one candidate: run it through the executor, judge it in this process, return plain data.

Shared by the pytest items and any other front end, so a program scores the same whichever way it runs.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, replace
from typing import Any

from ..candidates.sources import Candidate
from ..core.errors import HarnessError
from ..core.outcome import COMPILE_ERROR, NO_CODE, PASS, RUN_EXITED, RUN_HARNESS_ERROR, RUNTIME_ERROR, Outcome, Verdict
from ..core.outcome import NOT_MEASURED
from ..core.record import CaseRecord
from ..dataset.problems import CALL, Cases, Problem, parse_call_args, stdin_text
from ..executor import STYLE_APPS_HARNESS, Executor, Program
from ..judge import apps, taco
from ..judge.checkers import Checkers
from ..judge.profiles import (RUNS_APPS_HARNESS, RUNS_REAL, RUNS_TACO_HARNESS, TABLE, Judging, decide, other_profile,
                              output_digest)
from ..judge.special import SpecialJudges
from .limits import borderline, over_row_memory, problem_limits, starved, undercredited
from .failtext import failure_detail
from .result import CaseResult

SEED_JUDGING = Judging()


@dataclass(frozen=True)
class Trial:
    """One test of one program as a runner runs and judges it: the judge profile, the problem, the program, the
    test's input and expected output, and what may decide it instead of the profile's comparison (the problem's
    checker, else a built-in special judge of TACO's list)."""

    profile: str
    problem: Problem
    program: Program
    raw_input: Any
    expected: Any
    checkers: Checkers | None = None
    special: SpecialJudges | None = None

    def checker(self, given: Any, expected: Any) -> Any:
        """The checker deciding this test, bound to what the program was given and what is expected (None: the
        profile's comparison decides): the problem's own (``--apps-checkers``), else a built-in special judge of
        TACO's list (case-insensitive, floating-point)."""
        problem = self.problem
        checker = self.checkers.bind(problem.id, given, expected) if self.checkers is not None else None
        if checker is None and self.special is not None:
            checker = self.special.bind(problem.id, problem.question, problem.fmt, expected)
        return checker


def run_case(
    executor: Executor, problem: Problem, candidate: Candidate, cases: Cases, index: int,
    judging: Judging | None = None,
) -> CaseResult:
    """Execute `candidate` on test `index` of `problem` and judge the result under `judging` (default: the seed
    profile, no checkers).

    The child receives only the input; the expected output stays here. A test whose executor failed (its server
    or zygote died or hung) runs again once, on a fresh executor: only a second failure raises the judge's
    HarnessError (as does a checker's failure, which a rerun would not change).
    """
    faults = executor.faults
    try:
        return run_case_once(executor, problem, candidate, cases, index, judging)
    except HarnessError as first:
        if executor.faults == faults:
            raise  # not the executor's: a checker's, say
        executor.renew()
        try:
            return run_case_once(executor, problem, candidate, cases, index, judging)
        except HarnessError as second:
            raise HarnessError(f"{second} (the second time: the first run, on another executor, met: {first})") \
                from None


def run_case_once(
    executor: Executor, problem: Problem, candidate: Candidate, cases: Cases, index: int,
    judging: Judging | None = None,
) -> CaseResult:
    """One run of `run_case`, without the second try."""
    judging = judging or SEED_JUDGING
    raw_input, expected = cases.inputs[index], cases.outputs[index]
    if candidate.refused:  # python would not read its file (candidates/decoding.py): nothing runs
        return CaseResult(Verdict(COMPILE_ERROR, reason=candidate.refused), None, raw_input, expected)
    if candidate.code is None or not candidate.code.strip():
        verdict = Verdict(NO_CODE, reason="no program for this problem")
        return CaseResult(verdict, None, raw_input, expected)
    trial = Trial(judging.profile, problem, Program(candidate.code, candidate.file), raw_input, expected,
                  judging.checkers, judging.special)
    # a problem's limits: those its executor runs under (the run's, or a request's), with a row's own time when the
    # run takes per-problem limits
    limits = problem_limits(executor.limits, problem, judging.row_limits, judging.time_scale)
    with executor.limited(limits):
        outcome, verdict = run_judged(executor, trial)
        if judging.row_limits:
            verdict = over_row_memory(problem, outcome, verdict)
        audit: dict[str, str] = {}
        if judging.audit:
            audit = reference_audit(executor, trial, outcome, verdict)
    return CaseResult(verdict, outcome, raw_input, expected, borderline=borderline(outcome, limits), audit=audit,
                      undercredited=undercredited(outcome, limits), starved=starved(outcome, limits))


def run_judged(executor: Executor, trial: Trial) -> tuple[Outcome | None, Verdict]:
    """Run `trial`'s program on its test in its profile's style and judge it there: (what ran, or None, and the
    verdict). How the profile's programs run is its entry's `runs` (judge/profiles.py's table)."""
    return _RUNNERS[TABLE[trial.profile].runs](executor, trial)


def _run_real(executor: Executor, t: Trial) -> tuple[Outcome | None, Verdict]:
    """A test run as a real program (standard input) or a module whose function is called."""
    problem = t.problem
    if problem.fmt == CALL:
        assert problem.fn_name is not None
        args = parse_call_args(t.raw_input)
        outcome = executor.run_call(t.program, problem.fn_name, args)
        checker = t.checker(args, t.expected)
    else:
        text = stdin_text(t.raw_input)
        outcome = executor.run_stdin(t.program, text)
        checker = t.checker(text, _text_or_value(t.expected))
    return outcome, decide(t.profile, problem.fmt, t.expected, outcome, checker)


def _run_taco(executor: Executor, t: Trial) -> tuple[Outcome | None, Verdict]:
    """A standard-input test as TACO runs it: the program with TACO's prelude as a real program; a run that exits
    with status 1 (or does not compile) again wrapped in ``code()`` (TACO's fallback, see judge/taco.py). A
    call-based test runs as the APPS harness runs it, the program with TACO's prelude."""
    source, filename = t.program.source, t.program.filename
    if t.problem.fmt == CALL:
        return _run_apps(executor, replace(t, program=Program(taco.call_program(source), filename)))
    loading = _taco_load(executor, t.program)
    if loading is not None:
        return loading, taco.not_loaded(loading)
    text = taco.input_text(t.raw_input)
    checker = t.checker(text, taco.expected_text(t.expected))
    outcome = executor.run_stdin(Program(taco.std_program(source), filename), text)
    if taco.needs_wrapping(outcome):
        wrapped = executor.run_stdin(Program(taco.wrapped_program(source), filename), text)
        return wrapped, decide(t.profile, t.problem.fmt, t.expected, wrapped, checker, step_prefix=taco.WRAPPED)
    return outcome, decide(t.profile, t.problem.fmt, t.expected, outcome, checker)


# Programs whose TACO load (`_taco_load`) was decided, by the digest of their text and limits: each is loaded
# once per process (a worker runs every test of a program), not once per test. Bounded, the oldest forgotten
# first; shared by the threads of an Evaluator.
_TACO_LOADS: dict[str, Outcome | None] = {}
_TACO_LOADS_KEPT = 256
_TACO_LOADS_LOCK = threading.Lock()


def _taco_load(executor: Executor, program: Program) -> Outcome | None:
    """TACO loads a standard-input program wrapped in ``code()`` as a module (without calling it) before any test,
    and fails the whole problem when that fails (judge/taco.py). Done here as a run of its own, in the fence:
    None when it loads, else the failed run."""
    key = hashlib.blake2b(program.source.encode("utf-8", "surrogatepass") + repr(executor.limits).encode(),
                          digest_size=16).hexdigest()
    with _TACO_LOADS_LOCK:
        if key in _TACO_LOADS:
            return _TACO_LOADS[key]
    outcome = executor.run_stdin(Program(taco.loaded_program(program.source), program.filename), "")
    if outcome.status == RUN_HARNESS_ERROR:
        return None  # not the program's doing: undecided, the test's own run meets the fault
    failed = outcome if not (outcome.status == RUN_EXITED and outcome.exit_code == 0) else None
    with _TACO_LOADS_LOCK:
        while len(_TACO_LOADS) >= _TACO_LOADS_KEPT:
            _TACO_LOADS.pop(next(iter(_TACO_LOADS)))
        _TACO_LOADS[key] = failed
    return failed


def _run_apps(executor: Executor, t: Trial) -> tuple[Outcome | None, Verdict]:
    """A test run as the original APPS harness runs it (executor/appsstyle.py)."""
    problem, raw_input = t.problem, t.raw_input
    if problem.fmt == CALL:
        assert problem.fn_name is not None
        args = apps.original_call_args(raw_input)
        if args is None:
            return None, Verdict(RUNTIME_ERROR, reason=f"the test's input ({type(raw_input).__name__}) cannot be "
                                                       "unpacked into arguments (the original's -1)")
        outcome = executor.run_call(t.program, problem.fn_name, args, style=STYLE_APPS_HARNESS)
        checker = t.checker(args, t.expected)
    else:
        text = apps.input_text(raw_input)
        if text is None:
            return None, Verdict(RUNTIME_ERROR, reason=f"the test's input is not text ({type(raw_input).__name__});"
                                                       " the original harness fails every program here")
        outcome = executor.run_stdin(t.program, text, style=STYLE_APPS_HARNESS)
        checker = t.checker(text, _text_or_value(t.expected))
    return outcome, decide(t.profile, problem.fmt, t.expected, outcome, checker)


# how a profile's programs run (judge/profiles.py's `Profile.runs`, one of its `RUNS`) -> the runner
_RUNNERS = {RUNS_REAL: _run_real, RUNS_APPS_HARNESS: _run_apps, RUNS_TACO_HARNESS: _run_taco}


def _text_or_value(expected: Any) -> Any:
    """A standard-input test's expected output as a checker gets it: text (a list of lines joined)."""
    text = apps.expected_text(expected)
    return expected if text is None else text


def reference_audit(executor: Executor, trial: Trial, outcome: Outcome | None, verdict: Verdict) -> dict[str, str]:
    """For a reference solution's test: "digest", its output's digest when it ended normally; and for a test that
    failed, "other", its verdict kind under the other judge profile (run again in that profile's style)."""
    audit: dict[str, str] = {}
    digest = output_digest(trial.profile, trial.problem.fmt, outcome)
    if digest:
        audit["digest"] = digest
    if verdict.kind != PASS:
        try:
            _, other = run_judged(executor, replace(trial, profile=other_profile(trial.profile)))
            audit["other"] = other.kind
        except HarnessError:
            audit["other"] = "harness_error"
    return audit


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
        audit=dict(result.audit),
        speed=outcome.speed if outcome else NOT_MEASURED,
        undercredited=result.undercredited,
        starved=result.starved,
    )
