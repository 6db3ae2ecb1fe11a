"""Gates on the run's figures for CI: whether the run passes, and the line that says why."""

from __future__ import annotations

from dataclasses import dataclass

from .rollup import Summary


@dataclass(frozen=True)
class Gate:
    passed: bool
    message: str


def fail_under_verdict(threshold: float | None, summary: Summary) -> Gate | None:
    """`--apps-fail-under`: the run passes when strict accuracy is at or above the threshold (percent)."""
    if threshold is None:
        return None
    value = 100 * (summary.figures["strict_accuracy"] or 0.0)
    # compare at the precision the report prints, so 50.00% meets --apps-fail-under 50
    if round(value, 6) >= threshold:
        return Gate(True, f"strict accuracy {value:.2f}% meets --apps-fail-under {threshold:g}%")
    return Gate(False, f"FAIL: strict accuracy {value:.2f}% is below --apps-fail-under {threshold:g}%")
