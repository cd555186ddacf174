"""Multi-factor designs: factorial ANOVA with interactions, and its aligned-rank-transform alternative.

- :func:`factorial_anova`: ``value ~ C(f1) * C(f2) * ...`` by OLS (``statsmodels.formula.api.ols``)
  and ``statsmodels.stats.anova.anova_lm`` of type II (default: each term adjusted for the
  terms that do not contain it; the usual choice when interactions are small) or type III
  (each term adjusted for all others, with sum-to-zero contrasts; for unbalanced designs
  with interactions). Partial eta squared per term.
- :func:`aligned_rank_anova`: the aligned rank transform (Wobbrock et al. 2011; Higgins &
  Tashtoush 1994): for each term the response is aligned (residual of the full model plus
  that term's estimated effect), ranked, and the full factorial ANOVA of the ranks gives the
  F test of that term only. A rank-based analysis of main effects and interactions.
- :func:`cell_means`: the mean, SD and n of every cell, for interaction plots and heatmaps.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Sequence

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm

from ._input import StatsInputError, as_sample, check_labels, scale_of

#: Sums of squares accepted by :func:`factorial_anova` and what each adjusts for.
ANOVA_TYPES = {2: "type II (each term adjusted for the terms that do not contain it)",
               3: "type III (each term adjusted for all others; sum-to-zero contrasts)"}


def _frame(df: pd.DataFrame, value: str, factors: Sequence[str], source: str) -> pd.DataFrame:
    """The response (rescaled) and the factors as strings, checked: columns exist, labels non-blank, >= 2 levels."""
    factors = list(factors)
    missing = [c for c in [value, *factors] if c not in df.columns]
    if missing:
        raise StatsInputError(source, f"columns {[value, *factors]}", f"no column(s) {missing}",
                              f"Use columns of the table: {list(df.columns)}.")
    if not 1 <= len(factors) <= 3:
        raise StatsInputError(f"{source}, factors", "one to three factors", f"{factors}", "Name one to three factors.")
    y = as_sample(df[value], f"{source}, column {value!r}")
    frame = pd.DataFrame({"y": y / scale_of(y)})
    for i, f in enumerate(factors):
        check_labels(df[f], f, source)
        frame[f"f{i}"] = df[f].astype(str).to_numpy()
        if frame[f"f{i}"].nunique() < 2:
            raise StatsInputError(f"{source}, column {f!r}", "at least 2 levels", f"{frame[f'f{i}'].nunique()}",
                                  "Leave constant factors out of the model.")
    return frame


def _formula(k: int, typ: int) -> str:
    """The full factorial formula of k coded factors (sum-to-zero contrasts for type III)."""
    terms = [f"C(f{i}, Sum)" if typ == 3 else f"C(f{i})" for i in range(k)]
    return "y ~ " + " * ".join(terms)


def _term_name(term: str, factors: Sequence[str]) -> str:
    """``C(f0):C(f1, Sum)`` -> ``"numjobs:iodepth"``."""
    parts = [factors[int(p.split("(f", 1)[1][0])] for p in term.split(":")]
    return ":".join(parts)


def factorial_anova(df: pd.DataFrame, value: str, factors: Sequence[str], *, typ: int = 2,
                    source: str = "table", block: str | None = None) -> pd.DataFrame:
    """Factorial ANOVA of ``value`` on one to three ``factors`` with all their interactions.

    One row per term (main effects, interactions, Residual): df, sum_sq, F, p and partial
    eta squared (sum_sq / (sum_sq + residual sum_sq)). With ``block`` (an RMIT design's
    round) the block enters as an additive term, the randomized complete block ANOVA: the
    shifts of the machine between rounds leave the residual and get a row of their own.
    ``attrs`` states the type of sums of squares and the formula. Assumes normal residuals
    with equal variance; see :func:`aligned_rank_anova` for a rank-based alternative.
    """
    if typ not in ANOVA_TYPES:
        raise StatsInputError("factorial_anova(typ=...)", "2 or 3", repr(typ), "Use type II or III sums of squares.")
    frame = _frame(df, value, factors, source)
    formula = _formula(len(factors), typ)
    if block is not None:
        frame["blk"] = df[block].astype(str).to_numpy()
        formula += " + C(blk, Sum)" if typ == 3 else " + C(blk)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = anova_lm(smf.ols(formula, data=frame).fit(), typ=typ)
    table = table.drop(index=[t for t in table.index if t == "Intercept"])
    residual = float(table.loc["Residual", "sum_sq"])
    out = pd.DataFrame({
        "term": [t if t == "Residual" else block if "blk" in t else _term_name(t, factors) for t in table.index],
        "df": table["df"].to_numpy(), "sum_sq": table["sum_sq"].to_numpy() * scale_of(df[value].to_numpy()) ** 2,
        "F": table["F"].to_numpy(), "p": table["PR(>F)"].to_numpy(),
        "partial_eta_sq": (table["sum_sq"] / (table["sum_sq"] + residual)).to_numpy(),
    })
    out.loc[out["term"] == "Residual", ["F", "p", "partial_eta_sq"]] = np.nan
    out.attrs.update(anova_type=ANOVA_TYPES[typ],
                     formula=f"{value} ~ {' * '.join(factors)}" + (f" + {block}" if block else ""))
    return out


def _effect(frame: pd.DataFrame, term: tuple[int, ...]) -> np.ndarray:
    """Estimated effect of ``term`` per row: alternating sum of the marginal means of its subsets."""
    effect = np.zeros(len(frame))
    for r in range(len(term) + 1):
        for subset in itertools.combinations(term, r):
            cols = [f"f{i}" for i in subset]
            means = frame.groupby(cols)["y"].transform("mean").to_numpy() if cols else np.full(len(frame),
                                                                                               frame["y"].mean())
            effect += (-1) ** (len(term) - r) * means
    return effect


def aligned_rank_anova(df: pd.DataFrame, value: str, factors: Sequence[str], *, source: str = "table") -> pd.DataFrame:
    """Aligned rank transform ANOVA (Wobbrock et al. 2011) of ``value`` on one to three factors.

    For each term: aligned = (y - cell mean) + the term's estimated effect; mid-ranks of the
    aligned values; the F test of that term in the full factorial ANOVA of the ranks (type
    III, so that balanced and unbalanced designs read the same term). One row per term:
    df, F, p. Every cell needs at least two values.
    """
    frame = _frame(df, value, factors, source)
    cols = [f"f{i}" for i in range(len(factors))]
    sizes = frame.groupby(cols).size()
    if (sizes < 2).any():
        raise StatsInputError(f"{source}, factors {list(factors)}", "at least 2 values in every cell",
                              f"{int((sizes < 2).sum())} cell(s) with fewer", "Run more repetitions per cell.")
    resid = frame["y"] - frame.groupby(cols)["y"].transform("mean")
    rows = []
    for r in range(1, len(factors) + 1):
        for term in itertools.combinations(range(len(factors)), r):
            ranked = frame.assign(y=stats.rankdata(resid + _effect(frame, term)))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                table = anova_lm(smf.ols(_formula(len(factors), 3), data=ranked).fit(), typ=3)
            key = ":".join(f"C(f{i}, Sum)" for i in term)
            rows.append({"term": ":".join(factors[i] for i in term), "df": float(table.loc[key, "df"]),
                         "df_residual": float(table.loc["Residual", "df"]), "F": float(table.loc[key, "F"]),
                         "p": float(table.loc[key, "PR(>F)"])})
    out = pd.DataFrame(rows)
    out.attrs.update(method="aligned rank transform (Wobbrock et al. 2011), type III F on the ranks",
                     formula=f"{value} ~ {' * '.join(factors)}")
    return out


def cell_means(df: pd.DataFrame, value: str, factors: Sequence[str], *, source: str = "table") -> pd.DataFrame:
    """Mean, SD and n of ``value`` in every cell of ``factors`` (for interaction plots and heatmaps)."""
    frame = _frame(df, value, factors, source)
    k = scale_of(df[value].to_numpy())
    cols = [f"f{i}" for i in range(len(factors))]
    out = frame.groupby(cols)["y"].agg(["mean", "std", "size"]).reset_index()
    out.columns = [*factors, "mean", "sd", "n"]
    out[["mean", "sd"]] *= k
    return out
