"""The intervals of the headline figures: Clopper-Pearson on an effective count of problems. Exact against scipy
where scipy is there, never narrower than the data supports on a few problems, coverage of the nominal 95% by
simulation at 1, 2, 5 and 50 problems with 1, 5 and 20 samples, and the figure text every report writes."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_problem

from pytest_apps.candidates.sources import Candidate
from pytest_apps.core.record import CaseRecord
from pytest_apps.report.comparison import compare
from pytest_apps.report.comparison_text import baseline_lines
from pytest_apps.report.confidence import Unit, interval_figures
from pytest_apps.report.html import render_html
from pytest_apps.report.markdown import markdown_text
from pytest_apps.report.rollup import document, summarize
from pytest_apps.report.stats import (
    VARIANCE_PROBLEMS, clopper_pearson, clopper_pearson_bounds, effective_count, mean_interval, square_and_add,
)
from pytest_apps.report.terminal import summary_lines

# ------------------------------------------------------------------------------------------ the maths


@pytest.mark.parametrize("x, n, low, high", [
    (0, 10, 0.0, 0.308498),  # the classic tables (Clopper and Pearson 1934): 0 of 10, 95%
    (10, 10, 0.691502, 1.0),
    (3, 10, 0.066739, 0.652453),
    (0, 1, 0.0, 0.975),  # one problem: the interval is nearly everything
    (1, 1, 0.025, 1.0),
])
def test_clopper_pearson_matches_published_values(x, n, low, high):
    ci = clopper_pearson(x, n)
    assert (ci.low, ci.high) == (pytest.approx(low, abs=2e-6), pytest.approx(high, abs=2e-6))
    assert ci.method == "clopper-pearson"


def test_clopper_pearson_with_real_counts_matches_scipys_beta_quantiles():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(5)
    n = rng.uniform(0.5, 3000, 200)
    x = rng.uniform(0, 1, 200) * n
    x[:4] = [0.0, n[1], 1e-6, n[3] - 0.5]
    low, high = clopper_pearson_bounds(x, n)
    want_low = np.where(x > 0, stats.beta.ppf(0.025, np.maximum(x, 1e-300), n - x + 1), 0.0)
    want_high = np.where(x < n, stats.beta.ppf(0.975, x + 1, np.maximum(n - x, 1e-300)), 1.0)
    assert np.max(np.abs(low - want_low)) < 1e-9 and np.max(np.abs(high - want_high)) < 1e-9


def test_effective_count_is_the_problems_unless_enough_problems_show_more():
    assert effective_count([0.65], cap=20) == 1  # one problem, 20 samples: worth one problem
    assert effective_count([0.0, 0.5, 0.25, 0.0], cap=8) == 4
    spread_out = [0.0, 1.0] * 25  # 50 problems, each always or never passing: samples add nothing
    assert effective_count(spread_out, cap=50 * 20) == 50
    alike = [0.45, 0.55] * 25  # 50 problems whose scores barely differ: worth far more than 50 trials
    assert 50 < effective_count(alike, cap=50 * 20) <= 1000
    assert effective_count([0.0] * 50, cap=1000) == 50  # all failing says nothing about rare solutions
    assert effective_count([0.3] * (VARIANCE_PROBLEMS - 1), cap=10_000) == VARIANCE_PROBLEMS - 1


# --------------------------------------------------------------------- no collapse on a few problems


def _units(spec):
    return [Unit("interview", n, c) for n, c in spec]


@pytest.mark.parametrize("spec", [
    [(20, 13)],  # one problem, 20 samples, 13 passing: 65% (the bootstrap said 65.0-65.0%)
    [(2, 0), (1, 0), (2, 1), (2, 0)],  # four problems, 1 of 7 samples passing (the bootstrap: a point or two)
    [(20, 20)],  # every sample passing: pass@k 100% on one problem is no certainty
])
def test_intervals_on_a_few_problems_are_as_wide_as_the_problems_leave_them(spec):
    units = _units(spec)
    ci = interval_figures(units, ["interview"], [1, 5] if min(n for n, _ in spec) >= 5 else [1])
    n = len(spec)
    floor = clopper_pearson(0, n)  # the narrowest a one-sided result on n problems can honestly be
    for interval in [ci["strict_accuracy"], *ci["pass_at_k"].values(), ci["per_tier"]["interview"]]:
        assert interval["high"] - interval["low"] >= min(floor.high, 1 - floor.high) - 1e-9, interval
        assert interval.get("effective_problems", n) == n


def test_a_baseline_difference_on_two_problems_with_samples_does_not_collapse():
    # two problems, 0 of 20 passing then, 20 of 20 now: +100 points, but on two problems
    then, now = [0.0, 0.0], [1.0, 1.0]
    ci = square_and_add(then, now, 40, 40)
    assert ci.high == pytest.approx(1.0) and ci.low < 0.0


# --------------------------------------------------------------------------------------- coverage

SCENARIOS = {  # how problems' true pass rates are spread, and their mean (what the interval must cover)
    # each problem always or never solved: the samples say nothing more than the problems (the hardest case)
    "all or nothing, 85%": (lambda rng, size: (rng.random(size) < 0.85).astype(float), 0.85),
    "U-shaped, mean 30%": (lambda rng, size: rng.beta(0.3, 0.7, size), 0.3),
    # every problem alike at 5%: the samples are nearly independent trials (the case they help most)
    "alike, 5%": (lambda rng, size: np.full(size, 0.05), 0.05),
}


@pytest.mark.parametrize("problems", [1, 2, 5, 50])
@pytest.mark.parametrize("samples", [1, 5, 20])
def test_coverage_of_the_pass_at_1_interval_is_at_least_nominal(problems, samples):
    draws = 1500
    for name, (true_rates, mean) in SCENARIOS.items():
        rng = np.random.default_rng(problems * 100 + samples)
        shares = rng.binomial(samples, true_rates(rng, (draws, problems))) / samples
        # the interval each run would report, computed in bulk: mean_interval's own steps (checked below)
        effective = np.array([effective_count(row, problems * samples) for row in shares.tolist()])
        successes = shares.mean(axis=1) * effective
        pairs, where = np.unique(np.round(np.stack([successes, effective], 1), 9), axis=0, return_inverse=True)
        low, high = clopper_pearson_bounds(pairs[:, 0], pairs[:, 1])
        low, high = low[where.ravel()], high[where.ravel()]
        for i in range(3):
            one = mean_interval(shares[i].tolist(), problems * samples)
            assert (one.low, one.high) == (pytest.approx(low[i], abs=1e-8), pytest.approx(high[i], abs=1e-8))
        coverage = float(np.mean((low <= mean) & (mean <= high)))
        # 1500 draws: the standard error at 95% is 0.0056, so 0.935 is nearly three of them below nominal
        assert coverage >= 0.935, f"{name}: {coverage:.3f} of {draws} intervals cover {mean}"


# ------------------------------------------------------------------------------ the figures as text


def _sampled_summary(spec):
    problems, cands, records = [], {}, []
    for i, (tier, n, c) in enumerate(spec):
        problems.append(make_problem(str(i), tier))
        cands[str(i)] = [Candidate(problem_id=str(i), file=f"s/{i}/{j}.py", code="x", sample=j, label=f"sample_{j}")
                         for j in range(n)]
        records += [CaseRecord(problem=str(i), case=0, kind="pass" if j < c else "wrong_answer", sample=j)
                    for j in range(n)]
    return summarize(problems, cands, [], records, {"missing_ids": [], "wall_time": 1.0})


def test_with_samples_every_report_says_the_figure_is_a_pass_at_1_estimate_with_its_counts():
    summary = _sampled_summary([("introductory", 2, 0), ("introductory", 2, 0), ("interview", 2, 1),
                                ("interview", 2, 0)])
    f = summary.figures
    assert (f["samples"]["total"], f["samples_passing"]) == (8, 1)
    assert f["samples_per_tier"]["introductory"] == {"samples": 4, "samples_passing": 0}
    headline = f["figure_texts"]["strict_accuracy"]
    assert headline.startswith("12.50% (pass@1 estimate: 1 of 8 samples passing, 4 problems), 95% CI 0.")
    assert "0/4" not in headline
    lines = summary_lines(summary)
    assert lines[0] == "strict accuracy: " + headline
    tiers = next(line for line in lines if line.startswith("per tier: "))
    assert "introductory 0.00% (0 of 4 samples passing, 2 problems, 95% CI 0.0-" in tiers
    assert "0.0-0.0%" not in tiers
    assert any(line.endswith("; estimated from 8 samples of 4 problems") for line in lines)
    doc = document({}, {}, summary)
    md = markdown_text(doc)
    assert "**Strict accuracy 12.50%** (pass@1 estimate: 1 of 8 samples passing, 4 problems), 95% CI" in md
    assert "| introductory | 2 | 0 of 4 samples | 0.00% |" in md
    page = render_html(doc)
    assert "pass@1 estimate: 1 of 8 samples passing, 4 problems · 95% CI" in page
    assert "0 of 4 samples passing, 2 problems" in page


def test_with_one_program_per_problem_the_figures_read_as_before():
    problems = [make_problem(str(i), "interview") for i in range(6)]
    records = [CaseRecord(problem=str(i), case=0, kind="pass" if i < 5 else "wrong_answer") for i in range(6)]
    summary = summarize(problems, {str(i): f"s/{i}.py" for i in range(6)}, [], records,
                        {"missing_ids": [], "wall_time": 1.0})
    assert summary_lines(summary)[0] == "strict accuracy: 83.33% (5/6 problems), 95% CI 35.9-99.6%"
    assert "interview 83.33% (5/6, 95% CI 35.9-99.6%)" in summary_lines(summary)[2]


def test_a_baseline_with_samples_counts_samples_on_each_side():
    then = document({}, {}, _sampled_summary([("interview", 20, 0), ("interview", 20, 0)]))
    now = document({}, {}, _sampled_summary([("interview", 20, 20), ("interview", 20, 20)]))
    c = compare(then, now, allow_mismatch=True).to_dict()
    line = next(x for x in baseline_lines(c) if x.startswith("strict accuracy"))
    assert line.startswith("strict accuracy (pass@1 estimates) then 0.00% (0 of 40 samples passing), now 100.00% "
                           "(40 of 40 samples passing): +100.00 points, 95% CI -")
    assert "+100.0 to +100.0" not in line


def test_with_samples_tags_and_skills_count_samples_as_tiers_do():
    """TACO's per-tag and per-skill figures with several samples: the same estimate with the same counts behind
    it as the tiers', in every report (never `65.00% (0/1)`)."""
    problems, cands, records = [], {}, []
    for i, (n, c) in enumerate([(20, 13), (4, 1)]):
        problems.append(make_problem(str(i), "EASY", tags=("Sorting",), skills=("Greedy algorithms",)))
        cands[str(i)] = [Candidate(problem_id=str(i), file=f"s/{i}/{j}.py", code="x", sample=j, label=f"sample_{j}")
                         for j in range(n)]
        records += [CaseRecord(problem=str(i), case=0, kind="pass" if j < c else "wrong_answer", sample=j)
                    for j in range(n)]
    summary = summarize(problems, cands, [], records, {"missing_ids": [], "wall_time": 1.0})
    f = summary.figures
    assert f["samples_per_tag"] == {"Sorting": {"samples": 24, "samples_passing": 14}}
    assert f["samples_per_skill"] == {"Greedy algorithms": {"samples": 24, "samples_passing": 14}}
    tag = f["figure_texts"]["per_tag"]["Sorting"]
    assert tag.startswith("45.00% (14 of 24 samples passing, 2 problems, 95% CI ")
    assert f["figure_texts"]["per_skill"]["Greedy algorithms"] == tag == f["figure_texts"]["per_tier"]["EASY"]
    lines = summary_lines(summary)
    assert "per tag: Sorting " + tag in lines and "per skill: Greedy algorithms " + tag in lines
    assert not any("(0/2" in line for line in lines)
    doc = document({}, {}, summary)
    md = markdown_text(doc)
    assert "| tag: Sorting | 2 | 14 of 24 samples | 45.00% |" in md
    assert "| skill: Greedy algorithms | 2 | 14 of 24 samples | 45.00% |" in md
    assert render_html(doc).count("14 of 24 samples passing, 2 problems") >= 3  # the tier, the skill and the tag
