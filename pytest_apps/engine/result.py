"""What running one case gives: the judge's verdict, what the executor saw, and the case's data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.outcome import Outcome, Verdict


@dataclass(frozen=True)
class CaseResult:
    verdict: Verdict
    outcome: Outcome | None  # None when nothing ran (no code)
    input: Any
    expected: Any
    borderline: bool = False  # the program's own time is within the borderline band of the time limit
    audit: dict[str, str] = field(default_factory=dict)  # reference runs: see engine.run.reference_audit
    undercredited: bool = False  # over the limit, within it at the mean slowdown measured around it (limits.py)
    starved: bool = False  # stopped by the wall-clock backstop before its own time reached the limit (limits.py)
