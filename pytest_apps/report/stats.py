"""Confidence intervals and the paired test behind the report's figures. Pure functions of counts and scores.
Why these methods: docs/reports.md, "Figures and intervals".

- `clopper_pearson`: the Clopper-Pearson ("exact") interval for a proportion (strict accuracy with one
  program per problem: k of n problems passed). Its coverage is at least the nominal level for every true
  proportion and every n, which matters here: a run of 1 to 5 problems is common, and there Wilson's
  interval covers as little as 79% (one problem passing 80 to 85% of the time).
- `mean_interval` with `effective_count`: a mean of per-problem scores in [0, 1] (with several samples,
  pass@1 is the mean over problems of the share of passing samples; pass@k likewise) as Clopper-Pearson on
  an effective number of pass-or-fail trials. It is the number of problems unless at least
  VARIANCE_PROBLEMS problems show that their samples carry more (see `effective_count`).
- `square_and_add`: the difference of two such means over the same problems, by Newcombe's square-and-add.
- `wilson`: the Wilson score interval, inside `newcombe_paired` (Wilson 1927; Newcombe 1998).
- `newcombe_paired`: the interval for the difference of two paired proportions (the same problems, pass or
  not, in two runs): Newcombe's hybrid score ("square-and-add") interval with his continuity-corrected
  correlation term (Newcombe 1998, "Improved confidence intervals for the difference between binomial
  proportions based on paired data", method 10).
- `mcnemar_exact`: McNemar's exact test, two-sided: under "no change" each problem whose verdict changed is
  as likely to have gone either way, so the count one way is Binomial(changed, 1/2).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

LEVEL = 0.95
# from this many problems on, the spread of per-problem scores is measured well enough to credit the samples
VARIANCE_PROBLEMS = 30

WILSON = "wilson"
CLOPPER_PEARSON = "clopper-pearson"
EFFECTIVE = "clopper-pearson effective"  # on an effective count of problems (several samples; pass@k)
SQUARE_AND_ADD = "square-and-add"  # Newcombe's construction over two runs' effective-count intervals
BOOTSTRAP = "bootstrap"
NEWCOMBE = "newcombe"
PAIRED_BOOTSTRAP = "paired bootstrap"


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: str
    effective: float | None = None  # the effective count of problems the interval rests on, when it has one

    def to_dict(self, digits: int = 6) -> dict[str, float | str]:
        out: dict[str, float | str] = {"low": round(self.low, digits), "high": round(self.high, digits),
                                       "method": self.method}
        if self.effective is not None:
            out["effective_problems"] = round(self.effective, 3)
        return out


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


def clopper_pearson(successes: float, n: float, level: float = LEVEL, method: str = CLOPPER_PEARSON,
                    effective: float | None = None) -> Interval | None:
    """The Clopper-Pearson ("exact") interval for `successes` of `n`; None when n is 0. Both may be real
    numbers (an effective count): the bounds are the Beta quantiles that the binomial tails equal for
    whole numbers, Beta(x, n-x+1) at (1-level)/2 and Beta(x+1, n-x) at (1+level)/2."""
    if n <= 0:
        return None
    if not 0 <= successes <= n * (1 + 1e-12):
        raise ValueError(f"clopper_pearson needs 0 <= successes <= n (got {successes} of {n})")
    low, high = _bounds(float(min(successes, n)), float(n), level)
    return Interval(low, high, method, effective)


@functools.lru_cache(maxsize=1024)
def _bounds(successes: float, n: float, level: float) -> tuple[float, float]:
    # a summary asks for the same interval several times (all problems, those with code, pass@1, a tier); one
    # interval at a time in plain Python, as numpy's import alone costs a run of one case more than all of them
    tail = (1 - level) / 2
    low = beta_quantile_one(tail, successes, n - successes + 1) if successes > 0 else 0.0
    high = beta_quantile_one(1 - tail, successes + 1, n - successes) if successes < n else 1.0
    return low, high


def clopper_pearson_bounds(successes: Sequence[float], n: Sequence[float], level: float = LEVEL) -> tuple[Any, Any]:
    """`clopper_pearson`'s bounds for many (successes, n) at once, as two numpy arrays."""
    import numpy as np

    x, m = np.asarray(successes, dtype=float), np.asarray(n, dtype=float)
    tail = (1 - level) / 2
    low = np.zeros_like(x)
    high = np.ones_like(x)
    some = x > 0
    if some.any():
        low[some] = beta_quantile(tail, x[some], m[some] - x[some] + 1)
    short = x < m
    if short.any():
        high[short] = beta_quantile(1 - tail, x[short] + 1, m[short] - x[short])
    return low, high


def beta_quantile(q: float, a: Any, b: Any, most: int = 100) -> Any:
    """The `q` quantile of Beta(a, b) for arrays a, b > 0: Newton steps on the regularized incomplete beta
    function, kept inside a shrinking bracket (a bisection step whenever Newton would leave it); precise to
    about 1e-12."""
    import numpy as np

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    lgamma = np.vectorize(math.lgamma, otypes=[float])
    log_beta = lgamma(a) + lgamma(b) - lgamma(a + b)
    lo, hi = np.zeros_like(a), np.ones_like(a)
    x = a / (a + b)
    active = np.arange(a.size)  # the quantiles not yet found: each step works on those only
    a, b, log_beta, lo, hi, x = a.ravel(), b.ravel(), log_beta.ravel(), lo.ravel(), hi.ravel(), x.ravel()
    for _ in range(most):
        if active.size == 0:
            break
        aa, bb, lb, xx = a[active], b[active], log_beta[active], x[active]
        value = incomplete_beta(aa, bb, xx, lb)
        below = value < q
        lo[active] = np.where(below, xx, lo[active])
        hi[active] = np.where(below, hi[active], xx)
        inner = np.clip(xx, 1e-300, 1 - 1e-16)
        density = np.exp((aa - 1) * np.log(inner) + (bb - 1) * np.log1p(-inner) - lb)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            newton = xx - (value - q) / density
        l, h = lo[active], hi[active]
        inside = np.isfinite(newton) & (newton >= l) & (newton <= h)
        following = np.where(inside, newton, (l + h) / 2)
        x[active] = following
        done = (np.abs(following - xx) < 1e-12) | (np.abs(value - q) < 1e-14) | (h - l < 1e-12)
        active = active[~done]
    return x


def beta_quantile_one(q: float, a: float, b: float, most: int = 100) -> float:
    """`beta_quantile` for one Beta(a, b), in plain Python (the same steps, the same precision)."""
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    lo, hi = 0.0, 1.0
    x = a / (a + b)
    for _ in range(most):
        value = incomplete_beta_one(a, b, x, log_beta)
        if value < q:
            lo = x
        else:
            hi = x
        inner = min(max(x, 1e-300), 1 - 1e-16)
        try:
            density = math.exp((a - 1) * math.log(inner) + (b - 1) * math.log1p(-inner) - log_beta)
            newton = x - (value - q) / density
        except (OverflowError, ZeroDivisionError):
            newton = math.nan
        following = newton if math.isfinite(newton) and lo <= newton <= hi else (lo + hi) / 2
        done = abs(following - x) < 1e-12 or abs(value - q) < 1e-14 or hi - lo < 1e-12
        x = following
        if done:
            break
    return x


def incomplete_beta_one(a: float, b: float, x: float, log_beta: float | None = None) -> float:
    """`incomplete_beta` for one (a, b, x), in plain Python."""
    if log_beta is None:
        log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    x = min(max(x, 0.0), 1.0)
    swap = x > (a + 1) / (a + b + 2)
    aa, bb, xx = (b, a, 1 - x) if swap else (a, b, x)
    if 0 < xx < 1:
        front = math.exp(aa * math.log(xx) + bb * math.log1p(-xx) - log_beta)
        part = front * _beta_fraction_one(aa, bb, xx) / aa
    else:
        part = 1.0 if xx >= 1 else 0.0
    return 1 - part if swap else part


def _beta_fraction_one(a: float, b: float, x: float, most: int = 10_000, eps: float = 1e-14) -> float:
    tiny = 1e-300

    def nonzero(v: float) -> float:
        return tiny if abs(v) < tiny else v

    qab, qap, qam = a + b, a + 1, a - 1
    c = 1.0
    d = 1 / nonzero(1 - qab * x / qap)
    h = d
    for m in range(1, most + 1):
        m2 = 2 * m
        step = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 / nonzero(1 + step * d)
        c = nonzero(1 + step / c)
        change = d * c
        step = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 / nonzero(1 + step * d)
        c = nonzero(1 + step / c)
        last = d * c
        h *= change * last
        if abs(last - 1) < eps:
            break
    return h


def incomplete_beta(a: Any, b: Any, x: Any, log_beta: Any = None) -> Any:
    """The regularized incomplete beta function I_x(a, b) for arrays, by its continued fraction (modified
    Lentz), evaluated on the side of the mean where it converges fast (Press et al., Numerical Recipes 6.4).
    `log_beta`: log B(a, b) when the caller has it."""
    import numpy as np

    a, b, x = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float), np.asarray(x, float))
    if log_beta is None:
        lgamma = np.vectorize(math.lgamma, otypes=[float])
        log_beta = lgamma(a) + lgamma(b) - lgamma(a + b)
    x = np.clip(x, 0.0, 1.0)
    swap = x > (a + 1) / (a + b + 2)
    aa, bb, xx = np.where(swap, b, a), np.where(swap, a, b), np.where(swap, 1 - x, x)
    inside = (xx > 0) & (xx < 1)
    safe = np.where(inside, xx, 0.5)
    log_front = aa * np.log(safe) + bb * np.log1p(-safe) - log_beta
    fraction = _beta_fraction(aa, bb, safe).reshape(safe.shape)
    part = np.where(inside, np.exp(log_front) * fraction / aa, np.where(xx >= 1, 1.0, 0.0))
    return np.where(swap, 1 - part, part)


def _beta_fraction(a: Any, b: Any, x: Any, most: int = 10_000, eps: float = 1e-14) -> Any:
    import numpy as np

    tiny = 1e-300

    def nonzero(v: Any) -> Any:
        return np.where(np.abs(v) < tiny, tiny, v)

    qab, qap, qam = a + b, a + 1, a - 1
    c = np.ones_like(x)
    d = 1 / nonzero(1 - qab * x / qap)
    h = d.copy()
    active = np.arange(x.size)  # the fractions not yet converged: each step works on those only
    a, b, x, qab, qap, qam, c, d, h = (v.ravel().copy() for v in (a, b, x, qab, qap, qam, c, d, h))
    for m in range(1, most + 1):
        if active.size == 0:
            break
        aa, bb, xx, cc, dd = a[active], b[active], x[active], c[active], d[active]
        m2 = 2 * m
        step = m * (bb - m) * xx / ((qam[active] + m2) * (aa + m2))
        dd = 1 / nonzero(1 + step * dd)
        cc = nonzero(1 + step / cc)
        change = dd * cc
        step = -(aa + m) * (qab[active] + m) * xx / ((aa + m2) * (qap[active] + m2))
        dd = 1 / nonzero(1 + step * dd)
        cc = nonzero(1 + step / cc)
        last = dd * cc
        h[active] *= change * last
        c[active], d[active] = cc, dd
        active = active[np.abs(last - 1) >= eps]
    return h


def effective_count(values: Sequence[float], cap: float) -> float:
    """How many independent pass-or-fail trials the mean of `values` (per-problem scores in [0, 1]) is worth,
    between the number of problems and `cap` (what the samples could be worth at most).

    A score in [0, 1] with mean p varies at most as a single pass-or-fail trial does, p(1 - p): that is the
    case when every problem either always passes or never does, and then samples add nothing. So the count
    is never below the number of problems. It rises above it only as far as the spread of the scores shows
    (p(1 - p) over the variance of a score, times the problems), measured only from VARIANCE_PROBLEMS
    problems on, and only when the scores are not all 0 or all 1 (all failing says nothing about how
    rarely a problem is solved)."""
    n = len(values)
    if n == 0:
        return 0.0
    mean = sum(values) / n
    if n < VARIANCE_PROBLEMS or cap <= n or mean <= 0.0 or mean >= 1.0:
        return float(n)
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    if variance <= 0.0:
        return float(cap)
    return float(min(cap, max(n, n * mean * (1 - mean) / variance)))


def mean_interval(values: Sequence[float], cap: float | None = None, level: float = LEVEL) -> Interval | None:
    """The interval for the mean of per-problem scores in [0, 1] (None for no problems): Clopper-Pearson on
    the effective count (see `effective_count`). `cap`: the most the scores could be worth as trials (the
    number of samples; default the number of problems, as with one program per problem)."""
    n = len(values)
    if n == 0:
        return None
    cap = float(n if cap is None else max(cap, n))
    effective = effective_count(values, cap)
    mean = min(1.0, max(0.0, sum(values) / n))
    if cap <= n:
        return clopper_pearson(mean * n, n, level)
    return clopper_pearson(mean * effective, effective, level, EFFECTIVE, effective)


def square_and_add(then: Sequence[float], now: Sequence[float], then_cap: float | None = None,
                   now_cap: float | None = None, level: float = LEVEL) -> Interval | None:
    """Interval for mean(now) - mean(then) over the same problems (paired scores in [0, 1]): Newcombe's
    square-and-add of the two runs' `mean_interval`s, with the correlation of the paired scores corrected
    as his method 10 corrects the phi coefficient (its covariance less 1/(2n), 0 when that leaves nothing),
    so that with pass-or-fail scores the correction is his. None for no problems."""
    n = len(now)
    if n == 0 or len(then) != n:
        return None
    w, t = mean_interval(now, now_cap, level), mean_interval(then, then_cap, level)
    assert w is not None and t is not None
    p1, p2 = sum(now) / n, sum(then) / n
    cov = sum(a * b for a, b in zip(now, then)) / n - p1 * p2
    spread = math.sqrt(max(sum(a * a for a in now) / n - p1 * p1, 0.0) * max(sum(b * b for b in then) / n - p2 * p2, 0.0))
    phi = 0.0
    if spread > 0:
        if cov > 1 / (2 * n):
            phi = min(1.0, (cov - 1 / (2 * n)) / spread)
        elif cov < 0:
            phi = max(-1.0, cov / spread)
    d = p1 - p2
    below = (p1 - w.low) ** 2 + (t.high - p2) ** 2 - 2 * phi * (p1 - w.low) * (t.high - p2)
    above = (p2 - t.low) ** 2 + (w.high - p1) ** 2 - 2 * phi * (p2 - t.low) * (w.high - p1)
    low = d - math.sqrt(max(below, 0.0))
    high = d + math.sqrt(max(above, 0.0))
    return Interval(max(-1.0, low), min(1.0, high), SQUARE_AND_ADD)


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
    "Interval", "wilson", "clopper_pearson", "clopper_pearson_bounds", "beta_quantile", "incomplete_beta",
    "effective_count", "mean_interval", "square_and_add", "newcombe_paired", "mcnemar_exact",
    "z_for", "LEVEL", "WILSON", "CLOPPER_PEARSON", "EFFECTIVE", "SQUARE_AND_ADD", "BOOTSTRAP", "NEWCOMBE",
    "PAIRED_BOOTSTRAP", "VARIANCE_PROBLEMS",
]
