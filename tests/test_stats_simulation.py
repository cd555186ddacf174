"""Error rates of perflab's default procedures, by simulation (fixed seed, a few seconds).

The defaults never switch test on the data, so their decisions are exactly those of one
scipy call: the simulation runs that call vectorized over thousands of draws, and checks on
the first draws that ``compare`` returns the same p-values and intervals. Scenarios (the
ones docs/statistics.md documents):

- independent, normal, equal means, n 30 vs 8, SD 1 vs 2: Welch's t (the old pre-testing
  rule rejected about 11 % of the time here);
- paired, skewed differences with mean 0 (gamma, shape 4: skewness 1), n 25: paired t;
- coverage of the default intervals: difference of means (Welch, paired t), relative
  difference (Fieller), and describe's mean interval (Student t).

Bounds: rejection rate within 4-6.5 % at a nominal 5 %; coverage within 93-97 % at a
nominal 95 %. With 4000 draws the binomial standard error is 0.34 % (rates) and 0.34 %
(coverage), so the bounds are at least 2.9 standard errors from the nominal value.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from perflab.stats import compare, mean_ci
from perflab.stats.effect import fieller_from_stats

DRAWS, CHECKED = 4000, 40
RATE, COVERAGE = (0.04, 0.065), (0.93, 0.97)


def _unequal(rng: np.random.Generator, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Draws of a (n 30, SD 1) and b (n 8, SD 2) around a mean of 10, b shifted by ``shift``."""
    return rng.normal(10, 1, (DRAWS, 30)), rng.normal(10 + shift, 2, (DRAWS, 8))


def _paired(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draws of 25 blocks: a normal around 10, b = a + a gamma(4) difference with mean 0."""
    a = rng.normal(10, 1, (DRAWS, 25))
    return a, a + rng.gamma(4.0, 0.25, (DRAWS, 25)) - 1.0


def _within(value: float, bounds: tuple[float, float]) -> bool:
    return bounds[0] <= value <= bounds[1]


def test_default_independent_comparison_keeps_its_false_positive_rate_and_coverage():
    a, b = _unequal(np.random.default_rng(20261123))
    res = stats.ttest_ind(b, a, axis=1, equal_var=False)
    ci = res.confidence_interval(0.95)
    for i in range(CHECKED):  # compare's default is exactly this call
        c = compare(a[i], b[i])
        assert c.test == "Welch's t"
        assert c.p_value == pytest.approx(res.pvalue[i], rel=1e-9)
        assert c.estimate_ci == pytest.approx((ci.low[i], ci.high[i]), rel=1e-9)
    rate = float(np.mean(res.pvalue < 0.05))
    coverage = float(np.mean((ci.low <= 0) & (ci.high >= 0)))
    assert _within(rate, RATE), rate
    assert _within(coverage, COVERAGE), coverage


def test_default_paired_comparison_keeps_its_false_positive_rate_on_skewed_differences():
    a, b = _paired(np.random.default_rng(7))
    res = stats.ttest_rel(b, a, axis=1)
    ci = res.confidence_interval(0.95)
    for i in range(CHECKED):
        c = compare(a[i], b[i], paired=True)
        assert c.test == "paired t" and c.p_value == pytest.approx(res.pvalue[i], rel=1e-9)
        assert c.estimate_ci == pytest.approx((ci.low[i], ci.high[i]), rel=1e-9)
    assert _within(float(np.mean(res.pvalue < 0.05)), RATE)
    assert _within(float(np.mean((ci.low <= 0) & (ci.high >= 0))), COVERAGE)


def test_fieller_interval_of_the_relative_difference_covers():
    a, b = _unequal(np.random.default_rng(99), shift=1.0)  # true relative difference: +10 %
    n_a, n_b = a.shape[1], b.shape[1]
    low, high = fieller_from_stats(a.mean(1), a.std(1, ddof=1) / np.sqrt(n_a), n_a,
                                   b.mean(1), b.std(1, ddof=1) / np.sqrt(n_b), n_b)
    for i in range(CHECKED):
        assert compare(a[i], b[i]).rel_diff_ci == pytest.approx((low[i], high[i]), rel=1e-9)
    assert _within(float(np.mean((low <= 0.1) & (high >= 0.1))), COVERAGE)


def test_mean_interval_of_describe_covers():
    x = np.random.default_rng(3).normal(10, 2, (DRAWS, 8))
    low, high = stats.t.interval(0.95, 7, loc=x.mean(1), scale=stats.sem(x, axis=1))
    for i in range(CHECKED):
        assert mean_ci(x[i]) == pytest.approx((low[i], high[i]), rel=1e-9)
    assert _within(float(np.mean((low <= 10) & (high >= 10))), COVERAGE)
