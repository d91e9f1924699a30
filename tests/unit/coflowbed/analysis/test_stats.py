"""coflowbed.analysis.stats against values computed by hand (t quantiles from the table:
t(0.975, 2) = 4.302653, t(0.975, 1) = 12.706205)."""

from __future__ import annotations

import math

import pytest

from coflowbed.analysis.stats import Estimate, Speedup, estimate, speedup, t_quantile

T2, T1 = 4.302653, 12.706205


def test_t_quantiles_are_the_table_values():
    assert t_quantile(3) == pytest.approx(T2, abs=1e-6)
    assert t_quantile(2) == pytest.approx(T1, abs=1e-6)


def test_estimate_of_three_values():
    # mean 12, sample std sqrt((4 + 0 + 4) / 2) = 2, half width 4.302653 * 2 / sqrt(3)
    e = estimate([10.0, 12.0, 14.0])
    half = T2 * 2 / math.sqrt(3)
    assert (e.mean, e.std, e.n) == (12.0, 2.0, 3)
    assert (e.ci_low, e.ci_high) == pytest.approx((12 - half, 12 + half))
    assert e.ci_low == pytest.approx(7.03173, abs=1e-5)


def test_estimate_of_two_values_uses_one_degree_of_freedom():
    e = estimate([1.0, 2.0])  # std 0.7071, half 12.706205 * 0.7071 / sqrt(2) = 6.3531
    assert (e.ci_low, e.ci_high) == pytest.approx((1.5 - T1 / 2, 1.5 + T1 / 2))


def test_estimate_of_one_or_no_value_has_no_interval():
    assert estimate([3.0]) == Estimate(3.0, None, 1, None, None)
    assert estimate([]) == Estimate(None, None, 0, None, None)
    assert estimate([3.0]).to_dict() == {
        "mean": 3.0,
        "std": None,
        "n": 1,
        "ci_low": None,
        "ci_high": None,
    }


def test_speedup_delta_method_by_hand():
    # S = 11 / 9; d = b - S x = (0.2222, 1.0, -1.2222), sd(d) = sqrt(2.54321 / 2) = 1.127655;
    # se = 1.127655 / (sqrt(3) * 9) = 0.0723384; half = 4.302653 * se = 0.311246
    s = speedup([10.0, 12.0, 11.0], [8.0, 9.0, 10.0])
    assert s.value == pytest.approx(11 / 9) and s.n == 3
    assert s.se == pytest.approx(0.0723384, abs=1e-6)
    assert (s.ci_low, s.ci_high) == pytest.approx((0.910976, 1.533468), abs=1e-5)


def test_drift_shared_by_a_pair_cancels():
    # the machine slows down run after run, both policies alike: the ratio is exactly 2
    s = speedup([10.0, 20.0, 30.0], [5.0, 10.0, 15.0])
    assert (s.value, s.ci_low, s.ci_high) == pytest.approx((2.0, 2.0, 2.0))


def test_speedup_of_one_pair_has_no_interval_and_pairs_must_match():
    assert speedup([4.0], [2.0]) == Speedup(2.0, None, 1, None, None)
    assert speedup([], []) == Speedup(None, None, 0, None, None)
    with pytest.raises(ValueError, match="pairs"):
        speedup([1.0, 2.0], [1.0])
