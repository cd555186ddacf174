"""Result tables of comparisons: test, n, effect with its interval, effect sizes and corrected p-values.

:func:`comparison_table` gathers :class:`~perflab.stats.compare.Comparison` results into
one tidy frame with the family's p-values corrected (:func:`~perflab.stats.multi.adjust_pvalues`).
Formatting it for the paper belongs to :mod:`perflab.report.tables`.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from ._input import StatsInputError
from .compare import Comparison
from .multi import CORRECTION_NAMES, adjust_pvalues


def comparison_table(comparisons: Sequence[Comparison], *, correction: str = "holm") -> pd.DataFrame:
    """One row per comparison ("b vs a") with its test, n, means, effect, effect sizes, p and corrected p.

    ``estimate`` is the effect the test is about (``effect`` names it) and ``rel_diff`` its
    relative form (see :class:`~perflab.stats.compare.Comparison`). The family for the
    correction is the whole sequence. ``attrs`` records the correction and the level.
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
        "mean_a": c.mean_a, "mean_b": c.mean_b, "effect": c.effect, "estimate": c.estimate,
        "estimate_ci_low": c.estimate_ci[0], "estimate_ci_high": c.estimate_ci[1], "rel_diff": c.rel_diff,
        "rel_diff_ci_low": c.rel_diff_ci[0], "rel_diff_ci_high": c.rel_diff_ci[1],
        "ci_method": c.rel_diff_ci_method, "hedges_g": c.hedges_g, "cliffs_delta": c.cliffs_delta,
        "p_value": c.p_value,
    } for c in comparisons]
    out = pd.DataFrame(rows)
    out["p_adjusted"] = adjust_pvalues(out["p_value"].to_numpy(), correction)
    out["correction"] = CORRECTION_NAMES[correction]
    out.attrs.update(correction=CORRECTION_NAMES[correction], level=levels.pop())
    return out
