"""The report's statistics against known values: Wilson intervals, Newcombe's paired difference interval and the
exact McNemar test; and the intervals the roll-up puts in the summary. (Clopper-Pearson, effective counts and
their coverage: test_intervals.py.)"""

from __future__ import annotations

import math

import pytest
from conftest import make_problem

from pytest_apps.core.record import CaseRecord
from pytest_apps.report.rollup import summarize
from pytest_apps.report.stats import clopper_pearson, mcnemar_exact, newcombe_paired, wilson, z_for


def close(interval, low, high, tol=5e-5):
    assert interval is not None
    assert interval.low == pytest.approx(low, abs=tol) and interval.high == pytest.approx(high, abs=tol), interval


# ----------------------------------------------------------------------------------------------- Wilson


@pytest.mark.parametrize("k, n, low, high", [
    (21, 50, 0.2938, 0.5577),  # the example: 42% on 50 problems, 29.4-55.8%
    # Newcombe 1998, "Two-sided confidence intervals for the single proportion", Table I, method 3
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
])
def test_wilson_matches_published_values(k, n, low, high):
    close(wilson(k, n), low, high)
    assert wilson(k, n).method == "wilson"


@pytest.mark.parametrize("n", [1, 6, 10, 50, 5000])
def test_wilson_at_0_of_n_and_n_of_n(n):
    # closed forms: 0 of n -> [0, z^2 / (n + z^2)]; n of n -> [n / (n + z^2), 1]
    z2 = z_for() ** 2
    none, every = wilson(0, n), wilson(n, n)
    assert none.low == 0.0 and none.high == pytest.approx(z2 / (n + z2), abs=1e-12)
    assert every.high == 1.0 and every.low == pytest.approx(n / (n + z2), abs=1e-12)
    close(wilson(0, 10), 0.0, 0.2775)
    close(wilson(10, 10), 0.7225, 1.0)


def test_wilson_of_nothing_is_none_and_bad_counts_are_refused():
    assert wilson(0, 0) is None
    with pytest.raises(ValueError):
        wilson(7, 5)
    assert z_for() == pytest.approx(1.959964, abs=1e-6)


# ---------------------------------------------------------------------------------- Newcombe, McNemar


def test_newcombe_paired_matches_a_published_example():
    # Cavo et al. 2012 as in Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency Tables" (2017),
    # chapter 8: [[59, 6], [16, 80]]; the Newcombe square-and-add interval is -0.0621 (-0.1186 to -0.0046)
    ci = newcombe_paired(both=59, now_only=6, then_only=16, neither=80)
    close(ci, -0.1186, -0.0046)
    assert ci.method == "newcombe"


def test_newcombe_paired_without_changes_still_has_width_and_stays_within_bounds():
    same = newcombe_paired(both=20, now_only=0, then_only=0, neither=30)  # nothing changed
    assert same.low < 0 < same.high and same.low == pytest.approx(-same.high)
    everything = newcombe_paired(both=0, now_only=6, then_only=0, neither=0)  # 0 of 6 -> 6 of 6
    assert everything.high == 1.0 and 0 < everything.low < 1
    assert newcombe_paired(0, 0, 0, 0) is None
    # swapping then and now mirrors the interval
    a, b = newcombe_paired(10, 3, 7, 30), newcombe_paired(10, 7, 3, 30)
    assert a.low == pytest.approx(-b.high) and a.high == pytest.approx(-b.low)


@pytest.mark.parametrize("fell, rose, p", [
    (16, 6, 0.052479),  # Cavo et al. 2012: McNemar exact conditional test P = 0.052479 (Fagerland et al.)
    (6, 16, 0.052479),
    (5, 0, 0.0625),  # 2 * (1/2)^5
    (6, 0, 0.03125),
    (2, 3, 1.0),  # 2 * (1 + 5 + 10) / 32 > 1: capped
    (0, 0, 1.0),  # nothing changed
    (9, 2, 134 / 2048),  # 2 * (1 + 11 + 55) / 2^11
])
def test_mcnemar_exact_matches_binomial_tails(fell, rose, p):
    assert mcnemar_exact(fell, rose) == pytest.approx(p, abs=1e-6)


def test_mcnemar_exact_on_the_full_split_does_not_overflow():
    # cross-check with a tail summed in logarithms
    b, c = 1400, 1560
    m = b + c
    logs = [math.lgamma(m + 1) - math.lgamma(i + 1) - math.lgamma(m - i + 1) - m * math.log(2) for i in range(b + 1)]
    top = max(logs)
    expected = 2 * math.exp(top) * sum(math.exp(x - top) for x in logs)
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-9)
    assert 0 < mcnemar_exact(b, c) < 0.01


# --------------------------------------------------------------------------------- in the roll-up


def test_summary_intervals_with_one_program_per_problem_are_clopper_pearson():
    problems = [make_problem(str(i), "introductory" if i < 10 else "interview") for i in range(50)]
    passing = set(range(21))
    records = [CaseRecord(problem=str(i), case=0, kind="pass" if i in passing else "wrong_answer") for i in range(50)]
    cands = {str(i): f"s/{i}.py" for i in range(48)}  # two without code
    f = summarize(problems, cands, [], records).figures
    ci = f["intervals"]
    assert ci["level"] == 0.95
    # 21 of 50: scipy.stats.binomtest(21, 50).proportion_ci() gives 0.281882-0.567940
    assert ci["strict_accuracy"] == {"low": 0.281882, "high": 0.56794, "method": "clopper-pearson"}
    assert ci["strict_accuracy_with_code"] == clopper_pearson(21, 48).to_dict()
    assert ci["per_tier"]["introductory"] == clopper_pearson(10, 10).to_dict()
    assert ci["per_tier"]["interview"] == clopper_pearson(11, 40).to_dict()
    assert ci["per_tier"]["competition"] is None  # no problems
    assert ci["pass_at_k"] == {"pass@1": ci["strict_accuracy"]}  # one program per problem: the same figure


def test_summary_intervals_with_samples_rest_on_effective_counts_for_pass_at_1_and_pass_at_k():
    from pytest_apps.candidates.sources import Candidate

    problems = [make_problem(str(i)) for i in range(20)]
    cands, records = {}, []
    for i in range(20):
        samples = [Candidate(problem_id=str(i), file=f"s/{i}/{j}.py", code="", sample=j, label=str(j)) for j in range(5)]
        cands[str(i)] = samples
        for j in range(5):
            kind = "pass" if j < i % 6 else "wrong_answer"
            records.append(CaseRecord(problem=str(i), case=0, kind=kind, sample=j))
    f = summarize(problems, cands, [], records).figures
    ci = f["intervals"]
    assert ci["strict_accuracy"]["method"] == "clopper-pearson effective"
    assert ci["strict_accuracy"]["effective_problems"] == 20  # fewer than 30 problems: no credit for samples
    assert ci["strict_accuracy"]["low"] < f["strict_accuracy"] < ci["strict_accuracy"]["high"]
    assert set(ci["pass_at_k"]) == {"pass@1", "pass@5"} == set(f["pass_at_k"])
    assert ci["pass_at_k"]["pass@1"] == ci["strict_accuracy"]  # pass@1 is strict accuracy with samples
    assert ci["pass_at_k"]["pass@5"]["low"] <= f["pass_at_k"]["pass@5"] <= ci["pass_at_k"]["pass@5"]["high"]


def test_one_clopper_pearson_interval_is_the_arrays_bounds_without_numpy():
    """A run's summary asks for its intervals one at a time: worked out in plain Python, they are the bounds
    `clopper_pearson_bounds` gives over arrays, and the report needs no numpy for them (its import alone costs
    a one-case run more than every interval)."""
    import subprocess
    import sys

    from pytest_apps.report.stats import clopper_pearson_bounds

    counts = [(x, n) for n in (1, 2, 3, 7, 20, 61) for x in range(n + 1)] + [(2.5, 7.25), (0.3, 1.5), (880, 1000)]
    low, high = clopper_pearson_bounds([float(x) for x, _ in counts], [float(n) for _, n in counts])
    for (x, n), lo, hi in zip(counts, low, high):
        one = clopper_pearson(x, n)
        assert abs(one.low - lo) < 1e-12 and abs(one.high - hi) < 1e-12, (x, n)
    code = ("import sys\nfrom pytest_apps.report.stats import clopper_pearson\n"
            "clopper_pearson(3, 7); clopper_pearson(0, 1); clopper_pearson(1, 1)\n"
            "assert 'numpy' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)
