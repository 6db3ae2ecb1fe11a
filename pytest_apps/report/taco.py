"""What a TACO run adds to the summary: the limits each problem ran under (``--apps-limits``), and TACO's
special-judge list (``--apps-special-judge``): how many selected problems it marks, by kind, and the problems that
need a checker and had none, counted apart (their verdicts rest on comparing with one of several right outputs).
Pure data; the front ends call :func:`annotate` on a finished summary."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..dataset.problems import Problem, SkippedRow
from ..engine.limits import limit_of
from ..judge.special import KIND_NAMES, SpecialJudges
from .rollup import Summary

NEEDS_CHECKER_REASON = "needs a checker (several right outputs in TACO's special-judge list) and has none"


def needing_checker(problems: Iterable[Problem], special: SpecialJudges | None, checked: Iterable[str]) -> list[str]:
    """Ids of the problems the list marks as having several right outputs, without a checker of their own."""
    if special is None:
        return []
    have = set(checked)
    return [p.id for p in problems if special.needs_checker(p.id) and p.id not in have]


def exclude_needing_checker(problems: Sequence[Problem], special: SpecialJudges | None, checked: Iterable[str]
                            ) -> tuple[list[Problem], list[SkippedRow]]:
    """``--apps-needs-checker exclude``: the problems kept, and the ones left out as skipped rows (counted)."""
    out = set(needing_checker(problems, special, checked))
    kept = [p for p in problems if p.id not in out]
    skipped = [SkippedRow(p.index, p.id, NEEDS_CHECKER_REASON) for p in problems if p.id in out]
    return kept, skipped


def annotate(summary: Summary, problems: Sequence[Problem], *, special: SpecialJudges | None = None,
             checked: Iterable[str] = (), row_limits: bool = False, timeout: float = 4.0, memory: int = 0,
             scale: float = 1.0, excluded: int = 0) -> Summary:
    """Each result's limits and special-judge kind, and the run's ``limits`` and ``special_judge`` figures."""
    by_id = {p.id: p for p in problems}
    unreadable = []
    under_row = 0
    for r in summary.problems:
        problem = by_id.get(r.id)
        if problem is None:
            continue
        r.limits = limit_of(problem, row_limits, timeout, memory, scale)
        under_row += r.limits["mode"] == "row"
        if problem.limit_error:
            unreadable.append({"problem": r.id, "reason": problem.limit_error})
        if special is not None and special.kind(r.id) is not None:
            r.special_judge = KIND_NAMES[special.kind(r.id)]
    summary.figures["limits"] = {"mode": "row" if row_limits else "fixed", "under_row_limits": under_row,
                                 "unreadable": unreadable}
    if special is not None:
        needing = set(needing_checker(problems, special, checked))
        members = [r for r in summary.problems if r.id in needing]
        passed = sum(r.passed for r in members)
        summary.figures["special_judge"] = {
            "list": special.path,
            "marked": special.counts(r.id for r in summary.problems),
            "needs_checker": {"problems": len(members), "passed": passed, "ids": [r.id for r in members],
                              "share_of_problems": round(len(members) / len(summary.problems), 6) if summary.problems
                              else None},
            "excluded": excluded,
        }
    return summary


def lines(figures: dict[str, Any]) -> list[str]:
    """The terminal's lines for the limits and the special-judge list."""
    out = []
    limits = figures.get("limits") or {}
    if limits.get("mode") == "row":
        out.append(f"limits: {limits['under_row_limits']} problems under their row's own limits, the others under "
                   "the fixed ones")
    for bad in (limits.get("unreadable") or [])[:10]:
        out.append(f"row limit not read (fixed limits used): problem {bad['problem']}: {bad['reason']}")
    spj = figures.get("special_judge")
    if spj:
        marked = ", ".join(f"{k} {n}" for k, n in spj["marked"].items() if n) or "none"
        need = spj["needs_checker"]
        text = f"special judges (TACO's list): {marked} among the selected problems"
        if need["problems"]:
            text += (f"; {need['problems']} need a checker and have none (scored by comparing with one right output:"
                     f" {need['passed']} passed, in doubt)")
        if spj.get("excluded"):
            text += f"; {spj['excluded']} left out of the score (--apps-needs-checker exclude)"
        out.append(text)
    return out
