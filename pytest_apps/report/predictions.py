"""`--apps-predictions PATH`: one JSON line per problem in the MAS-PromptBench APPS runners' format.

The record format, as those runners write it (`core/tasks/apps.py` `record()` and `test_scores()`,
`core/code_tasks.py` `scores_of()` / `unscored()` / `exact_match_score()`, `core/batch.py` `attempt()` and
`jsonl_writer()`, in fm8995610-ops/MAS-PromptBench), key order included:

    id              str    the APPS problem id, as a string ("4000")
    problem         str    the question, stripped, cut to its first 400 characters
    starter_code    str    the starter code with trailing whitespace stripped; "" when there is none
    predicted_code  str | None   the program that was run; None when no code was extracted
    pass            int    the number of tests passed (a count, not a bool)
    total           int    the number of tests (after the 20-test cap); counted even without code
    pass_rate       float  pass / total (not rounded); 0.0 when total is 0 or there is no code
    em              float  1.0 when every test passed (pass_rate == 1.0) and there is code, else 0.0
    difficulty      str    "introductory", "interview" or "competition"
    raw             str    the model's final text the code was extracted from, cut to 2,000 characters;
                           "" when there was none
    error           str | None   "<ExceptionType>: <message>" when producing the program failed, else None

The runners insert telemetry fields (`latency_s`, token counts) between `raw` and `error`; they are
not part of the record contract and are not written here. Lines are `json.dumps(record)` with the
default `ensure_ascii=True`, one per line, as `jsonl_writer` writes them.

Where each field comes from here (the JSON report document's per-problem dict):

    id, difficulty          `id`, `difficulty`
    problem, starter_code   `question`, `starter_code`  (else the plan's `Problem`, passed as plan_problems)
    predicted_code          `program`, or None for a `no_code` verdict
    raw                     `raw` (the model text behind the program, cut to 2,000 characters)
    pass, total             `tests_passed`, `tests_total`
    pass_rate, em           computed from those, as the runners do (em is 1.0 only for a `pass` verdict)
    error                   `error` (why producing the program failed); else, for a problem whose score is
                            not a measurement of the program, the reason: a `broken` problem (its tests are
                            unusable) or an `incomplete` one (not every test ran). None otherwise.

With several samples per problem (pass@k), the record is the sample whose program the document keeps (the
failing sample it reports, else the first), with that sample's tests passed, verdict and per-sample total.

A field the document does not carry for a problem (it keeps `program` for failing problems only) is taken
from the plan: `plan_problems` (the plan's `Problem` objects or their dicts) gives `question` and
`starter_code`, and `candidates` (problem id -> the plan's `Candidate` list or dicts) gives `program` and `raw`
from the first sample.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.writing import replacing

PROBLEM_CHARS = 400
RAW_CHARS = 2000
FIELDS = (
    "id",
    "problem",
    "starter_code",
    "predicted_code",
    "pass",
    "total",
    "pass_rate",
    "em",
    "difficulty",
    "raw",
    "error",
)


def _as_dict(obj: Any) -> Mapping[str, Any]:
    if isinstance(obj, Mapping):
        return obj
    to_dict = getattr(obj, "to_dict", None)
    return to_dict() if callable(to_dict) else vars(obj)


def _first_candidate(candidates: Mapping[str, Any] | None, pid: str) -> Mapping[str, Any]:
    if not candidates:
        return {}
    found = candidates.get(pid)
    if isinstance(found, (list, tuple)):
        found = found[0] if found else None
    return _as_dict(found) if found is not None else {}


def prediction_record(
    problem: Mapping[str, Any],
    plan_problem: Mapping[str, Any] | None = None,
    candidate: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The predictions.jsonl record of one problem of the report document."""
    plan_problem = plan_problem or {}
    candidate = candidate or {}
    verdict = problem.get("verdict")
    question = problem.get("question")
    if question is None:
        question = plan_problem.get("question")
    starter = problem.get("starter_code")
    if starter is None:
        starter = plan_problem.get("starter_code")
    code = problem.get("program")
    if code is None and verdict != "no_code":
        code = candidate.get("code")
    if verdict == "no_code":
        code = None
    raw = problem.get("raw")
    if raw is None:
        raw = candidate.get("raw")
    passed = int(problem.get("tests_passed") or 0)
    total = int(problem.get("tests_total") or 0)
    samples = problem.get("sample_results") or []
    if len(samples) > 1:
        # Several samples: the record is the one sample whose program is shown (the failing sample the
        # report kept, else the first), with its own scores, as a runner's one-program record.
        chosen = next((x for x in samples if problem.get("first_failure")
                       and x.get("first_failure") == problem.get("first_failure")), samples[0])
        total //= len(samples)
        passed = int(chosen.get("tests_passed") or 0)
        verdict = chosen.get("verdict")
    # Scored as having code when the run had a program, even if the document does not carry its text.
    has_code = verdict != "no_code" and bool(code or problem.get("candidate"))
    pass_rate = passed / total if total and has_code else 0.0
    error = problem.get("error")
    if error is None and verdict in ("broken", "incomplete"):
        error = f"{verdict}: {problem.get('reason') or ''}".rstrip(": ")
    return {
        "id": str(problem.get("id")),
        "problem": (question or "").strip()[:PROBLEM_CHARS],
        "starter_code": (starter or "").rstrip(),
        "predicted_code": code if code else None,
        "pass": passed if has_code else 0,
        "total": total,
        "pass_rate": pass_rate,
        "em": 1.0 if verdict == "pass" and has_code and pass_rate == 1.0 else 0.0,
        "difficulty": problem.get("difficulty"),
        "raw": (raw or "")[:RAW_CHARS],
        "error": error or None,
    }


def prediction_records(
    document: Mapping[str, Any],
    plan_problems: Iterable[Any] | None = None,
    candidates: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One record per problem of the report document, in the document's (dataset) order.

    `plan_problems` (the plan's `Problem` objects, or dicts) supplies `question` and `starter_code`
    where the document lacks them; `candidates` (problem id -> `Candidate` list, or dicts) supplies the
    program and model text of the first sample.
    """
    by_id = {str(d.get("id")): d for d in (_as_dict(p) for p in (plan_problems or ()))}
    return [
        prediction_record(p, by_id.get(str(p.get("id"))), _first_candidate(candidates, str(p.get("id"))))
        for p in document.get("problems") or []
    ]


def write_predictions(records: Iterable[Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Write the records as JSON lines, atomically (a reader never sees half a file)."""
    path = Path(path)
    with replacing(path) as out:
        for record in records:
            out.write(json.dumps(record) + "\n")
    return path


__all__ = ["FIELDS", "prediction_record", "prediction_records", "write_predictions"]
