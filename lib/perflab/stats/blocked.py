"""The analysis an RMIT design implies: cells compared within blocks, not across them.

Under a randomized multiple interleaved trials (RMIT) schedule every block (round) holds
every cell once, so a shift of the machine between rounds moves all cells of a block
together. :func:`paired_by_block` aligns two cells by block (averaging repeats inside a
block, dropping incomplete blocks) for the paired t test on the block differences, which
removes that shift; :func:`blocked_compare` runs it through :func:`~perflab.stats.compare`.
For more than one factor, :func:`mixed_model` fits the cell factors as fixed effects with
the block as a random intercept (``statsmodels`` ``MixedLM``, REML), the linear mixed
model of Bates et al. (2015). Kalibera & Jones (2013) and Georges et al. (2007) explain
why repeated runs of a benchmark are grouped by their execution context.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any, Sequence

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats

from ._input import StatsInputError, as_sample, check_level, counted
from .compare import Comparison, compare

#: Fewest complete blocks a blocked comparison accepts (a paired t needs 2; one is no test).
MIN_BLOCKS = 2


def _columns(df: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    """Raise naming the missing columns of ``df``."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise StatsInputError(where, f"columns {list(columns)}", f"no column(s) {missing}",
                              f"Use columns of the table: {list(df.columns)}.")


def paired_by_block(df: pd.DataFrame, value: str, factor: str, block: str, a: Any, b: Any
                    ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Values of levels ``a`` and ``b`` of ``factor`` aligned by ``block``, and notes.

    Repeated values of a cell in one block are averaged; blocks missing either level are
    dropped (and counted in the notes).
    """
    _columns(df, [value, factor, block], "paired_by_block")
    sub = df[df[factor].astype(str).isin([str(a), str(b)])]
    wide = sub.assign(_lv=sub[factor].astype(str)).pivot_table(index=block, columns="_lv", values=value,
                                                                aggfunc="mean")
    notes = []
    for lv in (str(a), str(b)):
        if lv not in wide.columns:
            raise StatsInputError(f"paired_by_block, column {factor!r}", f"level {lv!r}", "no such rows",
                                  f"Use levels of {factor!r}: {sorted(df[factor].astype(str).unique())}.")
    complete = wide[[str(a), str(b)]].dropna()
    if len(complete) < len(wide):
        notes.append(f"dropped {counted(len(wide) - len(complete), 'block')} missing {factor} = {a} or {b}")
    if len(complete) < MIN_BLOCKS:
        raise StatsInputError(f"paired_by_block, column {block!r}", f"at least {MIN_BLOCKS} complete blocks",
                              f"{len(complete)}", "Run more blocks, or compare without blocking.")
    return complete[str(a)].to_numpy(float), complete[str(b)].to_numpy(float), notes


def has_blocks(df: pd.DataFrame, factor: str, block: str = "block") -> bool:
    """Whether ``df`` has a ``block`` column in which at least :data:`MIN_BLOCKS` blocks hold every level of ``factor``."""
    if block not in df.columns or factor not in df.columns or df[block].isna().any():
        return False
    counts = df.groupby(block)[factor].nunique()
    return int((counts == df[factor].nunique()).sum()) >= MIN_BLOCKS


def blocked_compare(df: pd.DataFrame, value: str, factor: str, block: str, a: Any, b: Any, *,
                    level: float = 0.95, labels: tuple[str, str] | None = None) -> Comparison:
    """Level ``b`` of ``factor`` against level ``a``, paired by ``block``: the paired t on the block differences."""
    x, y, notes = paired_by_block(df, value, factor, block, a, b)
    result = compare(x, y, paired=True, level=level, labels=labels or (f"{factor}={a}", f"{factor}={b}"))
    reason = f"blocked design: paired by {block!r} ({x.size} complete blocks), so shifts between blocks cancel"
    return replace(result, reason=reason, notes=result.notes + tuple(notes))


def mixed_model(df: pd.DataFrame, value: str, factors: Sequence[str], block: str, *,
                level: float = 0.95) -> pd.DataFrame:
    """Fixed effects of ``factors`` (full factorial, treatment coding) with ``block`` as a random intercept.

    One row per fixed-effect term: estimate, standard error, z, p and the Wald interval at
    ``level``; ``attrs`` holds the block variance, the residual variance, the formula and
    whether REML converged. ``statsmodels.formula.api.mixedlm(..., groups=block).fit(reml=True)``.
    """
    level = check_level(level)
    _columns(df, [value, *factors, block], "mixed_model")
    frame = pd.DataFrame({"y": as_sample(df[value], f"column {value!r}"),
                          **{f"f{i}": df[f].astype(str).to_numpy() for i, f in enumerate(factors)},
                          "g": df[block].astype(str).to_numpy()})
    if frame["g"].nunique() < 3:
        raise StatsInputError("mixed_model", "at least 3 blocks", f"{frame['g'].nunique()}",
                              "Run more blocks, or use a fixed block effect.")
    formula = "y ~ " + " * ".join(f"C(f{i})" for i in range(len(factors)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.mixedlm(formula, frame, groups=frame["g"]).fit(reml=True)
    z = stats.norm.ppf(0.5 + level / 2)
    names = {f"f{i}": f for i, f in enumerate(factors)}
    rows = []
    for term in fit.fe_params.index:
        label = term
        for short, name in names.items():
            label = label.replace(f"C({short})", name)
        est, se = float(fit.fe_params[term]), float(fit.bse_fe[term])
        rows.append({"term": label, "estimate": est, "se": se, "z": est / se if se > 0 else np.nan,
                     "p": float(fit.pvalues[term]), "ci_low": est - z * se, "ci_high": est + z * se})
    out = pd.DataFrame(rows)
    out.attrs.update(block_variance=float(fit.cov_re.iloc[0, 0]), residual_variance=float(fit.scale),
                     formula=f"{value} ~ {' * '.join(factors)} + (1 | {block})", converged=bool(fit.converged),
                     method="linear mixed model, block as random intercept (statsmodels MixedLM, REML)")
    return out
