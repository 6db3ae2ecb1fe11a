"""Confidence intervals and the paired test behind the report's figures. Pure functions of counts and scores.

- `wilson`: the Wilson score interval for a plain proportion (strict accuracy with one program per problem:
  k of n problems passed). Unlike the normal approximation it stays inside [0, 1] and does not collapse at
  0 of n or n of n (Wilson 1927; Newcombe 1998, "Two-sided confidence intervals for the single proportion").
- `bootstrap_mean`: a percentile bootstrap over problems for a mean of per-problem scores (pass@1 with
  several samples is the mean over problems of the share of passing samples; pass@k likewise), with a
  fixed seed so that a report is the same on every machine and every run.
- `newcombe_paired`: the interval for the difference of two paired proportions (the same problems, pass or
  not, in two runs): Newcombe's hybrid score ("square-and-add") interval with his continuity-corrected
  correlation term (Newcombe 1998, "Improved confidence intervals for the difference between binomial
  proportions based on paired data", method 10).
- `mcnemar_exact`: McNemar's exact test, two-sided: under "no change" each problem whose verdict changed is
  as likely to have gone either way, so the count one way is Binomial(changed, 1/2).

The bootstrap resamples problems with replacement. A resample's mean depends only on how often each
distinct score is drawn, and those counts are Multinomial(n, share of each score), so it draws the counts
(a few numbers per resample, even for the full split's 5,000 problems) instead of n indices. It uses numpy's
legacy `RandomState`, whose stream numpy keeps fixed across versions, and sorts the distinct scores first,
so the interval depends on the scores alone, not on the order of problems.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist

LEVEL = 0.95
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20210520  # fixed: the day APPS was published; any constant would do

WILSON = "wilson"
BOOTSTRAP = "bootstrap"
NEWCOMBE = "newcombe"
PAIRED_BOOTSTRAP = "paired bootstrap"


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: str

    def to_dict(self, digits: int = 6) -> dict[str, float | str]:
        return {"low": round(self.low, digits), "high": round(self.high, digits), "method": self.method}


def z_for(level: float = LEVEL) -> float:
    """The two-sided normal quantile: 1.959964 for 95%."""
    return NormalDist().inv_cdf(0.5 + level / 2)


def wilson(successes: int, n: int, level: float = LEVEL) -> Interval | None:
    """The Wilson score interval for `successes` of `n`; None when n is 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"wilson needs 0 <= successes <= n (got {successes} of {n})")
    z = z_for(level)
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # 0 of n and n of n: the bound on the observed side is exactly 0 or 1 (not 1e-17 off it)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(low, high, WILSON)


def bootstrap_mean(
    values: Iterable[float],
    level: float = LEVEL,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    method: str = BOOTSTRAP,
) -> Interval | None:
    """Percentile bootstrap interval for the mean of `values` (one per problem); None for no values.

    When every value is the same the interval is that value: the bootstrap sees no spread to resample."""
    counts = Counter(float(v) for v in values)
    n = sum(counts.values())
    if n == 0:
        return None
    distinct = sorted(counts)
    if len(distinct) == 1:
        return Interval(distinct[0], distinct[0], method)
    import numpy as np

    shares = np.array([counts[v] for v in distinct], dtype=float) / n
    draws = np.random.RandomState(seed).multinomial(n, shares, size=resamples)
    means = np.sort(draws @ np.array(distinct) / n)
    tail = (1 - level) / 2
    low = float(means[int(math.floor(tail * resamples))])
    high = float(means[int(math.ceil((1 - tail) * resamples)) - 1])
    return Interval(max(low, distinct[0]), min(high, distinct[-1]), method)


def newcombe_paired(both: int, now_only: int, then_only: int, neither: int, level: float = LEVEL) -> Interval | None:
    """Interval for p_now - p_then over the same n items, from the paired 2x2 table: `both` passed in both
    runs, `now_only` only now (newly passing), `then_only` only then (newly failing), `neither` in neither.
    Newcombe's method 10: Wilson intervals of the two proportions combined by square-and-add, with the
    correlation between them estimated with his continuity correction (0 when a margin is empty).
    None when n is 0."""
    n = both + now_only + then_only + neither
    if n == 0:
        return None
    now_pass, then_pass = both + now_only, both + then_only
    p1, p2 = now_pass / n, then_pass / n
    w1, w2 = wilson(now_pass, n, level), wilson(then_pass, n, level)
    assert w1 is not None and w2 is not None
    l1, u1, l2, u2 = w1.low, w1.high, w2.low, w2.high
    margins = now_pass * (n - now_pass) * then_pass * (n - then_pass)
    phi = 0.0
    if margins:
        a = both * neither - now_only * then_only
        if a > n / 2:
            phi = (a - n / 2) / math.sqrt(margins)
        elif a < 0:
            phi = a / math.sqrt(margins)
    d = p1 - p2
    below = (p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2)
    above = (p2 - l2) ** 2 + (u1 - p1) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1)
    low = d - math.sqrt(max(below, 0.0))
    high = d + math.sqrt(max(above, 0.0))
    return Interval(max(-1.0, low), min(1.0, high), NEWCOMBE)


def mcnemar_exact(newly_failing: int, newly_passing: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs: twice the smaller binomial tail of
    Binomial(b + c, 1/2), capped at 1; 1.0 when nothing changed. Computed with exact integers."""
    if newly_failing < 0 or newly_passing < 0:
        raise ValueError("mcnemar_exact needs counts of 0 or more")
    m = newly_failing + newly_passing
    if m == 0:
        return 1.0
    k = min(newly_failing, newly_passing)
    tail = sum(math.comb(m, i) for i in range(k + 1))
    return min(1.0, 2 * tail / 2**m)


__all__ = [
    "Interval", "wilson", "bootstrap_mean", "newcombe_paired", "mcnemar_exact", "z_for",
    "LEVEL", "WILSON", "BOOTSTRAP", "NEWCOMBE", "PAIRED_BOOTSTRAP",
]
