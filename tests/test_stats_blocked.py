"""The blocked (paired) analysis of RMIT data: error rate under the null, power against Welch, mixed model.

Simulated RMIT campaigns: every block holds both cells once; the block shifts both cells by a
common normal amount (SD 2, the machine moving between rounds) on top of independent noise
(SD 1). Seeded; the paired t runs vectorized (``scipy.stats.ttest_rel``) and the first draws
are checked against :func:`perflab.stats.blocked.blocked_compare`, which the library uses.
Tolerances are binomial standard errors of the simulated rates.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from perflab.stats import StatsInputError, analyse
from perflab.stats.blocked import blocked_compare, has_blocks, mixed_model, paired_by_block

DRAWS = 4000
BLOCKS = 12


def _draws(rng: np.random.Generator, effect: float) -> tuple[np.ndarray, np.ndarray]:
    shift = rng.normal(0, 2.0, (DRAWS, BLOCKS))
    a = 10 + shift + rng.normal(0, 1.0, (DRAWS, BLOCKS))
    b = 10 + effect + shift + rng.normal(0, 1.0, (DRAWS, BLOCKS))
    return a, b


def _frame(a: np.ndarray, b: np.ndarray) -> pd.DataFrame:
    rows = [{"cell": c, "block": i, "value": v} for i in range(a.size) for c, v in (("a", a[i]), ("b", b[i]))]
    return pd.DataFrame(rows)


def test_blocked_analysis_holds_its_error_rate_under_the_null():
    a, b = _draws(np.random.default_rng(25), 0.0)
    p = stats.ttest_rel(b, a, axis=1).pvalue
    for i in range(20):  # the library's blocked comparison is this test
        c = blocked_compare(_frame(a[i], b[i]), "value", "cell", "block", "a", "b")
        assert c.paired and math.isclose(c.p_value, p[i], rel_tol=1e-9)
    rate, se = float(np.mean(p < 0.05)), math.sqrt(0.05 * 0.95 / DRAWS)
    assert abs(rate - 0.05) < 3 * se, rate


def test_blocked_analysis_beats_welch_in_power_on_blocked_data():
    a, b = _draws(np.random.default_rng(26), 1.0)
    paired = float(np.mean(stats.ttest_rel(b, a, axis=1).pvalue < 0.05))
    welch = float(np.mean(stats.ttest_ind(b, a, axis=1, equal_var=False).pvalue < 0.05))
    se = math.sqrt(0.25 / DRAWS)
    # the block differences have SD sqrt(2): d = 1 / sqrt(2) over 12 blocks; Welch sees SD sqrt(5) per cell
    expected = TTestPower().power(effect_size=1 / math.sqrt(2), nobs=BLOCKS, alpha=0.05)
    assert paired - welch > 10 * se, (paired, welch)
    assert abs(paired - expected) < 4 * se, (paired, expected)


def test_levels_analysis_pairs_by_block_when_the_design_has_blocks():
    rng = np.random.default_rng(3)
    a, b = _draws(rng, 1.0)
    df = _frame(a[0], b[0]).rename(columns={"cell": "path"})
    assert has_blocks(df, "path")
    result = analyse(df, metric="value", factor="path")
    assert result.comparisons[0].test == "paired t" and "blocked design" in result.comparisons[0].reason
    assert not has_blocks(df.drop(columns="block"), "path")
    assert analyse(df.drop(columns="block"), metric="value", factor="path").comparisons[0].test == "Welch's t"


def test_incomplete_blocks_are_dropped_and_counted():
    df = _frame(np.arange(5.0), np.arange(5.0) + 1).iloc[:-1]
    x, y, notes = paired_by_block(df, "value", "cell", "block", "a", "b")
    assert x.size == 4 and notes == ["dropped 1 block missing cell = a or b"]
    with pytest.raises(StatsInputError, match="complete blocks"):
        paired_by_block(df.iloc[:3], "value", "cell", "block", "a", "b")


def test_mixed_model_recovers_the_fixed_effect_and_the_block_variance():
    rng = np.random.default_rng(7)
    rows = []
    for block in range(30):
        shift = rng.normal(0, 2.0)
        for f in ("x", "y"):
            for g in ("1", "2"):
                effect = (1.0 if f == "y" else 0.0) + (0.5 if g == "2" else 0.0)
                rows.append({"f": f, "g": g, "block": block, "value": 10 + effect + shift + rng.normal(0, 1.0)})
    table = mixed_model(pd.DataFrame(rows), "value", ["f", "g"], "block").set_index("term")
    est = table.loc["f[T.y]"]
    assert est["ci_low"] < 1.0 < est["ci_high"] and est["p"] < 0.001
    assert 1.0 < table.attrs["block_variance"] < 9.0  # true 4; 30 blocks
    assert "random intercept" in table.attrs["method"]


def test_factorial_anova_takes_the_block_out_of_the_residual():
    from perflab.stats import factorial_anova
    rng = np.random.default_rng(9)
    rows = []
    for block in range(10):
        shift = rng.normal(0, 5.0)
        for f in ("x", "y"):
            for g in ("1", "2"):
                rows.append({"f": f, "g": g, "block": block,
                             "value": 10 + (1.0 if f == "y" else 0.0) + shift + rng.normal(0, 0.5)})
    df = pd.DataFrame(rows)
    plain = factorial_anova(df, "value", ["f", "g"]).set_index("term")
    blocked = factorial_anova(df, "value", ["f", "g"], block="block").set_index("term")
    assert "block" in blocked.index and blocked.attrs["formula"].endswith("+ block")
    # the block shifts (SD 5) swell the unblocked residual; blocked, only the noise (SD 0.5) is left
    assert blocked.loc["f", "F"] > 20 * plain.loc["f", "F"] and blocked.loc["f", "p"] < plain.loc["f", "p"]
