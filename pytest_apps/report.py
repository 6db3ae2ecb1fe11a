"""The roll-up: per-case records in, per-problem verdicts and run figures out. Pure data, no pytest.

The denominator is always the set of selected problems, not the cases that happened to run: a problem
with a case that did not run (deselected, -x, --lf) is "incomplete" and scores 0, never "pass".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .dataset import TIERS, Problem, SkippedRow
from .outcome import ALL_KINDS, FAILURE_KINDS, NO_CODE, PASS

REPORT_VERSION = 1

# Problem verdicts
P_PASS = "pass"
P_FAIL = "fail"
P_NO_CODE = "no_code"
P_BROKEN = "broken"
P_INCOMPLETE = "incomplete"


@dataclass(frozen=True)
class CaseRecord:
    """What one (problem, sample, test) item produced, as sent from a worker to the controller."""

    problem: str
    case: int
    kind: str  # PASS or a failure kind, or "harness_error"
    sample: int = 0
    step: str = ""
    reason: str = ""
    time: float = 0.0
    memory: int = 0
    nodeid: str = ""
    detail: dict[str, Any] = field(default_factory=dict)  # failures only: input, expected, got (cut short)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseRecord:
        return cls(**data)


@dataclass
class ProblemResult:
    id: str
    difficulty: str
    format: str
    candidate: str | None
    verdict: str
    reason: str = ""
    tests_passed: int = 0
    tests_run: int = 0
    tests_total: int = 0
    first_failure: str = ""  # node id of the first failing case, ready to paste
    first_failure_detail: dict[str, Any] = field(default_factory=dict)  # its input, expected, got
    program: str | None = None  # the candidate program, kept for failing problems
    tests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.verdict == P_PASS

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Summary:
    problems: list[ProblemResult]
    skipped: list[SkippedRow]
    figures: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.figures,
            "skipped_rows": [s.to_dict() for s in self.skipped],
            "problems": [p.to_dict() for p in self.problems],
        }


def problem_result(
    problem: Problem, candidate: str | None, records: Iterable[CaseRecord]
) -> ProblemResult:
    by_case = {r.case: r for r in records}
    result = ProblemResult(
        id=problem.id,
        difficulty=problem.difficulty,
        format=problem.fmt,
        candidate=candidate,
        verdict=P_INCOMPLETE,
        tests_total=problem.n_cases,
    )
    if problem.broken:
        result.verdict, result.reason = P_BROKEN, problem.broken
        return result
    if candidate is None:
        result.verdict, result.reason = P_NO_CODE, "no candidate program"
        return result
    ordered = [by_case[i] for i in sorted(by_case)]
    result.tests = [
        {"case": r.case, "kind": r.kind, "step": r.step, "time": round(r.time, 6), "memory": r.memory}
        for r in ordered
    ]
    result.tests_run = len(ordered)
    result.tests_passed = sum(r.kind == PASS for r in ordered)
    failures = [r for r in ordered if r.kind != PASS]
    if failures:
        first = failures[0]
        result.verdict = P_FAIL
        result.reason = f"test {first.case}: {first.kind}" + (f" ({first.reason})" if first.reason else "")
        result.first_failure = first.nodeid
        result.first_failure_detail = dict(first.detail)
        if all(r.kind == "harness_error" for r in failures):
            result.verdict, result.reason = P_INCOMPLETE, "harness error: " + first.reason
    elif result.tests_run < result.tests_total:
        missing = result.tests_total - result.tests_run
        result.reason = f"{missing} of {result.tests_total} tests did not run"
    else:
        result.verdict = P_PASS
    return result


def summarize(
    problems: list[Problem],
    candidates: Mapping[str, str | None],
    skipped: list[SkippedRow],
    records: Iterable[CaseRecord],
    extra: Mapping[str, Any] | None = None,
) -> Summary:
    """Roll per-case records up into per-problem verdicts and the run's figures."""
    grouped: dict[str, list[CaseRecord]] = {}
    for record in records:
        grouped.setdefault(record.problem, []).append(record)
    results = [problem_result(p, candidates.get(p.id), grouped.get(p.id, [])) for p in problems]
    figures = figures_of(results)
    figures["skipped_rows"] = len(skipped)
    figures["skipped_reasons"] = dict(Counter(_reason_class(s.reason) for s in skipped))
    if extra:
        figures.update(extra)
    return Summary(results, skipped, figures)


def figures_of(results: list[ProblemResult]) -> dict[str, Any]:
    n = len(results)
    with_code = [r for r in results if r.verdict not in (P_NO_CODE, P_BROKEN)]
    passed = sum(r.passed for r in results)
    kinds: Counter[str] = Counter({k: 0 for k in ALL_KINDS})
    for r in results:
        if r.verdict == P_NO_CODE:
            kinds[NO_CODE] += max(r.tests_total, 1)
        for t in r.tests:
            kinds[t["kind"]] += 1
    per_tier = {}
    for tier in (*TIERS, *sorted({r.difficulty for r in results} - set(TIERS))):
        members = [r for r in results if r.difficulty == tier]
        if not members and tier not in TIERS:
            continue
        tier_passed = sum(r.passed for r in members)
        per_tier[tier] = {
            "problems": len(members),
            "passed": tier_passed,
            "strict_accuracy": _ratio(tier_passed, len(members)),
        }
    incomplete = [r.id for r in results if r.verdict == P_INCOMPLETE]
    return {
        "problems": n,
        "problems_with_code": len(with_code),
        "passed": passed,
        "strict_accuracy": _ratio(passed, n),
        "strict_accuracy_with_code": _ratio(passed, len(with_code)),
        "test_case_average": _ratio(
            sum(_ratio(r.tests_passed, r.tests_total) or 0.0 for r in results), n
        ),
        "test_case_average_partial": bool(incomplete),
        "per_tier": per_tier,
        "problem_verdicts": dict(Counter(r.verdict for r in results)),
        "outcomes": dict(kinds),
        "harness_errors": kinds.get("harness_error", 0),
        "incomplete": len(incomplete),
        "incomplete_problems": incomplete,
        "tests_run": sum(r.tests_run for r in results),
        "tests_total": sum(r.tests_total for r in results),
    }


def failing_nodeids(summary: Summary, most: int = 10) -> list[str]:
    return [r.first_failure for r in summary.problems if r.first_failure][:most]


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 6) if whole else None


def _reason_class(reason: str) -> str:
    """Group skip reasons for the header: the text before any detail in parentheses."""
    return reason.split(" (", 1)[0]


__all__ = [
    "CaseRecord",
    "ProblemResult",
    "Summary",
    "summarize",
    "failing_nodeids",
    "FAILURE_KINDS",
]
