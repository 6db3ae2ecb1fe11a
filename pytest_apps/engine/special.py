"""TACO's special-judge list applied to a run's problems: which need a checker and have none, leaving them out
(``--apps-needs-checker exclude``), and the plain data the report's TACO figures are made of."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..dataset.problems import Problem, SkippedRow
from ..judge.special import KIND_NAMES, SpecialJudges
from .spec import RunSpec

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


def taco_facts(problems: Sequence[Problem], spec: RunSpec, skipped: Iterable[SkippedRow] = ()) -> dict[str, Any]:
    """What `report.taco.annotate` needs, as plain data: each problem's limits under the run's `spec` and its
    special-judge kind, the problems needing a checker (and having none of the spec's), and how many of the
    `skipped` rows were left out for that."""
    judging = spec.judging
    special = judging.special
    checked = judging.checkers.problem_ids if judging.checkers is not None else ()
    facts: dict[str, Any] = {
        "row_limits": judging.row_limits,
        "limits": {p.id: spec.limit_of(p) for p in problems},
    }
    if special is not None:
        facts["special"] = {
            "list": special.path,
            "kinds": {p.id: KIND_NAMES[special.kind(p.id)] for p in problems if special.kind(p.id) is not None},
            "needing": needing_checker(problems, special, checked),
            "excluded": sum(s.reason == NEEDS_CHECKER_REASON for s in skipped),
        }
    return facts
