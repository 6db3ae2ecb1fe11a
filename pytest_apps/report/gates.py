"""Gates on the run's figures for CI: whether the run passes, and the line that says why."""

from __future__ import annotations

from dataclasses import dataclass

from .comparison import Comparison
from .rollup import Summary


@dataclass(frozen=True)
class Gate:
    passed: bool
    message: str


def fail_under_verdict(threshold: float | None, summary: Summary, incomplete: str | None = None) -> Gate | None:
    """`--apps-fail-under`: the run passes when strict accuracy is at or above the threshold (percent). An
    `incomplete` run (the line that says why) never passes."""
    if threshold is None:
        return None
    if incomplete:
        return Gate(False, f"FAIL: --apps-fail-under {threshold:g}% cannot pass an incomplete run ({incomplete})")
    value = 100 * (summary.figures["strict_accuracy"] or 0.0)
    # compare at the precision the report prints, so 50.00% meets --apps-fail-under 50
    if round(value, 6) >= threshold:
        return Gate(True, f"strict accuracy {value:.2f}% meets --apps-fail-under {threshold:g}%")
    return Gate(False, f"FAIL: strict accuracy {value:.2f}% is below --apps-fail-under {threshold:g}%")


def regression_verdict(enabled: bool, comparison: Comparison | None, incomplete: str | None = None) -> Gate | None:
    """`--apps-fail-on-regression`: the run fails when a problem that passed in the baseline does not pass now,
    and when the run is `incomplete` (the line that says why)."""
    if not enabled or comparison is None:
        return None
    if incomplete:
        return Gate(False, f"FAIL: --apps-fail-on-regression cannot pass an incomplete run ({incomplete})")
    fell = len(comparison.newly_failing)
    if not fell:
        return Gate(True, "no problem that passed in the baseline fails now (--apps-fail-on-regression)")
    return Gate(False, f"FAIL: {fell} problem{'s' if fell > 1 else ''} that passed in the baseline "
                       f"{'fail' if fell > 1 else 'fails'} now (--apps-fail-on-regression)")


def passed(gates: list[Gate | None]) -> bool | None:
    """Whether the run passes its gates (every one given must pass); None when no gate was asked for."""
    given = [g for g in gates if g is not None]
    return all(g.passed for g in given) if given else None
