"""perflab's statistics stage: select rows, describe cells, compare groups, size effects, plan, check drift.

scipy and statsmodels do the arithmetic; this package names the method (defaults that do
not switch on the data), reports assumption checks beside the result, and refuses data it
cannot analyse with an error that says what to do. It computes and never formats for the
paper (that is :mod:`perflab.report`). ``docs/statistics.md`` documents every method.
"""

from ._input import DEFAULT_SEED, StatsInputError, format_p, json_value
from .anova import aligned_rank_anova, cell_means, factorial_anova
from .blocked import blocked_compare, has_blocks, mixed_model, paired_by_block
from .compare import DEFAULT_TESTS, TEST_NAMES, Comparison, compare, diagnostics
from .describe import describe, mean_ci, median_ci, summarize
from .drift import BlockEffect, Drift, block_effect, drift, drift_table, flag_outliers, robust_z
from .effect import (BOOTSTRAP_MIN_N, cliffs_delta, hedges_g, hodges_lehmann, rel_diff,
                     rel_diff_bootstrap, rel_diff_fieller)
from .equivalence import Equivalence, tost
from .levels import LevelsResult, Selection, analyse, select_rows, verdict
from .multi import Omnibus, adjust_pvalues, omnibus, posthoc
from .power import min_detectable_effect, n_for_effect, n_for_halfwidth, plan
from .published import load_claims, load_published, recheck, recheck_claims
from .summaries import per_row, published_vs_rerun, welch_from_stats
from .table import comparison_table

__all__ = [
    "DEFAULT_SEED", "StatsInputError", "format_p", "json_value",
    "blocked_compare", "has_blocks", "mixed_model", "paired_by_block",
    "aligned_rank_anova", "cell_means", "factorial_anova",
    "DEFAULT_TESTS", "TEST_NAMES", "Comparison", "compare", "diagnostics",
    "describe", "mean_ci", "median_ci", "summarize",
    "BlockEffect", "Drift", "block_effect", "drift", "drift_table", "flag_outliers", "robust_z",
    "BOOTSTRAP_MIN_N", "cliffs_delta", "hedges_g", "hodges_lehmann", "rel_diff",
    "rel_diff_bootstrap", "rel_diff_fieller",
    "Equivalence", "tost",
    "LevelsResult", "Selection", "analyse", "select_rows", "verdict",
    "Omnibus", "adjust_pvalues", "omnibus", "posthoc",
    "min_detectable_effect", "n_for_effect", "n_for_halfwidth", "plan",
    "load_claims", "load_published", "recheck", "recheck_claims",
    "per_row", "published_vs_rerun", "welch_from_stats",
    "comparison_table",
]
