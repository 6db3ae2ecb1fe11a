"""The unbiased pass@k estimator of Chen et al. 2021 ("Evaluating Large Language Models Trained on Code").

With n samples of which c are correct, pass@k = 1 - C(n-c, k) / C(n, k): the chance that at least one of
k samples drawn without replacement is correct. The binomials overflow floats for realistic n, so it is
computed as the paper's numerically stable product 1 - prod_{i=n-c+1}^{n} (1 - k / i).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

KS = (1, 5, 10, 100)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem with `n` samples, `c` of them correct."""
    if not (0 <= c <= n) or k < 1:
        raise ValueError(f"pass@k needs 0 <= c <= n and k >= 1 (got n={n}, c={c}, k={k})")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples (got {n})")
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def ks_for(smallest: int, ks: Iterable[int] = KS) -> list[int]:
    """The k values reported for a run whose smallest problem has `smallest` samples."""
    return [k for k in ks if k <= smallest]


def mean_pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float | None:
    """Mean pass@k over problems given as (n, c); a problem with no samples scores 0. None for no problems."""
    if not counts:
        return None
    return sum(pass_at_k(n, c, k) if n else 0.0 for n, c in counts) / len(counts)
