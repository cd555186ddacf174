"""Edge cases of perflab.stats: clear errors (n < 2, NaN, bad arguments) or documented results.

Documented results checked here: n = 1 and zero variance in ``describe``; constant
groups in ``compare``; unbounded Fieller and Hodges-Lehmann intervals; NaN p-values
in corrections; MAD = 0 in robust z-scores; constant drift sequences.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from perflab.stats import (StatsInputError, adjust_pvalues, block_effect, compare, describe, drift,
                           hodges_lehmann, mean_ci, min_detectable_effect, n_for_halfwidth, omnibus,
                           posthoc, rel_diff, rel_diff_fieller, robust_z, tost)


def test_nan_is_refused_with_where_and_what_to_do():
    with pytest.raises(StatsInputError, match=r"sample b: expected finite numbers; found 1 NaN/inf") as err:
        compare([1.0, 2.0, 3.0], [1.0, float("nan"), 2.0])
    assert "dropna" in str(err.value)


def test_describe_names_the_group_holding_nan():
    df = pd.DataFrame({"cell": ["x", "x", "y", "y"], "rtt": [1.0, 2.0, np.nan, 3.0]})
    with pytest.raises(StatsInputError, match=r"column 'rtt', group cell='y'"):
        describe(df, "rtt", "cell")


def test_describe_missing_column_lists_the_columns():
    with pytest.raises(StatsInputError, match=r"no column\(s\) \['nope'\]"):
        describe(pd.DataFrame({"v": [1.0]}), "v", "nope")


@pytest.mark.parametrize("a,b", [([1.0], [1.0, 2.0]), ([1.0, 2.0], []), ([], [])])
def test_compare_needs_two_values_per_group(a, b):
    with pytest.raises(StatsInputError, match="expected at least 2 values"):
        compare(a, b)


def test_describe_documents_n_equal_one_and_zero_variance():
    df = pd.DataFrame({"g": ["one", "flat", "flat", "flat"], "v": [5.0, 2.0, 2.0, 2.0]})
    out = describe(df, "v", "g").set_index("g")
    one, flat = out.loc["one"], out.loc["flat"]
    assert one["n"] == 1 and one["mean"] == 5.0
    assert all(math.isnan(one[c]) for c in ("sd", "cv", "mean_ci_low", "mean_ci_high", "median_ci_low"))
    assert flat["sd"] == 0.0 and flat["cv"] == 0.0
    assert (flat["mean_ci_low"], flat["mean_ci_high"]) == (2.0, 2.0)
    assert mean_ci([3.0, 3.0]) == (3.0, 3.0)


def test_constant_groups_keep_the_named_test_and_say_normality_cannot_be_checked():
    differ = compare([1.0, 1.0, 1.0], [2.0, 2.0, 2.0])
    assert differ.test == "Welch's t" and differ.statistic == math.inf and differ.p_value == 0.0
    assert any("cannot be checked" in n for n in differ.notes)
    assert differ.hedges_g == math.inf and differ.cliffs_delta == 1.0
    assert differ.estimate_ci == (1.0, 1.0) and differ.rel_diff_ci == (1.0, 1.0)
    ranked = compare([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], test="mannwhitney")
    assert ranked.test == "Mann-Whitney U" and ranked.estimate == 1.0
    same = compare([1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    assert math.isnan(same.p_value) and math.isnan(same.hedges_g) and same.cliffs_delta == 0.0


def test_tiny_groups_run_the_default_test_with_a_note():
    result = compare([1.0, 2.0], [3.0, 4.5, 5.0])
    assert result.test == "Welch's t" and result.reason.startswith("default for independent groups")
    assert "normality of a cannot be checked (n < 3 or constant)" in result.notes


def test_paired_constant_differences_keep_the_paired_t():
    result = compare([1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 4.0, 5.0], paired=True)
    assert result.test == "paired t" and result.estimate == 1.0 and result.estimate_ci == (1.0, 1.0)
    assert any("differences cannot be checked" in n for n in result.notes)


def test_argument_errors_name_the_fix():
    with pytest.raises(StatsInputError, match="equal length"):
        compare([1.0, 2.0, 3.0], [1.0, 2.0], paired=True)
    with pytest.raises(StatsInputError, match="paired=True for the paired test 'wilcoxon'"):
        compare([1.0, 2.0, 3.0], [1.0, 2.0, 4.0], test="wilcoxon")
    for name in ("ttest", "auto"):  # no automatic choice any more
        with pytest.raises(StatsInputError, match="no automatic choice"):
            compare([1.0, 2.0, 3.0], [1.0, 2.0, 4.0], test=name)
    with pytest.raises(StatsInputError, match="strictly between 0 and 1"):
        compare([1.0, 2.0, 3.0], [1.0, 2.0, 4.0], level=95)
    with pytest.raises(StatsInputError, match="non-blank group label"):
        compare([1.0, 2.0, 3.0], [1.0, 2.0, 4.0], labels=("a", " "))


def test_ratio_intervals_when_mean_a_is_zero_or_indistinguishable_from_zero():
    assert math.isnan(rel_diff([-1.0, 1.0], [2.0, 3.0]))
    assert all(math.isnan(v) for v in rel_diff_fieller([-1.0, 1.0], [2.0, 3.0]))
    assert rel_diff_fieller([-1.0, 2.0, 0.5], [2.0, 3.0, 2.5]) == (-math.inf, math.inf)


def test_hodges_lehmann_interval_is_unbounded_when_n_is_too_small_to_reject():
    shift, ci = hodges_lehmann([1.0, 2.0], [3.0, 5.0])
    assert shift == 2.5
    assert ci == (-math.inf, math.inf)


def test_adjust_pvalues_keeps_nan_out_of_the_family():
    out = adjust_pvalues([0.01, float("nan"), 0.04], "holm")
    assert math.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2]], [0.02, 0.04])
    with pytest.raises(StatsInputError, match="one of"):
        adjust_pvalues([0.1], "sidak")


def test_robust_z_with_mad_zero_uses_mean_absolute_deviation():
    z = robust_z([2.0, 2.0, 2.0, 2.1, 1.9])
    assert np.all(np.isfinite(z))
    assert z[3] == pytest.approx(0.1 / (np.sqrt(np.pi / 2) * 0.04))
    np.testing.assert_array_equal(robust_z([4.0, 4.0, 4.0]), [0.0, 0.0, 0.0])


def test_drift_needs_four_runs_and_documents_constant_sequences():
    with pytest.raises(StatsInputError, match="at least 4 values"):
        drift([1.0, 2.0, 3.0])
    flat = drift([5.0] * 8)
    assert math.isnan(flat.lag1_autocorr) and math.isnan(flat.ljung_box_p)
    assert flat.trend == "no trend"


def test_block_effect_names_missing_cell_block_pairs():
    df = pd.DataFrame({"v": [1.0, 2.0, 1.1, 2.1, 1.2], "cell": ["a", "b", "a", "b", "a"],
                       "block": [1, 1, 2, 2, 3]})
    with pytest.raises(StatsInputError, match=r"b@3"):
        block_effect(df, "v", "cell", "block")
    with pytest.raises(StatsInputError, match="at least 2 cells and 3 blocks"):
        block_effect(df.iloc[:4], "v", "cell", "block")


def test_multi_group_errors():
    with pytest.raises(StatsInputError, match="at least 2 groups"):
        omnibus({"a": [1.0, 2.0]})
    with pytest.raises(StatsInputError, match="equal length"):
        omnibus({"a": [1.0, 2.0], "b": [1.0, 2.0, 3.0], "c": [2.0, 3.0]}, paired=True)
    with pytest.raises(StatsInputError, match=r"one of \['dunn', 'games-howell'"):
        posthoc({"a": [1.0, 2.0], "b": [1.0, 3.0]}, method="scheffe")


def test_omnibus_runs_its_post_hoc_and_documents_constant_groups():
    result = omnibus({"a": [1.0, 1.0, 1.0], "b": [1.0, 2.0, 3.0], "c": [2.0, 3.0, 4.0]})
    assert result.test == "Welch's ANOVA" and math.isnan(result.p_value)  # a zero variance has no weight
    assert result.posthoc == "Games-Howell" and len(result.pairs) == 3
    assert {p["method"] for p in result.pairs} == {"Games-Howell"}
    with pytest.raises(StatsInputError, match="paired=True for 'friedman'; found paired=False"):
        omnibus({"a": [1.0, 2.0], "b": [1.0, 3.0], "c": [2.0, 4.0]}, test="friedman")


def test_planning_and_equivalence_errors():
    with pytest.raises(StatsInputError, match="positive coefficient of variation"):
        min_detectable_effect(10, 0.0)
    with pytest.raises(StatsInputError, match="at least 2 runs"):
        min_detectable_effect(1, 0.05)
    with pytest.raises(StatsInputError, match="positive relative half-width"):
        n_for_halfwidth(0.05, -0.01)
    with pytest.raises(StatsInputError, match="positive margin"):
        tost([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], 0.0)


def test_hodges_lehmann_with_all_differences_equal():
    assert hodges_lehmann([1.0, 1.0], [8.0, 8.0]) == (7.0, (-math.inf, math.inf))  # n too small to reject
    assert hodges_lehmann([1.0] * 10, [8.0] * 10) == (7.0, (7.0, 7.0))


def test_a_fieller_interval_without_spread_still_holds_its_estimate():
    from perflab.stats.effect import rel_diff, rel_diff_fieller

    low, high = rel_diff_fieller([1.5, 1.5], [1.0, 1.0])  # found by the property test: 1 ulp outside before
    assert low <= rel_diff([1.5, 1.5], [1.0, 1.0]) <= high


def test_seed_windows_without_a_sample_length_says_what_to_pass():
    from perflab.stats import windows

    with pytest.raises(StatsInputError, match="expected a positive duration in seconds; found None"):
        windows.seed_windows(None)
