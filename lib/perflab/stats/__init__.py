"""perflab's statistics stage: describe cells, compare groups, size effects, plan, check drift.

scipy and statsmodels do the arithmetic; this package chooses the method, checks its
assumptions, names it in the result, and refuses data it cannot analyse with an error
that says what to do. ``docs/statistics.md`` documents every method.
"""

from ._input import DEFAULT_SEED, StatsInputError
from .compare import TEST_NAMES, Comparison, choose_test, compare
from .describe import describe, mean_ci, median_ci, summarize
from .drift import BlockEffect, Drift, block_effect, drift, drift_table, flag_outliers, robust_z
from .effect import (cliffs_delta, hedges_g, hodges_lehmann, rel_diff, rel_diff_bootstrap,
                     rel_diff_fieller)
from .equivalence import Equivalence, tost
from .multi import Omnibus, adjust_pvalues, omnibus, posthoc
from .power import min_detectable_effect, n_for_effect, n_for_halfwidth, plan
from .published import load_claims, load_published, recheck, recheck_claims, recheck_table_latex
from .table import comparison_table, comparison_table_latex

__all__ = [
    "DEFAULT_SEED", "StatsInputError",
    "TEST_NAMES", "Comparison", "choose_test", "compare",
    "describe", "mean_ci", "median_ci", "summarize",
    "BlockEffect", "Drift", "block_effect", "drift", "drift_table", "flag_outliers", "robust_z",
    "cliffs_delta", "hedges_g", "hodges_lehmann", "rel_diff", "rel_diff_bootstrap", "rel_diff_fieller",
    "Equivalence", "tost",
    "Omnibus", "adjust_pvalues", "omnibus", "posthoc",
    "min_detectable_effect", "n_for_effect", "n_for_halfwidth", "plan",
    "load_claims", "load_published", "recheck", "recheck_claims", "recheck_table_latex",
    "comparison_table", "comparison_table_latex",
]
