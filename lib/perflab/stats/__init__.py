"""perflab's statistics stage: select rows, describe cells, compare groups, size effects, plan, check drift.

scipy and statsmodels do the arithmetic; this package names the method (defaults that do
not switch on the data), reports assumption checks beside the result, and refuses data it
cannot analyse with an error that says what to do. It computes and never formats for the
paper (that is :mod:`perflab.report`). ``docs/statistics.md`` documents every method.

Its names are imported on first use (PEP 562), so that importing a module of the package (its
names, which the command line's argument parser reads, say) does not import pandas, scipy and statsmodels with it.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

#: Public name -> the module of this package that defines it.
_HOMES = {
    "DEFAULT_SEED": "_input", "StatsInputError": "_input", "format_p": "_input", "json_value": "_input",
    "aligned_rank_anova": "anova", "cell_means": "anova", "factorial_anova": "anova",
    "blocked_compare": "blocked", "has_blocks": "blocked", "mixed_model": "blocked", "paired_by_block": "blocked",
    "DEFAULT_TESTS": "compare", "TEST_NAMES": "compare", "Comparison": "compare", "compare": "compare", "diagnostics": "compare",
    "describe": "describe", "mean_ci": "describe", "median_ci": "describe", "summarize": "describe",
    "BlockEffect": "drift", "Drift": "drift", "block_effect": "drift", "drift": "drift", "drift_table": "drift", "flag_outliers": "drift", "robust_z": "drift",
    "BOOTSTRAP_MIN_N": "effect", "cliffs_delta": "effect", "hedges_g": "effect", "hodges_lehmann": "effect", "rel_diff": "effect", "rel_diff_bootstrap": "effect", "rel_diff_fieller": "effect",
    "Equivalence": "equivalence", "tost": "equivalence",
    "LevelsResult": "levels", "Selection": "levels", "analyse": "levels", "select_rows": "levels", "verdict": "levels",
    "Omnibus": "multi", "adjust_pvalues": "multi", "omnibus": "multi", "posthoc": "multi",
    "min_detectable_effect": "power", "n_for_effect": "power", "n_for_halfwidth": "power", "plan": "power",
    "load_claims": "published", "load_published": "published", "recheck": "published", "recheck_claims": "published",
    "per_row": "summaries", "published_vs_rerun": "summaries", "welch_from_stats": "summaries",
    "comparison_table": "table",
}

__all__ = [
    "DEFAULT_SEED", "StatsInputError", "format_p", "json_value", "aligned_rank_anova", "cell_means",
    "factorial_anova", "blocked_compare", "has_blocks", "mixed_model", "paired_by_block", "DEFAULT_TESTS",
    "TEST_NAMES", "Comparison", "compare", "diagnostics", "describe", "mean_ci", "median_ci", "summarize",
    "BlockEffect", "Drift", "block_effect", "drift", "drift_table", "flag_outliers", "robust_z", "BOOTSTRAP_MIN_N",
    "cliffs_delta", "hedges_g", "hodges_lehmann", "rel_diff", "rel_diff_bootstrap", "rel_diff_fieller",
    "Equivalence", "tost", "LevelsResult", "Selection", "analyse", "select_rows", "verdict", "Omnibus",
    "adjust_pvalues", "omnibus", "posthoc", "min_detectable_effect", "n_for_effect", "n_for_halfwidth", "plan",
    "load_claims", "load_published", "recheck", "recheck_claims", "per_row", "published_vs_rerun",
    "welch_from_stats", "comparison_table",
]


class _Package(types.ModuleType):
    """This package: a submodule named like the function it defines (``compare``, ``describe``, ``drift``)
    leaves the function, not the module, as the package's attribute once imported, as eager imports did."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and _HOMES.get(name) == name and hasattr(value, name):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    """A public name of the package, imported from its module on first use."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


if TYPE_CHECKING:  # the same names, eagerly, for type checkers
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
