"""Drift, serial dependence, block effects and outlier flags on sequences with known structure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymannkendall
import pytest
from statsmodels.stats.diagnostic import acorr_ljungbox

from perflab.stats import block_effect, drift, drift_table, flag_outliers

RNG = np.random.default_rng(99)
NOISE = RNG.normal(0, 1, 60)


def test_independent_noise_shows_no_drift_and_matches_the_libraries():
    result = drift(NOISE)
    assert result.trend == "no trend"
    assert result.ljung_box_lags == 10
    expected = acorr_ljungbox(NOISE, lags=[10])
    assert result.ljung_box_p == pytest.approx(float(expected["lb_pvalue"].iloc[0]))
    assert result.mann_kendall_p == pytest.approx(pymannkendall.original_test(NOISE).p)
    assert result.ljung_box_p > 0.05 and abs(result.lag1_autocorr) < 0.3


def test_a_warming_machine_is_reported_as_an_increasing_trend():
    result = drift(NOISE + np.linspace(0, 4, 60))
    assert result.trend == "increasing"
    assert result.mann_kendall_p < 0.001
    assert result.sen_slope == pytest.approx(4 / 59, rel=0.3)


def test_autocorrelated_runs_are_detected():
    ar = np.zeros(60)
    for i in range(1, 60):
        ar[i] = 0.8 * ar[i - 1] + NOISE[i]
    result = drift(ar)
    assert result.lag1_autocorr > 0.5
    assert result.ljung_box_p < 0.001


def test_drift_table_sorts_each_group_by_run_order():
    df = pd.DataFrame({"cell": ["a"] * 20 + ["b"] * 20, "position": np.r_[np.arange(20), np.arange(20)],
                       "v": np.r_[np.arange(20.0), NOISE[:20]]}).sample(frac=1, random_state=1)
    out = drift_table(df, "v", "cell", "position").set_index("cell")
    assert out.loc["a", "trend"] == "increasing" and out.loc["a", "kendall_tau"] == pytest.approx(1.0)
    assert out.loc["b", "trend"] == "no trend"


def _rmit(block_shift: float) -> pd.DataFrame:
    rows = [{"cell": c, "block": k, "v": base + block_shift * k + RNG.normal(0, 0.2)}
            for k in range(8) for c, base in (("x", 10.0), ("y", 12.0), ("z", 15.0))]
    return pd.DataFrame(rows)


def test_block_effect_detects_a_shift_between_rounds_and_not_its_absence():
    shifted = block_effect(_rmit(0.5), "v", "cell", "block")
    assert shifted.anova_p < 0.001 and shifted.friedman_p < 0.01
    steady = block_effect(_rmit(0.0), "v", "cell", "block")
    assert steady.anova_p > 0.01
    assert (steady.n_cells, steady.n_blocks) == (3, 8)


def test_outliers_are_flagged_per_group_and_never_dropped():
    df = pd.DataFrame({"cell": ["a"] * 6 + ["b"] * 6,
                       "v": [10, 10.2, 9.9, 10.1, 10.0, 30, 100, 101, 99, 100.5, 99.5, 100.2]})
    out = flag_outliers(df, "v", "cell")
    assert len(out) == len(df) and out["v"].tolist() == df["v"].tolist()
    assert out["outlier"].tolist() == [False] * 5 + [True] + [False] * 6
    assert "outlier" not in df.columns
