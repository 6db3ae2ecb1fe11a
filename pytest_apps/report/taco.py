"""What a TACO run adds to the summary: the limits each problem ran under (``--apps-limits``), and TACO's
special-judge list (``--apps-special-judge``): how many selected problems it marks, by kind, and the problems that
need a checker and had none, counted apart (their verdicts rest on comparing with one of several right outputs).
Pure data: the front ends gather the facts (`engine.special.taco_facts`) and call :func:`annotate`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.wording import counted
from .rollup import Summary

KINDS = ("several right outputs", "case-insensitive", "floating-point")


def annotate(summary: Summary, facts: Mapping[str, Any]) -> Summary:
    """Each result's ``limits`` and ``special_judge`` kind, and the run's ``limits`` and ``special_judge``
    figures."""
    limits = facts.get("limits") or {}
    special = facts.get("special")
    kinds = (special or {}).get("kinds") or {}
    unreadable = []
    for r in summary.problems:
        r.limits = dict(limits.get(r.id) or {})
        if "unreadable" in r.limits:
            unreadable.append({"problem": r.id, "reason": r.limits["unreadable"]})
        r.special_judge = kinds.get(r.id, "")
    summary.figures["limits"] = {"mode": "row" if facts.get("row_limits") else "fixed",
                                 "under_row_limits": sum(r.limits.get("mode") == "row" for r in summary.problems),
                                 "unreadable": unreadable}
    summary.figures["special_judge"] = None  # no --apps-special-judge list
    if special is not None:
        needing = set(special.get("needing") or ())
        members = [r for r in summary.problems if r.id in needing]
        marked = {kind: 0 for kind in KINDS}
        for r in summary.problems:
            if r.special_judge:
                marked[r.special_judge] = marked.get(r.special_judge, 0) + 1
        total = len(summary.problems)
        summary.figures["special_judge"] = {
            "list": special.get("list", ""),
            "marked": marked,
            "needs_checker": {"problems": len(members), "passed": sum(r.passed for r in members),
                              "ids": [r.id for r in members],
                              "share_of_problems": round(len(members) / total, 6) if total else None},
            "excluded": int(special.get("excluded") or 0),
        }
    return summary


def lines(figures: Mapping[str, Any]) -> list[str]:
    """The terminal's lines for the limits and the special-judge list."""
    out = []
    limits = figures.get("limits") or {}
    if limits.get("mode") == "row":
        out.append(f"limits: {counted(limits['under_row_limits'], 'problem')} under their row's own limits, the "
                   "others under the fixed ones")
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
