"""Result tables of comparisons: test, n, interval method, effect sizes and corrected p-values.

:func:`comparison_table` gathers :class:`~perflab.stats.compare.Comparison` results into
one tidy frame with the family's p-values corrected (:func:`~perflab.stats.multi.adjust_pvalues`);
:func:`comparison_table_latex` prints it for the paper with significance markers and a
note that names the tests, the correction and the interval level.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import pandas as pd

from ._input import StatsInputError
from .compare import Comparison
from .multi import CORRECTION_NAMES, adjust_pvalues


def comparison_table(comparisons: Sequence[Comparison], *, correction: str = "holm") -> pd.DataFrame:
    """One row per comparison ("b vs a") with its test, n, means, effect sizes, p and corrected p.

    The family for the correction is the whole sequence. ``attrs`` records the
    correction and the interval level.
    """
    if not comparisons:
        raise StatsInputError("comparison_table", "at least one Comparison", "none",
                              "Compare some groups first.")
    levels = {c.level for c in comparisons}
    if len(levels) > 1:
        raise StatsInputError("comparison_table", "comparisons at one confidence level",
                              f"levels {sorted(levels)}", "Recompute them at a common level.")
    rows = [{
        "comparison": f"{c.labels[1]} vs {c.labels[0]}", "test": c.test, "n_a": c.n_a, "n_b": c.n_b,
        "mean_a": c.mean_a, "mean_b": c.mean_b, "rel_diff": c.rel_diff,
        "rel_diff_ci_low": c.rel_diff_ci[0], "rel_diff_ci_high": c.rel_diff_ci[1],
        "ci_method": c.rel_diff_ci_method, "hedges_g": c.hedges_g, "cliffs_delta": c.cliffs_delta,
        "p_value": c.p_value,
    } for c in comparisons]
    out = pd.DataFrame(rows)
    out["p_adjusted"] = adjust_pvalues(out["p_value"].to_numpy(), correction)
    out["correction"] = CORRECTION_NAMES[correction]
    out.attrs.update(correction=CORRECTION_NAMES[correction], level=levels.pop())
    return out


def comparison_table_latex(table: pd.DataFrame, *, caption: str, label: str, digits: int = 3) -> str:
    """A booktabs table of :func:`comparison_table` for the paper.

    Columns: comparison, test, n, relative difference with its interval (percent),
    interval method, Hedges' g, Cliff's delta, corrected p with significance markers.
    The note names the tests used, the correction and the level.
    """
    from perflab.report.latex import (escape_latex, format_ci, format_number, format_p,
                                      latex_table, significance_note)

    level = table.attrs.get("level", 0.95)
    body = pd.DataFrame({
        "Comparison": [escape_latex(s) for s in table["comparison"]],
        "Test": [escape_latex(s) for s in table["test"]],
        "$n$": [f"{a}/{b}" for a, b in zip(table["n_a"], table["n_b"])],
        r"$\Delta$ (\%)": [format_number(100 * d, digits) for d in table["rel_diff"]],
        f"{100 * level:g}\\,\\% CI": [format_ci(lo, hi, digits=digits, percent=True)
                                      for lo, hi in zip(table["rel_diff_ci_low"], table["rel_diff_ci_high"])],
        "CI method": [escape_latex(s) for s in table["ci_method"]],
        "$g$": [format_number(g, digits) for g in table["hedges_g"]],
        r"$\delta$": [format_number(d, digits) for d in table["cliffs_delta"]],
        r"$p_\mathrm{adj}$": [format_p(p, markers=True) for p in table["p_adjusted"]],
    })
    tests = ", ".join(f"{escape_latex(t)} ({k})" for t, k in Counter(table["test"]).items())
    notes = [rf"$\Delta$: relative difference of means, b/a $-$ 1. Tests (two-sided): {tests}. "
             rf"$p$ adjusted by {escape_latex(table.attrs.get('correction', 'none'))} over "
             rf"{len(table)} comparisons. $g$: Hedges' $g$; $\delta$: Cliff's delta. "
             rf"{significance_note()}."]
    return latex_table(body, caption=caption, label=label, notes=notes, escape=False,
                       column_format="llrrllrrr")
