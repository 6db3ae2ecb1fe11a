"""95% confidence intervals over problems for the run's headline figures (`summary.intervals`).

A problem is the unit: the benchmark's problems are a sample of the problems a model could meet, and the
figures are means over them. With one program per problem strict accuracy is a plain proportion (k of n
problems passed) and gets the Clopper-Pearson interval; with several samples per problem it is an estimate
of pass@1, the mean of per-problem shares of passing samples, and pass@k a mean of per-problem estimates:
those get Clopper-Pearson on an effective count of problems (`stats.effective_count`), which is the number
of problems unless enough problems show that their samples carry more. The per-tier figures use the same
method as the whole run. Why these methods: docs/reports.md, "Figures and intervals".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.wording import counted
from .passk import pass_at_k
from .stats import LEVEL, Interval, clopper_pearson
from .stats import mean_interval as score_interval


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
    """Strict accuracy's interval over `units`: Clopper-Pearson on k of n problems, or with samples on the
    effective count of problems (at most the number of samples)."""
    if not sampled:
        if not units:
            return None
        return clopper_pearson(sum(1 for u in units if u.samples and u.passed >= u.samples), len(units), level)
    return score_interval([u.score for u in units], sum(max(u.samples, 1) for u in units), level)


def pass_at_k_interval(units: Sequence[Unit], k: int, level: float = LEVEL) -> Interval | None:
    """pass@k's interval: Clopper-Pearson on the effective count of problems, which the samples can raise at
    most to their disjoint sets of k per problem (the unbiased estimator varies no less than their mean)."""
    values = [pass_at_k(u.samples, u.passed, k) if u.samples else 0.0 for u in units]
    return score_interval(values, sum(max(u.samples // k, 1) for u in units), level)


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
        pass_k[f"pass@{k}"] = _plain(pass_at_k_interval(units, k, level))
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


def pct(value: Any, digits: int = 2) -> str:
    """A share as a percentage with `digits` places ("12.50%"), or "n/a" when there is none."""
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def is_sampled(figures: Any) -> bool:
    """Whether a run's figures come from several samples per problem (then they are estimates of pass@1)."""
    return int(((figures or {}).get("samples") or {}).get("max") or 0) > 1


def counts_text(passed: Any, problems: Any, samples: Any = None, samples_passing: Any = None,
                sampled: bool = False) -> str:
    """What a figure counts: `5/6 problems`, or with several samples `1 of 8 samples passing, 4 problems`."""
    if sampled and samples is not None:
        return f"{samples_passing or 0} of {counted(samples, 'sample')} passing, {counted(problems, 'problem')}"
    return f"{passed}/{counted(problems, 'problem')}"


def sampled_counts(figures: Any) -> str:
    """`8 samples of 4 problems`: what pass@k with several samples is estimated from."""
    f = figures or {}
    n, total = f.get("problems", 0), (f.get("samples") or {}).get("total", 0)
    return f"{counted(total, 'sample')} of {counted(n, 'problem')}"


def samples_per_problem(figures: Any) -> str:
    """`13`, or `1 to 13` when problems have different numbers of samples."""
    samples = (figures or {}).get("samples") or {}
    low, high = samples.get("min", 0), samples.get("max", 0)
    return f"{high}" if low == high else f"{low} to {high}"


# The groups a run's problems are counted in (tiers, TACO's skill types and tags), and where the figures hold the
# samples behind each group's figure.
GROUPS = ("per_tier", "per_skill", "per_tag")
SAMPLES_OF = {"per_tier": "samples_per_tier", "per_skill": "samples_per_skill", "per_tag": "samples_per_tag"}


def figure_texts(figures: Any) -> dict[str, Any]:
    """The headline figures as every report writes them (terminal, JSON `summary.figure_texts`, HTML,
    Markdown): the value, what it counts, and its interval. With several samples strict accuracy is marked an
    estimate of pass@1 and counts samples: `12.50% (pass@1 estimate: 1 of 8 samples passing, 4 problems),
    95% CI 0.0-71.6%`. Unscored problems (no verdict: a harness error) are out of the counts and said so:
    `50.00% (1/2 problems; 1 unscored problem left out), ...`. Per tier, skill and tag without the label: `0.00% (0 of 3 samples passing, 2 problems,
    95% CI ...)`."""
    f = figures or {}
    ci = f.get("intervals") or {}
    level = ci.get("level")
    sampled = is_sampled(f)
    label = "pass@1 estimate: " if sampled else ""

    unscored = f.get("unscored") or 0
    left_out = f"; {counted(unscored, 'unscored problem')} left out" if unscored else ""

    def line(value: Any, counts: str, interval: Any) -> str:
        text = ci_text(interval, level)
        return f"{pct(value)} ({label}{counts}{left_out})" + (f", {text}" if text else "")

    with_code = f.get("samples_with_code") or {}
    out: dict[str, Any] = {
        "strict_accuracy": line(f.get("strict_accuracy"), counts_text(
            f.get("passed", 0), f.get("problems", 0), (f.get("samples") or {}).get("total"), f.get("samples_passing"),
            sampled), ci.get("strict_accuracy")),
        "strict_accuracy_with_code": line(f.get("strict_accuracy_with_code"), counts_text(
            f.get("passed", 0), f.get("problems_with_code", 0), with_code.get("samples"),
            with_code.get("samples_passing"), sampled), ci.get("strict_accuracy_with_code")),
    }
    for key in GROUPS:
        counted_by_name = f.get(SAMPLES_OF[key]) or {}
        out[key] = {}
        for name, t in (f.get(key) or {}).items():
            if not t.get("problems"):
                continue
            tally = counted_by_name.get(name) or {}
            counts = counts_text(t.get("passed", 0), t["problems"], tally.get("samples"),
                                 tally.get("samples_passing"), sampled)
            if not sampled:
                counts = f"{t.get('passed', 0)}/{t['problems']}"
            text = ci_text((ci.get(key) or {}).get(name), level)
            out[key][name] = f"{pct(t.get('strict_accuracy'))} ({counts}" + (f", {text}" if text else "") + ")"
    return out


__all__ = ["GROUPS", "SAMPLES_OF", "Unit", "group_intervals", "figure_texts", "sampled_counts", "counts_text", "is_sampled", "interval_figures", "mean_interval", "pass_at_k_interval", "range_text", "ci_text", "points_range", "points_text"]
