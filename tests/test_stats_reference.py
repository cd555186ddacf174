"""perflab.stats against direct scipy/statsmodels calls (or brute force) on several datasets.

Datasets: normal, skewed (lognormal), tied (rounded), tiny n (3 per group), n = 40,
and unequal variances with unequal n. Each test recomputes a result independently and
checks perflab's value, its orientation (b against a) and its bookkeeping.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.oneway import anova_oneway
from statsmodels.stats.power import TTestIndPower, TTestPower
from statsmodels.stats.weightstats import ttost_ind, ttost_paired

from perflab.stats import (adjust_pvalues, cliffs_delta, compare, describe, hedges_g, hodges_lehmann,
                           min_detectable_effect, n_for_effect, n_for_halfwidth, omnibus, plan,
                           rel_diff_bootstrap, rel_diff_fieller, tost)
from perflab.stats import BOOTSTRAP_MIN_N, StatsInputError

_rng = np.random.default_rng(12345)
DATASETS = {
    "normal": (_rng.normal(100, 5, 20), _rng.normal(103, 5, 20)),
    "skewed": (_rng.lognormal(3, 0.6, 30), _rng.lognormal(3.3, 0.6, 30)),
    "tied": (np.round(_rng.normal(10, 1, 25)), np.round(_rng.normal(10.6, 1, 25))),
    "tiny": (np.array([9.8, 10.4, 10.1]), np.array([10.9, 11.3, 10.6])),
    "n40": (_rng.normal(50, 2, 40), _rng.normal(50.8, 2, 40)),
    "unequal_var": (_rng.normal(20, 0.5, 15), _rng.normal(21, 4, 35)),
}
PAIRED = [k for k, (a, b) in DATASETS.items() if a.size == b.size]
TESTS = {  # perflab key -> the direct scipy call, b against a
    "student": lambda a, b: stats.ttest_ind(b, a),
    "welch": lambda a, b: stats.ttest_ind(b, a, equal_var=False),
    "mannwhitney": lambda a, b: stats.mannwhitneyu(b, a),
}
PAIRED_TESTS = {
    "paired-t": lambda a, b: stats.ttest_rel(b, a),
    "wilcoxon": lambda a, b: stats.wilcoxon(b - a),
}


@pytest.mark.parametrize("name", DATASETS)
def test_describe_matches_numpy_and_scipy(name):
    a, b = DATASETS[name]
    df = pd.DataFrame({"g": ["a"] * a.size + ["b"] * b.size, "v": np.r_[a, b]})
    out = describe(df, "v", "g", level=0.9).set_index("g")
    for label, x in (("a", a), ("b", b)):
        row = out.loc[label]
        assert row["n"] == x.size
        assert row["mean"] == pytest.approx(np.mean(x))
        assert row["sd"] == pytest.approx(np.std(x, ddof=1))
        assert row["cv"] == pytest.approx(np.std(x, ddof=1) / np.mean(x))
        assert (row["min"], row["median"], row["max"]) == pytest.approx((x.min(), np.median(x), x.max()))
        expected = stats.t.interval(0.9, x.size - 1, loc=np.mean(x), scale=stats.sem(x))
        assert (row["mean_ci_low"], row["mean_ci_high"]) == pytest.approx(expected)
        med = stats.quantile_test(x, p=0.5).confidence_interval(0.9)
        np.testing.assert_allclose([row["median_ci_low"], row["median_ci_high"]], [med.low, med.high])
    assert out.attrs["ci_method"]["mean"] == "Student t"


def test_describe_median_ci_is_order_statistics_with_binomial_coverage():
    x = np.arange(1.0, 41.0)
    row = describe(pd.DataFrame({"g": "a", "v": x}), "v", "g").iloc[0]
    # the interval [x_(k), x_(n+1-k)] covers the median with probability 1 - 2 P(B <= k - 1)
    k = int(row["median_ci_low"])
    assert row["median_ci_high"] == 41 - k
    assert 1 - 2 * stats.binom.cdf(k - 1, 40, 0.5) >= 0.95
    assert 1 - 2 * stats.binom.cdf(k, 40, 0.5) < 0.95


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("test", TESTS)
def test_independent_tests_match_scipy(name, test):
    a, b = DATASETS[name]
    result = compare(a, b, test=test, n_resamples=999)
    expected = TESTS[test](a, b)
    assert result.statistic == pytest.approx(expected.statistic)
    assert result.p_value == pytest.approx(expected.pvalue)
    assert result.reason == "requested by the caller"
    assert (result.n_a, result.n_b) == (a.size, b.size)


@pytest.mark.parametrize("name", PAIRED)
@pytest.mark.parametrize("test", PAIRED_TESTS)
def test_paired_tests_match_scipy(name, test):
    a, b = DATASETS[name]
    result = compare(a, b, test=test, paired=True, n_resamples=999)
    expected = PAIRED_TESTS[test](a, b)
    assert result.statistic == pytest.approx(expected.statistic)
    assert result.p_value == pytest.approx(expected.pvalue)


@pytest.mark.parametrize("name", DATASETS)
def test_diagnostics_are_reported_and_never_switch_the_test(name):
    a, b = DATASETS[name]
    result = compare(a, b, labels=("base", "new"))
    checks = result.assumptions
    assert checks["levene_p"] == pytest.approx(stats.levene(a, b, center="median").pvalue)
    assert checks["shapiro_p_base"] == pytest.approx(stats.shapiro(a).pvalue)
    assert checks["shapiro_p_new"] == pytest.approx(stats.shapiro(b).pvalue)
    assert result.test == "Welch's t" and result.effect == "difference of means"
    non_normal = min(checks["shapiro_p_base"], checks["shapiro_p_new"]) < 0.05
    assert non_normal == any(n.startswith("normality is rejected") for n in result.notes)
    assert (checks["levene_p"] < 0.05) == any(n.startswith("the spreads differ") for n in result.notes)


def test_the_designed_datasets_trigger_the_diagnostics_they_were_built_for():
    assert any("normality is rejected" in n for n in compare(*DATASETS["skewed"]).notes)
    assert any("spreads differ" in n for n in compare(*DATASETS["unequal_var"]).notes)
    assert not compare(*DATASETS["n40"]).notes[:-1]  # only the bootstrap note would remain (n = 40: none)


@pytest.mark.parametrize("name", DATASETS)
def test_hedges_g_matches_cohens_d_with_the_usual_correction(name):
    a, b = DATASETS[name]
    df = a.size + b.size - 2
    pooled = np.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / df)
    d = (b.mean() - a.mean()) / pooled
    # Hedges & Olkin's approximation J = 1 - 3 / (4 df - 1) is within 0.3 % of the exact J for df >= 4
    assert hedges_g(a, b) == pytest.approx(d * (1 - 3 / (4 * df - 1)), rel=3e-3)


@pytest.mark.parametrize("name", DATASETS)
def test_cliffs_delta_matches_brute_force_dominance(name):
    a, b = DATASETS[name]
    signs = np.sign(np.subtract.outer(b, a))
    assert cliffs_delta(a, b) == pytest.approx(signs.mean())


@pytest.mark.parametrize("name", DATASETS)
def test_hodges_lehmann_interval_inverts_mann_whitney(name):
    a, b = DATASETS[name]
    shift, (low, high) = hodges_lehmann(a, b, level=0.95)
    assert shift == pytest.approx(np.median(np.subtract.outer(b, a)))
    if not np.isfinite(low):  # tiny n: the test cannot reject any shift
        assert stats.mannwhitneyu(b - (shift - 1e6), a).pvalue > 0.05
        return
    eps = 1e-9 * max(1.0, abs(low), abs(high))
    assert stats.mannwhitneyu(b - (low + eps), a).pvalue > 0.05
    assert stats.mannwhitneyu(b - (low - eps), a).pvalue <= 0.05
    assert stats.mannwhitneyu(b - (high - eps), a).pvalue > 0.05
    assert stats.mannwhitneyu(b - (high + eps), a).pvalue <= 0.05


@pytest.mark.parametrize("name", PAIRED)
def test_paired_hodges_lehmann_is_median_of_walsh_averages(name):
    a, b = DATASETS[name]
    d = b - a
    i, j = np.triu_indices(d.size)
    shift, (low, high) = hodges_lehmann(a, b, paired=True)
    assert shift == pytest.approx(np.median((d[i] + d[j]) / 2))
    if np.isfinite(low):
        method = "exact" if d.size <= 50 else "asymptotic"
        eps = 1e-9 * max(1.0, abs(low))
        assert stats.wilcoxon(d - (low + eps), method=method).pvalue > 0.05
        assert stats.wilcoxon(d - (low - eps), method=method).pvalue <= 0.05


@pytest.mark.parametrize("name", PAIRED)
def test_paired_fieller_endpoints_are_where_the_paired_t_test_reaches_alpha(name):
    a, b = DATASETS[name]
    low, high = rel_diff_fieller(a, b, paired=True)
    for r in (1 + low, 1 + high):  # H0: mean_b = r mean_a is a paired t test of b - r a
        assert stats.ttest_rel(b, r * a).pvalue == pytest.approx(0.05, abs=1e-9)


@pytest.mark.parametrize("name", DATASETS)
def test_fieller_endpoints_give_the_critical_welch_statistic(name):
    a, b = DATASETS[name]
    low, high = rel_diff_fieller(a, b)
    ratio = b.mean() / a.mean()
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    df = stats.ttest_ind(b, a, equal_var=False).df  # Welch's own df: the interval excludes 0 iff Welch rejects
    for r in (1 + low, 1 + high):
        t = (b.mean() - r * a.mean()) / np.sqrt(vb + r**2 * va)
        assert abs(t) == pytest.approx(stats.t.ppf(0.975, df))
    assert low < ratio - 1 < high


@pytest.mark.parametrize("name", DATASETS)
def test_bootstrap_interval_matches_scipy_bca_from_its_minimum_n(name):  # smaller samples are tiled up to it
    a, b = DATASETS[name]
    with pytest.raises(StatsInputError, match=f"at least {BOOTSTRAP_MIN_N} values per group"):
        rel_diff_bootstrap(a, b, n_resamples=999, seed=7)
    a, b = np.tile(a, -(-BOOTSTRAP_MIN_N // a.size)), np.tile(b, -(-BOOTSTRAP_MIN_N // b.size))
    low, high = rel_diff_bootstrap(a, b, n_resamples=999, seed=7)
    res = stats.bootstrap((a, b), lambda x, y, axis: y.mean(axis) / x.mean(axis) - 1, n_resamples=999,
                          method="BCa", vectorized=True, rng=np.random.default_rng(7))
    if np.isfinite(res.confidence_interval.low):
        assert (low, high) == pytest.approx((res.confidence_interval.low, res.confidence_interval.high))
    else:
        assert np.isnan(low)


def test_compare_reports_the_effect_of_its_test():
    a, b = DATASETS["n40"]
    parametric = compare(a, b)
    assert parametric.rel_diff_ci == rel_diff_fieller(a, b) and parametric.rel_diff_ci_method == "Fieller (t)"
    welch = stats.ttest_ind(b, a, equal_var=False)
    assert parametric.estimate == pytest.approx(b.mean() - a.mean())
    assert parametric.estimate_ci == pytest.approx(tuple(welch.confidence_interval(0.95)))
    assert all(np.isnan(parametric.rel_diff_ci_bootstrap))  # n = 40 < BOOTSTRAP_MIN_N: not computed
    big = _rng.lognormal(3, 0.5, BOOTSTRAP_MIN_N), _rng.lognormal(3.1, 0.5, BOOTSTRAP_MIN_N)
    assert compare(*big, n_resamples=999).rel_diff_ci_bootstrap == pytest.approx(
        rel_diff_bootstrap(*big, n_resamples=999))
    a, b = DATASETS["skewed"]
    rank = compare(a, b, test="mannwhitney")
    shift, ci = hodges_lehmann(a, b)
    assert rank.effect.startswith("Hodges-Lehmann shift") and (rank.estimate, rank.estimate_ci) == (shift, ci)
    assert rank.rel_diff == pytest.approx(shift / np.median(a))
    assert "inverted Mann-Whitney U" in rank.rel_diff_ci_method
    paired = compare(a, b, paired=True, test="wilcoxon")
    assert paired.estimate == hodges_lehmann(a, b, paired=True)[0] and paired.effect.startswith("pseudomedian")
    tiny = compare(*DATASETS["tiny"])
    assert all(np.isnan(tiny.rel_diff_ci_bootstrap)) and any("no bootstrap interval" in n for n in tiny.notes)


@pytest.mark.parametrize("name", ["normal", "skewed", "n40"])
def test_omnibus_matches_scipy_and_statsmodels(name):
    a, b = DATASETS[name]
    groups = {"a": a, "b": b, "c": b * 1.05}
    assert omnibus(groups, test="anova").p_value == pytest.approx(stats.f_oneway(a, b, b * 1.05).pvalue)
    welch = anova_oneway([a, b, b * 1.05], use_var="unequal")
    assert omnibus(groups, test="welch-anova").statistic == pytest.approx(welch.statistic)
    assert omnibus(groups, test="kruskal").p_value == pytest.approx(stats.kruskal(a, b, b * 1.05).pvalue)


def test_adjust_pvalues_matches_multipletests():
    p = np.array([0.001, 0.01, 0.02, 0.04, 0.3])
    np.testing.assert_allclose(adjust_pvalues(p, "holm"), multipletests(p, method="holm")[1])
    np.testing.assert_allclose(adjust_pvalues(p, "bh"), multipletests(p, method="fdr_bh")[1])
    np.testing.assert_allclose(adjust_pvalues(p, "none"), p)


@pytest.mark.parametrize("name", ["normal", "n40", "unequal_var"])
def test_tost_matches_statsmodels(name):
    a, b = DATASETS[name]
    result = tost(a, b, 0.05)
    bound = 0.05 * a.mean()
    expected = ttost_ind(b, a, -bound, bound, usevar="unequal")
    assert result.p_value == pytest.approx(expected[0])
    assert (result.low, result.high) == pytest.approx((-bound, bound))
    assert result.equivalent == (expected[0] < 0.05)
    ci_inside = bound > max(abs(result.diff_ci[0]), abs(result.diff_ci[1]))
    assert result.equivalent == ci_inside


@pytest.mark.parametrize("name", PAIRED)
def test_paired_tost_matches_statsmodels(name):
    a, b = DATASETS[name]
    result = tost(a, b, 2.0, relative=False, paired=True)
    assert result.p_value == pytest.approx(ttost_paired(b, a, -2.0, 2.0)[0])


def test_power_matches_statsmodels_classes():
    cv = 0.04
    d = TTestIndPower().solve_power(nobs1=40, alpha=0.05, power=0.8)
    assert min_detectable_effect(40, cv) == pytest.approx(d * cv)
    d_paired = TTestPower().solve_power(nobs=12, alpha=0.01, power=0.9)
    assert min_detectable_effect(12, cv, alpha=0.01, power=0.9, paired=True) == pytest.approx(d_paired * cv)
    n = n_for_effect(0.02, cv)
    assert TTestIndPower().power(0.02 / cv, nobs1=n, alpha=0.05) >= 0.8
    assert TTestIndPower().power(0.02 / cv, nobs1=n - 1, alpha=0.05) < 0.8


@pytest.mark.parametrize("cv,halfwidth", [(0.05, 0.01), (0.2, 0.05), (0.01, 0.02)])
def test_n_for_halfwidth_is_the_smallest_sufficient_n(cv, halfwidth):
    n = n_for_halfwidth(cv, halfwidth)
    width = lambda m: stats.t.ppf(0.975, m - 1) * cv / np.sqrt(m)  # noqa: E731
    assert width(n) <= halfwidth
    assert n == 2 or width(n - 1) > halfwidth


def test_plan_adds_mde_and_runs_per_cell_from_a_pilot():
    a, b = DATASETS["n40"]
    pilot = describe(pd.DataFrame({"g": ["a"] * 40 + ["b"] * 40, "v": np.r_[a, b]}), "v", "g")
    out = plan(pilot, 20, halfwidth=0.005)
    for _, row in out.iterrows():
        assert row["mde"] == pytest.approx(min_detectable_effect(20, row["cv"]))
        assert row["n_halfwidth"] == n_for_halfwidth(row["cv"], 0.005)
    assert out.attrs["plan"]["n"] == 20 and out.attrs["ci_method"] == pilot.attrs["ci_method"]
