"""Comparisons from summary statistics: Welch's t from mean/SD/n, per-row tests over a table, published vs rerun.

- :func:`welch_from_stats`: Welch's t and p (``scipy.stats.ttest_ind_from_stats``), the
  difference of means with its Welch interval, and the relative difference with Fieller's
  interval (:func:`~perflab.stats.effect.fieller_from_stats`), vectorized over rows.
- :func:`per_row`: one such test per row of a published table (seed 003's Table 3 layout:
  one row per group of a comparison), with the family's p-values corrected
  (:func:`~perflab.stats.multi.adjust_pvalues`; Holm by default) and the correction named.
- :func:`published_vs_rerun`: a rerun's sample against a published mean/SD/n, with the
  ratio rerun/published and a note on when only an "in kind" comparison is sound.
"""

from __future__ import annotations

import warnings
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

from ._input import StatsInputError, as_sample, check_level
from .effect import fieller_from_stats
from .family import adjusted_level
from .multi import CORRECTION_NAMES, adjust_pvalues
from .published import _number

#: Why a rerun on other machines can only be compared "in kind" with a published result.
IN_KIND_NOTE = ("in kind only: the rerun ran on other hardware and software than the publication, so its "
                "absolute values are expected to differ; compare the direction and rough size of effects "
                "(ratios between conditions measured in the same place), not the values themselves")


def welch_from_stats(mean_a: ArrayLike, sd_a: ArrayLike, n_a: ArrayLike, mean_b: ArrayLike, sd_b: ArrayLike,
                     n_b: ArrayLike, *, level: float = 0.95) -> pd.DataFrame:
    """Welch's t of b against a from summary statistics, with the difference and the relative difference.

    Columns: diff (mean_b - mean_a), diff_ci_low/high (Welch-Satterthwaite df), t, df, p
    (two-sided), rel_diff ((mean_b - mean_a) / |mean_a|), rel_diff_ci_low/high (Fieller).
    Arguments broadcast (one row per element).
    """
    level = check_level(level)
    ma, sa, na, mb, sb, nb = np.broadcast_arrays(*(np.asarray(v, dtype=float)
                                                   for v in (mean_a, sd_a, n_a, mean_b, sd_b, n_b)))
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.ttest_ind_from_stats(mb, sb, nb, ma, sa, na, equal_var=False)
        va, vb = sa**2 / na, sb**2 / nb
        df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
        half = stats.t.ppf(0.5 + level / 2, df) * np.sqrt(va + vb)
        low, high = fieller_from_stats(ma, np.sqrt(va), na, mb, np.sqrt(vb), nb, level=level)
        rel = np.where(ma != 0, (mb - ma) / np.abs(ma), np.nan)
    diff = mb - ma
    return pd.DataFrame({"diff": np.atleast_1d(diff), "diff_ci_low": np.atleast_1d(diff - half),
                         "diff_ci_high": np.atleast_1d(diff + half), "t": np.atleast_1d(res.statistic),
                         "df": np.atleast_1d(df), "p": np.atleast_1d(res.pvalue), "rel_diff": np.atleast_1d(rel),
                         "rel_diff_ci_low": np.atleast_1d(low), "rel_diff_ci_high": np.atleast_1d(high)})


def per_row(table: pd.DataFrame, *, a: str, b: str, correction: str = "holm", level: float = 0.95) -> pd.DataFrame:
    """Welch's t of group ``b`` against group ``a`` for every ``name`` of a published table.

    ``table`` has one row per group of a comparison (columns name, group, mean, sd, n, as
    :func:`~perflab.stats.published.load_published` reads them). The p-values of all rows
    form one family, corrected by ``correction`` (Holm by default: family-wise error; "bh"
    for the false discovery rate); with ``"bonferroni"`` the intervals are Bonferroni's
    simultaneous ones too (level 1 - (1 - level)/m), so that each agrees with its adjusted p
    (:mod:`perflab.stats.family`). ``attrs`` names the correction, the family size and the
    intervals' level.
    Rows missing a value are kept with nan results and left out of the family.
    """
    source = table.attrs.get("source", "table")
    missing = [c for c in ("name", "group", "mean", "sd", "n") if c not in table.columns]
    if missing:
        raise StatsInputError(source, "columns name, group, mean, sd, n", f"no column(s) {missing}",
                              "Use the published-summaries layout (docs/statistics.md).")
    groups = set(table["group"].astype(str))
    if {a, b} - groups:
        raise StatsInputError(f"{source}, column 'group'", f"groups {a!r} and {b!r}", f"groups {sorted(groups)}",
                              "Pass two of the listed groups.")
    rows = []
    for name, sub in table.groupby("name", sort=False):
        cells = {}
        for side, group in (("a", a), ("b", b)):
            pick = sub[sub["group"].astype(str) == group]
            for field in ("mean", "sd", "n"):
                text = pick[field].iloc[0] if len(pick) else ""
                blank = pd.isna(text) or str(text).strip() == ""
                cells[f"{field}_{side}"] = np.nan if blank else _number(text, f"{source}, name {name!r}, {field}")
        rows.append({"name": name, **cells})
    out = pd.DataFrame(rows)
    complete = int(out[["mean_a", "sd_a", "n_a", "mean_b", "sd_b", "n_b"]].notna().all(axis=1).sum())
    each = adjusted_level(level, complete) if correction == "bonferroni" else level
    res = welch_from_stats(out["mean_a"], out["sd_a"], out["n_a"], out["mean_b"], out["sd_b"], out["n_b"], level=each)
    out = pd.concat([out, res], axis=1)
    out["p_adjusted"] = adjust_pvalues(out["p"].to_numpy(), correction)
    out.attrs.update(correction=CORRECTION_NAMES[correction], family=int(np.isfinite(out["p"]).sum()),
                     groups=(a, b), level=each)
    return out


def published_vs_rerun(published: Mapping[str, float], rerun: Sequence[float], *, level: float = 0.95,
                       same_setup: bool = False) -> dict[str, object]:
    """Compare a rerun's sample with a published mean, SD and n (Welch's t from summary statistics).

    Returns the :func:`welch_from_stats` values of rerun against published (``diff`` is
    rerun - published; ``ratio`` = rerun mean / published mean with its Fieller interval)
    and ``note``: unless ``same_setup`` (same hardware and software as the publication),
    the comparison is sound "in kind" only (:data:`IN_KIND_NOTE`).
    """
    x = as_sample(rerun, "rerun sample", min_n=2)
    try:
        mean, sd, n = (float(published[k]) for k in ("mean", "sd", "n"))
    except (KeyError, TypeError, ValueError):
        raise StatsInputError("published", "a mapping with numeric mean, sd and n", repr(dict(published)),
                              "Pass the published row's mean, SD and n.") from None
    row = welch_from_stats(mean, sd, n, x.mean(), x.std(ddof=1), x.size, level=level).iloc[0].to_dict()
    row.update(ratio=1 + np.sign(mean) * row["rel_diff"], ratio_ci_low=1 + np.sign(mean) * row["rel_diff_ci_low"],
               ratio_ci_high=1 + np.sign(mean) * row["rel_diff_ci_high"], n_rerun=int(x.size), n_published=n,
               note="same setup: values comparable" if same_setup else IN_KIND_NOTE)
    if mean < 0:
        row["ratio_ci_low"], row["ratio_ci_high"] = row["ratio_ci_high"], row["ratio_ci_low"]
    return row
