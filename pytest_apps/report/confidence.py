"""95% confidence intervals over problems for the run's headline figures (`summary.intervals`).

A problem is the unit: the benchmark's problems are a sample of the problems a model could meet, and the
figures are means over them. With one program per problem strict accuracy is a plain proportion (k of n
problems passed) and gets the Wilson interval; with several samples per problem it is a mean of per-problem
shares, and pass@k a mean of per-problem estimates, which get a percentile bootstrap over problems with a
fixed seed (see `stats`). The per-tier figures use the same method as the whole run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .passk import pass_at_k
from .stats import LEVEL, Interval, bootstrap_mean, wilson


@dataclass(frozen=True)
class Unit:
    """One problem as the intervals see it: its tier, its samples and how many passed, whether it had code."""

    tier: str
    samples: int
    passed: int
    with_code: bool = True

    @property
    def score(self) -> float:
        return self.passed / self.samples if self.samples else 0.0


def mean_interval(units: Sequence[Unit], sampled: bool, level: float = LEVEL) -> Interval | None:
    """Strict accuracy's interval over `units`: Wilson on k of n problems, or the bootstrap with samples."""
    if not sampled:
        return wilson(sum(1 for u in units if u.samples and u.passed >= u.samples), len(units), level)
    return bootstrap_mean([u.score for u in units], level)


def _plain(interval: Interval | None) -> dict[str, Any] | None:
    return None if interval is None else interval.to_dict()


def interval_figures(units: Sequence[Unit], tiers: Sequence[str], ks: Sequence[int], level: float = LEVEL) -> dict[str, Any]:
    """`summary.intervals`: level, and an interval (low, high, method) for strict accuracy, strict accuracy over
    problems with code, pass@k for each reported k, and strict accuracy per tier (None where nothing to
    measure)."""
    sampled = any(u.samples > 1 for u in units)
    overall = _plain(mean_interval(units, sampled, level))
    pass_k: dict[str, Any] = {}
    for k in ks:
        if k == 1:  # pass@1 is strict accuracy (the mean share of passing samples): the same interval
            pass_k["pass@1"] = overall
            continue
        values = [pass_at_k(u.samples, u.passed, k) if u.samples else 0.0 for u in units]
        pass_k[f"pass@{k}"] = _plain(bootstrap_mean(values, level))
    return {
        "level": level,
        "strict_accuracy": overall,
        "strict_accuracy_with_code": _plain(mean_interval([u for u in units if u.with_code], sampled, level)),
        "pass_at_k": pass_k,
        "per_tier": {t: _plain(mean_interval([u for u in units if u.tier == t], sampled, level)) for t in tiers},
    }


def group_intervals(groups: dict[str, Sequence[Unit]], sampled: bool, level: float = LEVEL) -> dict[str, Any]:
    """Strict accuracy's interval for each group of problems (a tag, a skill), by the method of the whole run."""
    return {name: _plain(mean_interval(units, sampled, level)) for name, units in groups.items()}


def range_text(interval: Any) -> str:
    """`29.4-55.8%` for an interval as the report holds it (a dict with low and high); "" for None."""
    return f"{100 * interval['low']:.1f}-{100 * interval['high']:.1f}%" if interval else ""


def ci_text(interval: Any, level: Any = LEVEL) -> str:
    """`95% CI 29.4-55.8%`; "" for None."""
    return f"{100 * float(level or LEVEL):g}% CI {range_text(interval)}" if interval else ""


def points_range(interval: Any) -> str:
    """`-5.1 to +9.3` (percentage points) for an interval of a difference; "" for None."""
    return f"{100 * interval['low']:+.1f} to {100 * interval['high']:+.1f}" if interval else ""


def points_text(interval: Any, level: Any = LEVEL) -> str:
    """`95% CI -5.1 to +9.3 points`; "" for None."""
    return f"{100 * float(level or LEVEL):g}% CI {points_range(interval)} points" if interval else ""


__all__ = ["Unit", "group_intervals", "interval_figures", "mean_interval", "range_text", "ci_text", "points_range", "points_text"]
