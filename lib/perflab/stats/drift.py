"""Independence and drift of the run sequence, block effects under RMIT, and outlier flags.

- serial dependence: lag-1 autocorrelation (``statsmodels.tsa.stattools.acf``) and the
  Ljung-Box test (``statsmodels.stats.diagnostic.acorr_ljungbox``);
- monotonic trend against run order: Mann-Kendall with Sen's slope
  (``pymannkendall.original_test``);
- a change in level: the OLS-residual CUSUM test of a constant mean (Ploberger & Kraemer
  1992, ``statsmodels.stats.diagnostic.breaks_cusumolsresid``), with the most likely
  change point (the maximum of the absolute CUSUM);
- a change in spread: Brown-Forsythe (``scipy.stats.levene(center="median")``) across
  consecutive windows of the run;
- block effect: two-way ANOVA ``value ~ C(cell) + C(block)`` (statsmodels OLS,
  ``anova_lm`` type II) and Friedman's test of blocks with cells as the blocking
  factor (``scipy.stats.friedmanchisquare``);
- outliers: robust z = (x - median) / (1.4826 MAD) (``scipy.stats.median_abs_deviation``,
  Iglewicz & Hoaglin 1993; mean absolute deviation when MAD = 0), flagged beyond a
  threshold, never dropped.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
import pymannkendall
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.diagnostic import acorr_ljungbox, breaks_cusumolsresid
from statsmodels.tsa.stattools import acf

from ._input import Sample, StatsInputError, as_sample, p_text, plain, scale_of

#: Robust-z threshold beyond which a value is flagged (Iglewicz & Hoaglin's 3.5).
OUTLIER_THRESHOLD = 3.5
#: Consecutive windows of the run compared by Brown-Forsythe, and the fewest values per window.
VARIANCE_WINDOWS, MIN_WINDOW = 4, 3


@dataclass(frozen=True)
class Drift:
    """Serial dependence and trend of one sequence of runs, in run order."""

    n: int
    lag1_autocorr: float
    ljung_box_lags: int
    ljung_box_stat: float
    ljung_box_p: float
    trend: str
    mann_kendall_p: float
    kendall_tau: float
    sen_slope: float
    level_change_stat: float = np.nan
    level_change_p: float = np.nan
    change_at: int = -1
    variance_windows: int = 0
    variance_change_p: float = np.nan

    def as_dict(self) -> dict[str, Any]:
        """Return the result as a dict of plain values."""
        return plain(asdict(self))

    def flags(self, alpha: float = 0.05) -> list[str]:
        """The checks that reject at ``alpha``, named in words (empty when none does)."""
        named = ((f"serial dependence (Ljung-Box up to lag {self.ljung_box_lags}, {p_text(self.ljung_box_p)})",
                  self.ljung_box_p),
                 (f"a monotonic trend (Mann-Kendall {p_text(self.mann_kendall_p)})", self.mann_kendall_p),
                 (f"a change in level after run {self.change_at + 1} of {self.n} "
                  f"(CUSUM {p_text(self.level_change_p)})", self.level_change_p),
                 (f"a change in spread across {self.variance_windows} windows of the run "
                  f"(Brown-Forsythe {p_text(self.variance_change_p)})", self.variance_change_p))
        return [text for text, p in named if p < alpha]


@dataclass(frozen=True)
class BlockEffect:
    """Whether the block (round of an RMIT schedule) shifts the values, across cells."""

    n_cells: int
    n_blocks: int
    anova_f: float
    anova_p: float
    friedman_stat: float
    friedman_p: float

    def as_dict(self) -> dict[str, Any]:
        """Return the result as a JSON-ready dict."""
        return plain(asdict(self))


def _check_columns(df: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    """Raise naming the missing columns of ``df``."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise StatsInputError(where, f"columns {list(columns)}", f"no column(s) {missing} among "
                              f"{list(df.columns)}", "Pass the names of existing columns.")


def drift(values: Sample, *, lags: int | None = None, alpha: float = 0.05,
          windows: int = VARIANCE_WINDOWS) -> Drift:
    """Serial dependence, trend, change in level and change in spread of ``values`` in run order.

    Ljung-Box at ``lags`` (default min(10, n // 5), at least 1), lag-1 autocorrelation,
    Mann-Kendall, the CUSUM test of a constant mean, and Brown-Forsythe across ``windows``
    consecutive windows (fewer when a window would hold under 3 values; not run below 2).
    Needs n >= 4; a constant sequence gives nan for the tests that need spread, and "no trend".
    """
    x = as_sample(values, "drift sequence", min_n=4)
    k = scale_of(x)
    x = x / k
    lags = lags or max(1, min(10, x.size // 5))
    varies = np.ptp(x) > 0
    windows = min(windows, x.size // MIN_WINDOW)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r1 = float(acf(x, nlags=1)[1]) if varies else np.nan
        lb = acorr_ljungbox(x, lags=[lags]) if varies else None
        mk = pymannkendall.original_test(x, alpha=alpha)
        resid = x - np.mean(x)
        cusum = breaks_cusumolsresid(resid, ddof=1) if varies else (np.nan, np.nan)
        chunks = np.array_split(x, windows) if windows >= 2 else []
        bf = float(stats.levene(*chunks, center="median").pvalue) if varies and len(chunks) else np.nan
    return Drift(n=int(x.size), lag1_autocorr=r1, ljung_box_lags=int(lags),
                 ljung_box_stat=float(lb["lb_stat"].iloc[0]) if lb is not None else np.nan,
                 ljung_box_p=float(lb["lb_pvalue"].iloc[0]) if lb is not None else np.nan,
                 trend=str(mk.trend), mann_kendall_p=float(mk.p), kendall_tau=float(mk.Tau),
                 sen_slope=float(mk.slope) * k, level_change_stat=float(cusum[0]), level_change_p=float(cusum[1]),
                 change_at=int(np.argmax(np.abs(np.cumsum(resid)))) if varies else -1,
                 variance_windows=len(chunks), variance_change_p=bf)


def drift_table(df: pd.DataFrame, value: str, by: str | list[str], order: str, *,
                alpha: float = 0.05) -> pd.DataFrame:
    """One :class:`Drift` row per group of ``by``, each sequence sorted by ``order``."""
    keys = [by] if isinstance(by, str) else list(by)
    _check_columns(df, [value, order, *keys], "drift_table")
    rows = []
    for group, sub in df.sort_values(order).groupby(keys, sort=True):
        group = group if isinstance(group, tuple) else (group,)
        rows.append({**dict(zip(keys, group)), **asdict(drift(sub[value], alpha=alpha))})
    return pd.DataFrame(rows)


def block_effect(df: pd.DataFrame, value: str, cell: str, block: str) -> BlockEffect:
    """Test for a block effect across cells (RMIT rounds), parametric and rank-based.

    Two-way ANOVA gives the F test of ``block`` adjusted for ``cell``. Friedman ranks
    the blocks within each cell; it needs every cell in every block (repeated values
    of a cell in a block are averaged), at least 3 blocks and 2 cells.
    """
    _check_columns(df, [value, cell, block], "block_effect")
    frame = pd.DataFrame({"y": as_sample(df[value], f"column {value!r}"),
                          "cell": df[cell].astype(str).to_numpy(), "block": df[block].astype(str).to_numpy()})
    wide = frame.pivot_table(index="cell", columns="block", values="y", aggfunc="mean")
    if wide.shape[0] < 2 or wide.shape[1] < 3:
        raise StatsInputError("block_effect", "at least 2 cells and 3 blocks",
                              f"{wide.shape[0]} cell(s), {wide.shape[1]} block(s)",
                              "Run more blocks (rounds) before testing for a block effect.")
    if wide.isna().any().any():
        holes = [f"{wide.index[i]}@{wide.columns[j]}" for i, j in zip(*np.where(wide.isna()))]
        raise StatsInputError("block_effect", "every cell measured in every block",
                              f"{len(holes)} missing cell@block pair(s), e.g. {holes[:3]}",
                              "Drop incomplete blocks or rerun the failed runs.")
    table = anova_lm(smf.ols("y ~ C(cell) + C(block)", data=frame).fit(), typ=2)
    fried = stats.friedmanchisquare(*[wide[c].to_numpy() for c in wide.columns])
    return BlockEffect(n_cells=int(wide.shape[0]), n_blocks=int(wide.shape[1]),
                       anova_f=float(table.loc["C(block)", "F"]), anova_p=float(table.loc["C(block)", "PR(>F)"]),
                       friedman_stat=float(fried.statistic), friedman_p=float(fried.pvalue))


def robust_z(values: Sample) -> np.ndarray:
    """Robust z-scores (x - median) / (1.4826 MAD).

    When more than half the values are equal (MAD = 0) the scale falls back to
    1.2533 × the mean absolute deviation from the median (the normal-consistent
    constant √(π/2)); a constant sample gives all zeros.
    """
    x = as_sample(values, "outlier sample")
    dev = x - np.median(x)
    scale = stats.median_abs_deviation(x, scale="normal") or np.sqrt(np.pi / 2) * np.mean(np.abs(dev))
    return dev / scale if scale > 0 else np.zeros_like(x)


def flag_outliers(df: pd.DataFrame, value: str, by: str | list[str] | None = None, *,
                  threshold: float = OUTLIER_THRESHOLD) -> pd.DataFrame:
    """Return a copy of ``df`` with ``robust_z`` and a boolean ``outlier`` column, per group of ``by``.

    Nothing is removed: the caller decides and reports what to do with flagged runs.
    """
    keys = [] if by is None else [by] if isinstance(by, str) else list(by)
    _check_columns(df, [value, *keys], "flag_outliers")
    out = df.copy()
    if keys:
        out["robust_z"] = out.groupby(keys, sort=False)[value].transform(lambda s: robust_z(s))
    else:
        out["robust_z"] = robust_z(out[value])
    out["outlier"] = out["robust_z"].abs() > threshold
    return out
