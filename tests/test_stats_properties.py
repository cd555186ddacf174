"""Invariants of perflab.stats checked on generated data (hypothesis).

p-values lie in [0, 1]; intervals contain their estimate; swapping the groups flips
the sign of every effect and leaves p unchanged; corrections never lower a p-value;
robust z-scores ignore location and scale.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from perflab.stats import (adjust_pvalues, compare, describe, hodges_lehmann, rel_diff, rel_diff_fieller,
                           robust_z, tost)

FAST = settings(max_examples=40, deadline=None)
# Performance-like values: positive, moderate range; integers give ties.
values = st.one_of(
    st.floats(min_value=1.0, max_value=1000.0, allow_nan=False, allow_infinity=False),
    st.integers(min_value=1, max_value=20).map(float),
)
sample = st.lists(values, min_size=2, max_size=25)
TESTS = [None, "student", "welch", "mannwhitney"]  # None: the default (Welch)


@FAST
@given(a=sample, b=sample, test=st.sampled_from(TESTS))
def test_p_value_is_a_probability_and_ci_contains_the_estimate(a, b, test):
    c = compare(a, b, test=test)
    assert math.isnan(c.p_value) or 0.0 <= c.p_value <= 1.0
    low, high = c.estimate_ci
    assert math.isnan(low) or low <= c.estimate <= high
    low, high = rel_diff_fieller(a, b)
    assert low <= rel_diff(a, b) <= high


@FAST
@given(a=sample, b=sample, test=st.sampled_from(TESTS))
def test_swapping_groups_flips_effects_and_keeps_p(a, b, test):
    ab = compare(a, b, test=test)
    ba = compare(b, a, test=test)
    assert math.isnan(ab.p_value) and math.isnan(ba.p_value) or math.isclose(ab.p_value, ba.p_value,
                                                                                rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(ab.cliffs_delta, -ba.cliffs_delta, abs_tol=1e-12)
    assert math.isclose(ab.estimate, -ba.estimate, rel_tol=1e-9, abs_tol=1e-9)
    if np.isfinite(ab.hedges_g) or np.isfinite(ba.hedges_g):
        assert math.isclose(ab.hedges_g, -ba.hedges_g, rel_tol=1e-9, abs_tol=1e-12)
    assert np.sign(ab.rel_diff) == -np.sign(ba.rel_diff)
    if ab.effect == "difference of means":  # positive means: (1 + b/a - 1)(1 + a/b - 1) = 1
        assert math.isclose((1 + ab.rel_diff) * (1 + ba.rel_diff), 1.0, rel_tol=1e-9)
    assert ab.test == ba.test
    if ab.test == "Mann-Whitney U":  # U counts the pairs where b wins: U(a, b) + U(b, a) = n_a n_b
        assert math.isclose(ab.statistic + ba.statistic, len(a) * len(b))
    else:  # t statistics change sign
        assert math.isnan(ab.statistic) or math.isclose(ab.statistic, -ba.statistic, rel_tol=1e-9, abs_tol=1e-12)


@FAST
@given(pairs=st.lists(st.tuples(values, values), min_size=3, max_size=20), test=st.sampled_from([None, "paired-t", "wilcoxon"]))
def test_paired_invariants(pairs, test):
    a, b = (np.array(x) for x in zip(*pairs))
    assume(np.ptp(b - a) > 0)
    ab = compare(a, b, paired=True, test=test)
    ba = compare(b, a, paired=True, test=test)
    assert 0.0 <= ab.p_value <= 1.0
    assert math.isclose(ab.p_value, ba.p_value, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(ab.estimate, -ba.estimate, rel_tol=1e-9, abs_tol=1e-9)
    low, high = ab.estimate_ci
    assert math.isnan(low) or low <= ab.estimate <= high
    low, high = rel_diff_fieller(a, b, paired=True)
    assert low <= rel_diff(a, b) <= high


@FAST
@given(x=st.lists(values, min_size=2, max_size=40))
def test_describe_intervals_contain_estimates_and_nest_by_level(x):
    df = pd.DataFrame({"g": "a", "v": x})
    wide, narrow = describe(df, "v", "g", level=0.99).iloc[0], describe(df, "v", "g", level=0.8).iloc[0]
    assert wide["mean_ci_low"] <= narrow["mean_ci_low"] <= wide["mean"] <= narrow["mean_ci_high"] <= wide["mean_ci_high"]
    if np.isfinite(narrow["median_ci_low"]):
        assert narrow["median_ci_low"] <= narrow["median"] <= narrow["median_ci_high"]
        assert wide["median_ci_low"] <= narrow["median_ci_low"] or np.isnan(wide["median_ci_low"])


@FAST
@given(a=sample, b=sample)
def test_fieller_interval_widens_with_level(a, b):
    assume(np.ptp(a) > 0 or np.ptp(b) > 0)
    low95, high95 = rel_diff_fieller(a, b, level=0.95)
    low80, high80 = rel_diff_fieller(a, b, level=0.8)
    assert low95 <= low80 <= rel_diff(a, b) <= high80 <= high95


integers = st.lists(st.integers(min_value=1, max_value=50).map(float), min_size=2, max_size=25)


@FAST
@given(a=integers, b=integers)
def test_hodges_lehmann_is_shift_equivariant(a, b):  # integers: the shift is exact in floating point
    shift, (low, high) = hodges_lehmann(a, b)
    moved, (mlow, mhigh) = hodges_lehmann(a, np.array(b) + 7.0)
    assert math.isclose(moved, shift + 7.0, abs_tol=1e-9)
    assert (math.isnan(low) and math.isnan(mlow)) or math.isclose(mlow, low + 7.0, abs_tol=1e-6) or low == mlow == -math.inf


@FAST
@given(p=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=30),
       method=st.sampled_from(["holm", "bh", "bonferroni"]))
def test_corrections_never_lower_a_p_value(p, method):
    adjusted = adjust_pvalues(p, method)
    assert np.all(adjusted >= np.asarray(p) - 1e-12)
    assert np.all((adjusted >= 0) & (adjusted <= 1))
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adjusted[order]) >= -1e-12)  # ranks are kept


@FAST
@given(x=st.lists(values, min_size=3, max_size=30), scale=st.floats(0.01, 100), shift=st.floats(-1e3, 1e3))
def test_robust_z_ignores_location_and_scale(x, scale, shift):
    base = robust_z(x)
    moved = robust_z(np.array(x) * scale + shift)
    np.testing.assert_allclose(moved, base, rtol=1e-6, atol=1e-6)


@FAST
@given(a=st.lists(values, min_size=3, max_size=25), b=st.lists(values, min_size=3, max_size=25),
       margin=st.floats(0.01, 0.5))
def test_tost_decision_equals_ci_inclusion(a, b, margin):
    assume(np.ptp(a) > 0 and np.ptp(b) > 0)
    result = tost(a, b, margin)
    assert 0.0 <= result.p_value <= 1.0
    inside = result.low < result.diff_ci[0] and result.diff_ci[1] < result.high
    assert result.equivalent == inside or math.isclose(result.p_value, result.alpha, rel_tol=1e-6)
