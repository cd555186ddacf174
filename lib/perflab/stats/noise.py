"""Platform noise modelled, not filtered: a question's blocked comparison adjusted for the hypervisor's steal.

On a virtual machine the hypervisor takes CPU time from the guest (``steal``), unevenly over
time and more from a busier guest; a treatment that makes the guest busier can therefore act
partly through the hypervisor. Dropping the samples with high steal would select on a
consequence of the treatment, so the steal is modelled instead. Every question decided with the
blocked analysis gets this pre-registered sensitivity analysis (the rule is the project's, stated
in docs/statistics.md, not a choice per question): within each complete block, the difference of
the question's value between level b and level a, and the same difference of the steal the
samples' contention records measured (``contention_steal``), are fitted by ordinary least squares

    diff_i = b0 + b1 * (steal_b - steal_a)_i + e_i

(``statsmodels`` OLS). The intercept ``b0`` is the effect at equal steal in both cells, the
adjusted effect beside the primary one; ``b1`` is the change per unit of steal difference. The
relative effect divides ``b0`` by level a's mean, as the primary analysis does, and its interval
is ``b0``'s t interval at the question's family-adjusted level divided by that mean (the
uncertainty of the mean is not propagated: a sensitivity check, not the verdict). The adjusted
verdict is decided by the primary rule (:mod:`perflab.stats.verdict`) on the intercept's test,
interval and two one-sided tests; a question whose verdict word changes is sensitive to platform
noise. The block as the unit that cancels slow drift and the steal as a measured covariate
follow Kalibera & Jones (2013) on repetition at each level of variance and Georges et al.
(2007) on rigorous evaluation under non-determinism.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats as st

from ._input import StatsInputError, plain
from .blocked import MIN_BLOCKS
from .family import adjusted_level
from .names import TEST_NAMES
from .verdict import Decision, verdict_word

#: The tidy table's column of the steal during each sample (:data:`perflab.tidy.CONTENTION_COLUMNS`).
STEAL = "contention_steal"
#: Fewest complete blocks with steal for the adjustment: two coefficients and at least one degree of freedom left.
MIN_ADJUSTED_BLOCKS = MIN_BLOCKS + 1


@dataclass(frozen=True)
class Adjusted:
    """The blocked comparison adjusted for the within-block steal difference, and its verdict."""

    verdict: str
    blocks: int
    rel_diff: float
    ci_low: float
    ci_high: float
    ci_level: float
    p_value: float
    p_adjusted: float
    tost_p: float
    #: Change of the block difference per percentage point of steal difference, relative to a's mean.
    per_steal_point: float
    #: True when the adjusted verdict word differs from the primary one.
    sensitive: bool

    def as_dict(self) -> dict[str, Any]:
        """Return the adjusted comparison as a dict of plain values."""
        return plain(asdict(self))


def block_differences(df: pd.DataFrame, *, value: str, factor: str, a: Any, b: Any, block: str = "block",
                      steal: str = STEAL) -> pd.DataFrame:
    """Per complete block with steal in both cells: level a's and b's mean value and mean steal
    (columns ``a``, ``b``, ``steal_a``, ``steal_b``); blocks missing either are dropped."""
    missing = [c for c in (value, factor, block, steal) if c not in df.columns]
    if missing:
        raise StatsInputError("block_differences", f"columns {[value, factor, block, steal]}", f"no {missing}",
                              "Give a tidy table whose samples carry a contention record.")
    sub = df[df[factor].astype(str).isin([str(a), str(b)])].dropna(subset=[value, steal, block])
    sub = sub.assign(_lv=sub[factor].astype(str))
    wide = sub.pivot_table(index=block, columns="_lv", values=[value, steal], aggfunc="mean")
    cols = {(value, str(a)): "a", (value, str(b)): "b", (steal, str(a)): "steal_a", (steal, str(b)): "steal_b"}
    if not set(cols) <= set(wide.columns):
        return pd.DataFrame(columns=list(cols.values()))
    return wide[list(cols)].set_axis(list(cols.values()), axis=1).dropna()


def steal_adjusted(df: pd.DataFrame, primary: Decision, *, value: str, factor: str, a: Any, b: Any, expected: str,
                   alpha: float = 0.05, block: str = "block", steal: str = STEAL) -> Adjusted | None:
    """The sensitivity analysis of one question decided as ``primary`` (see the module docstring).

    None when it does not apply: a question not decided by the blocked analysis, or fewer than
    :data:`MIN_ADJUSTED_BLOCKS` complete blocks with steal recorded in both cells.
    """
    if primary.test != TEST_NAMES["paired-t"]:
        return None
    blocks = block_differences(df, value=value, factor=factor, a=a, b=b, block=block, steal=steal)
    if len(blocks) < MIN_ADJUSTED_BLOCKS:
        return None
    diff = (blocks["b"] - blocks["a"]).to_numpy(float)
    dsteal = (blocks["steal_b"] - blocks["steal_a"]).to_numpy(float)
    base = float(blocks["a"].mean())
    level = adjusted_level(1 - alpha, primary.m)
    if np.ptp(dsteal) == 0:  # no variation to fit a slope on: the intercept is the mean difference
        fit = sm.OLS(diff, np.ones((diff.size, 1))).fit()
        b0, se, slope, dof = float(fit.params[0]), float(fit.bse[0]), 0.0, float(fit.df_resid)
    else:
        fit = sm.OLS(diff, sm.add_constant(dsteal, has_constant="add")).fit()
        b0, se, slope, dof = float(fit.params[0]), float(fit.bse[0]), float(fit.params[1]), float(fit.df_resid)
    t_crit = float(st.t.ppf(0.5 + level / 2, dof))
    p = float(2 * st.t.sf(abs(b0) / se, dof)) if se > 0 else (0.0 if b0 != 0 else 1.0)
    p_adj = min(1.0, p * max(1, primary.m))
    margin = primary.sesoi * abs(base)
    if se > 0:
        tost_p = max(float(st.t.sf((b0 + margin) / se, dof)), float(st.t.cdf((b0 - margin) / se, dof)))
    else:
        tost_p = 0.0 if abs(b0) < margin else 1.0
    rel, low, high = b0 / base, (b0 - t_crit * se) / base, (b0 + t_crit * se) / base
    if base < 0:
        low, high = high, low
    word = verdict_word(tost_p < alpha / max(1, primary.m), low, high, expected, primary.sesoi, primary.testable)
    return Adjusted(verdict=word, blocks=len(blocks), rel_diff=rel, ci_low=low, ci_high=high, ci_level=level,
                    p_value=p, p_adjusted=p_adj, tost_p=tost_p,
                    per_steal_point=slope / 100 / base if math.isfinite(slope) else math.nan,
                    sensitive=word != primary.verdict)
