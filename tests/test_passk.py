"""The unbiased pass@k estimator (Chen et al. 2021) in its numerically stable form."""

from __future__ import annotations

from math import comb

import pytest

from pytest_apps.report.passk import ks_for, mean_pass_at_k, pass_at_k


@pytest.mark.parametrize("n,c,k", [(1, 0, 1), (1, 1, 1), (10, 3, 1), (10, 3, 5), (20, 1, 10), (100, 7, 100),
                                   (100, 0, 5), (13, 9, 10)])
def test_matches_the_binomial_definition(n, c, k):
    assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12)


def test_pass_at_1_is_the_share_correct():
    assert pass_at_k(8, 3, 1) == pytest.approx(3 / 8)


def test_stable_for_large_n():
    # comb(2000, 1000) overflows a float; the product form does not
    assert 0.0 < pass_at_k(2000, 1, 1000) < 1.0
    assert pass_at_k(2000, 1, 1000) == pytest.approx(0.5)


def test_bad_arguments():
    with pytest.raises(ValueError):
        pass_at_k(5, 6, 1)
    with pytest.raises(ValueError):
        pass_at_k(5, 1, 10)


def test_ks_up_to_the_smallest_sample_count():
    assert ks_for(1) == [1]
    assert ks_for(10) == [1, 5, 10]
    assert ks_for(250) == [1, 5, 10, 100]
    assert ks_for(0) == []


def test_mean_over_problems_counts_problems_without_samples_as_zero():
    assert mean_pass_at_k([(2, 1), (0, 0)], 1) == pytest.approx(0.25)
    assert mean_pass_at_k([], 1) is None
