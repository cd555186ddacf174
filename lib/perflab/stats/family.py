"""A family of comparisons printed together: adjusted p-values with intervals that agree with them.

A table that prints an interval beside a multiplicity-adjusted p-value must adjust both the
same way, or a reader sees "significant" beside an interval that includes no change (or the
reverse). Holm's step-down procedure has no matching interval, so every family printed with
intervals is Bonferroni-adjusted: each p-value times m (at most 1), each interval at level
1 - (1 - level) / m, the simultaneous intervals (Dunn 1961). For a t test, the adjusted p is
below 1 - level exactly when the adjusted interval of the difference excludes 0.
:func:`min_detectable` gives the smallest relative change each comparison could detect at
the n it used, the planning quantity a table prints instead of post-hoc power.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ._input import Sample, check_level
from .compare import Comparison, compare
from .power import min_detectable_effect

#: The correction of every family printed with intervals.
FAMILY_CORRECTION = "bonferroni"


def adjusted_level(level: float, m: int) -> float:
    """The per-comparison confidence level of Bonferroni's simultaneous intervals for ``m`` comparisons."""
    level = check_level(level)
    return 1 - (1 - level) / max(1, m)


def compare_family(pairs: Sequence[tuple[Sample, Sample]], *, level: float = 0.95,
                   paired: bool = False, test: str | None = None,
                   labels: Sequence[tuple[str, str]] | None = None) -> list[tuple[Comparison, float]]:
    """Compare each (a, b) pair with intervals at Bonferroni's adjusted level; return (comparison, adjusted p).

    The comparisons' intervals (``estimate_ci``, ``rel_diff_ci``) are at
    :func:`adjusted_level`; the adjusted p is min(1, m · p).
    """
    m = len(pairs)
    each = adjusted_level(level, m)
    out = []
    for i, (a, b) in enumerate(pairs):
        c = compare(a, b, paired=paired, test=test, level=each, labels=labels[i] if labels else ("a", "b"))
        out.append((c, float(min(1.0, c.p_value * m)) if np.isfinite(c.p_value) else np.nan))
    return out


def min_detectable(a: Sample, b: Sample, *, alpha: float = 0.05, power: float = 0.8,
                   paired: bool = False) -> float:
    """The smallest relative change a two-sided t test at ``alpha`` detects with ``power`` at the n used.

    The spread is the pooled CV of a and b (of the differences when ``paired``) relative to
    |mean of a|; nan when there is no spread or a's mean is 0.
    """
    x, y = np.asarray(a, float), np.asarray(b, float)
    base = abs(float(np.mean(x)))
    if paired:
        sd = float(np.std(y - x, ddof=1)) if x.size > 1 else np.nan
    else:
        sd = float(np.sqrt((np.var(x, ddof=1) + np.var(y, ddof=1)) / 2)) if min(x.size, y.size) > 1 else np.nan
    if not (base > 0 and np.isfinite(sd) and sd > 0):
        return np.nan
    n = x.size if paired else min(x.size, y.size)
    return min_detectable_effect(n, sd / base, alpha=alpha, power=power, paired=paired)


def family_rows(results: Sequence[tuple[Comparison, float]], *, nonnegative: bool = False) -> list[dict[str, Any]]:
    """Plain rows of a family: relative change with its adjusted interval, the difference in the data's unit
    (``diff``, ``diff_low``, ``diff_high``: the test's estimate and its adjusted interval), p, adjusted p, the
    interval's level.

    With ``nonnegative`` (a quantity that cannot be negative) an interval's lower end is cut at -100 %, the
    least change such a quantity allows (Fieller's interval is unbounded when a mean is near 0); the true
    change lies in the cut interval whenever it lies in Fieller's, so the coverage is kept."""
    floor = -1.0 if nonnegative else -np.inf
    return [{"rel_diff": c.rel_diff, "ci_low": max(c.rel_diff_ci[0], floor), "ci_high": c.rel_diff_ci[1],
             "diff": c.estimate, "diff_low": c.estimate_ci[0], "diff_high": c.estimate_ci[1],
             "p": c.p_value, "p_adjusted": q, "ci_level": c.level, "correction": FAMILY_CORRECTION}
            for c, q in results]
