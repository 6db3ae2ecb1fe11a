"""The judged requests: SandboxFusion's `/submit` with the problem given inline, and our `/judge` (one program, all
its tests, one request), read into `jobs.Judged` work and answered from the engine's records.

`/submit` takes SandboxFusion's `SubmitRequest` (``dataset``, ``id``, ``completion``, ``config``). The problem is
``config.provided_data``: APPS's ``input_output`` (JSON text or object: ``inputs``, ``outputs``, ``fn_name``), the
same keys at its top level (verl's ``ground_truth``), or SandboxFusion's own ``test`` list (``{"input": {"stdin":
...}, "output": {"stdout": ...}}``). The program is taken from the completion as the plugin takes it from a model's
answer; ``config.extra.judge`` names the judge profile (the server's default when absent) and
``config.extra.run_all_cases`` runs every test (SandboxFusion's rule: by default the first failing test ends the
run). The answer is SandboxFusion's `EvalResult`: ``accepted`` and one entry per test run, ``passed``, ``exec_info``
(a `/run_code` response: what the test's run gave) and ``test_info`` (our verdict, the step that accepted it or why
it failed, its times).

`/judge` takes ``code`` (or ``completion``, a model's answer to extract it from), ``tests`` (as ``input_output``),
``judge``, ``fail_fast``, ``run_timeout`` and ``memory_limit_MB``; it answers the problem's verdict, the tests
passed, run and in all, and each test's verdict and times.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..api import DatasetError, problem_cases, problem_from_row
from ..candidates.extract import extract_code
from ..core.outcome import PASS, RUN_HARNESS_ERROR, TIMEOUT, WRONG_ANSWER
from ..core.wording import counted
from ..core.record import CaseRecord
from ..report.rollup import P_PASS, ProblemResult, single_result
from .jobs import Judged, Served, limits_for, plain, spec_of
from .schema import FAILED, FINISHED, PYTHON, SUCCESS, TIME_LIMIT, RequestError, field, seconds


def tests_of(data: Any, where: str) -> dict[str, Any]:
    """The tests in `data` as APPS's ``input_output`` object (RequestError 400 naming `where` when there are none)."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise RequestError(f"{where}: not JSON ({exc})", 400) from None
    if isinstance(data, Mapping) and "input_output" in data:
        return tests_of(data["input_output"], f"{where}.input_output")
    if isinstance(data, Mapping) and isinstance(data.get("test"), list):
        try:
            pairs = [(t["input"]["stdin"], t["output"]["stdout"]) for t in data["test"]]
        except (KeyError, TypeError):
            raise RequestError(f"{where}.test: each test must be {{\"input\": {{\"stdin\": ...}}, \"output\": "
                               "{\"stdout\": ...}}", 400) from None
        return {"inputs": [p[0] for p in pairs], "outputs": [p[1] for p in pairs]}
    if isinstance(data, Mapping) and "inputs" in data:
        return dict(data)
    raise RequestError(f"{where}: give the tests as input_output (inputs, outputs, fn_name), or as SandboxFusion's "
                       "test list", 400)


def judged_work(tests: dict[str, Any], pid: Any, program: str | None, served: Served, judge: str,
                fail_fast: bool, timeout: float | None, memory_mb: int | None) -> Judged:
    """The work of one judged request; RequestError for tests that cannot be judged (400) or too many (413)."""
    inputs = tests.get("inputs")
    if isinstance(inputs, list) and len(inputs) > served.max_tests:
        raise RequestError(f"tests: {counted(len(inputs), 'test')}, over this server's {served.max_tests} per request "
                           "(its --max-tests)", 413)
    spec = spec_of(judge, served)
    limits = limits_for(spec, served, timeout, memory_mb)
    row = {"problem_id": "request" if pid in (None, "") else str(pid), "question": "(the request's tests)",
           "input_output": tests}
    try:
        problem = problem_from_row(row, 0, max_tests=0)
    except DatasetError as exc:
        raise RequestError(str(exc), 400) from None
    if problem.broken:
        raise RequestError(f"tests: {problem.broken}", 400)
    return Judged(problem, problem_cases(problem), program, spec, limits, fail_fast)


def read_submit(body: Any, served: Served) -> tuple[Judged, dict[str, Any]]:
    """`/submit`'s work and what its answer repeats (``id``, the extracted code)."""
    if not isinstance(body, Mapping):
        raise RequestError(f"the body must be a JSON object, not {type(body).__name__}")
    config = field(body, "config", dict, required=True)
    completion = field(body, "completion", str, required=True)
    pid = field(body, "id", (int, str), "")
    language = field(config, "language", str, PYTHON)
    if language != PYTHON:
        raise RequestError(f"config.language: {language!r} is not served here (Python only)", 400)
    if config.get("custom_extract_logic"):
        raise RequestError("config.custom_extract_logic is not served here: the code is taken from the completion "
                           "as the plugin takes it from a model's answer", 400)
    extra = field(config, "extra", dict, {})
    tests = tests_of(field(config, "provided_data", (dict, str), required=True), "config.provided_data")
    code = extract_code(completion)
    timeout = seconds(config, "run_timeout", served.timeout) if config.get("run_timeout") is not None else None
    work = judged_work(tests, pid, code, served, str(extra.get("judge") or served.judge),
                       not extra.get("run_all_cases", False), timeout, None)
    fenced = code is not None and "```" in completion
    return work, {"id": pid, "extracted_code": code or "",
                  "extracted_type": "empty" if code is None else ("fenced" if fenced else "heuristic")}


def read_judge(body: Any, served: Served) -> Judged:
    """`/judge`'s work."""
    if not isinstance(body, Mapping):
        raise RequestError(f"the body must be a JSON object, not {type(body).__name__}")
    code = field(body, "code", str)
    if code is None:
        completion = field(body, "completion", str)
        if completion is None:
            raise RequestError("code: required (or completion, a model's answer to take it from)")
        code = extract_code(completion)
    tests = tests_of(field(body, "tests", (dict, str), required=True), "tests")
    timeout = seconds(body, "run_timeout", served.timeout) if body.get("run_timeout") is not None else None
    fail_fast = field(body, "fail_fast", bool, False)
    memory = field(body, "memory_limit_MB", int, -1)
    return judged_work(tests, field(body, "id", (int, str), ""), code, served,
                       field(body, "judge", str, served.judge), fail_fast, timeout, memory)


def harness_failure(records: list[CaseRecord]) -> str:
    """Why the sandbox failed on these records ("" when it did not): a test the executor failed on twice."""
    for record in records:
        if record.kind == RUN_HARNESS_ERROR:
            return f"test {record.case}: {record.reason}"
    return ""


def test_entry(record: CaseRecord) -> dict[str, Any]:
    """One test's verdict and figures, as `/judge` gives it (and `/submit`'s ``test_info``)."""
    entry = {"index": record.case, "passed": record.kind == PASS, "verdict": record.kind, "step": record.step,
             "reason": record.reason, "time": record.time, "cpu_time": record.cpu_time,
             "wall_time": record.wall_time, "memory": record.memory}
    if record.confirmed:
        entry["confirmed"] = record.confirmed
    if record.detail:
        entry["detail"] = {k: plain(v) for k, v in record.detail.items()}
    return entry


def judge_answer(work: Judged, records: list[CaseRecord]) -> dict[str, Any]:
    """`/judge`'s answer."""
    result = single_result(work.problem, work.candidate, records)
    return {"status": SUCCESS, "message": "", "id": work.problem.id, "accepted": result.verdict == P_PASS,
            "verdict": result.verdict, "reason": result.reason, "tests_passed": result.tests_passed,
            "tests_run": result.tests_run, "tests_total": result.tests_total, "judge": work.spec.judging.profile,
            "fail_fast": work.fail_fast, "time_limit": work.limits.timeout,
            "tests": [test_entry(r) for r in sorted(records, key=lambda r: r.case)]}


def exec_info(record: CaseRecord) -> dict[str, Any]:
    """A test's run as a `/run_code` response: what SandboxFusion's `EvalTestCase.exec_info` holds. What the run
    printed is known for a failing test only (its ``detail``, cut short)."""
    ended = record.kind in (PASS, WRONG_ANSWER)
    got = record.detail.get("got") if record.detail else None
    run = {"status": TIME_LIMIT if record.kind == TIMEOUT else FINISHED, "execution_time": record.time,
           "return_code": 0 if ended else (None if record.kind == TIMEOUT else 1),
           "stdout": got if isinstance(got, str) else None, "stderr": "" if ended else record.reason,
           "cpu_time": record.cpu_time}
    return {"status": SUCCESS if ended else FAILED, "message": "", "compile_result": None, "run_result": run,
            "executor_pod_name": None, "files": {}}


def submit_answer(work: Judged, records: list[CaseRecord], echo: dict[str, Any]) -> dict[str, Any]:
    """`/submit`'s answer: SandboxFusion's `EvalResult`."""
    result: ProblemResult = single_result(work.problem, work.candidate, records)
    tests = [{"passed": r.kind == PASS, "exec_info": exec_info(r), "test_info": test_entry(r)}
             for r in sorted(records, key=lambda r: r.case)]
    return {**echo, "accepted": result.verdict == P_PASS, "full_code": None, "test_code": None, "tests": tests,
            "extra": {"verdict": result.verdict, "reason": result.reason, "tests_passed": result.tests_passed,
                      "tests_run": result.tests_run, "tests_total": result.tests_total,
                      "judge": work.spec.judging.profile}}
