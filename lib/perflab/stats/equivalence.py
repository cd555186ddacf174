"""Equivalence (TOST) for "no difference" claims: is b - a inside a stated margin?

Two one-sided t tests (Schuirmann 1987) from ``statsmodels.stats.weightstats``:
``ttost_ind`` (Welch or pooled variance) or ``ttost_paired``. Equivalence at level
alpha holds when the TOST p-value is below alpha, i.e. when the (1 - 2 alpha)
confidence interval of the difference lies inside the margin.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW, ttost_ind, ttost_paired

from ._input import Sample, StatsInputError, as_pair, plain


@dataclass(frozen=True)
class Equivalence:
    """Result of :func:`tost`: the margin in the metric's unit, the TOST p-values and verdict."""

    test: str
    margin: str
    low: float
    high: float
    diff: float
    diff_ci: tuple[float, float]
    p_value: float
    p_lower: float
    p_upper: float
    alpha: float
    equivalent: bool
    n_a: int
    n_b: int

    def as_dict(self) -> dict[str, Any]:
        """Return the result as a JSON-ready dict."""
        return plain(asdict(self))


def tost(a: Sample, b: Sample, margin: float, *, relative: bool = True,
         paired: bool = False, alpha: float = 0.05, equal_var: bool = False) -> Equivalence:
    """Test whether mean_b - mean_a lies within ±``margin``.

    With ``relative`` the margin is a fraction of mean_a (0.05 = ±5 % of a's observed
    mean, treated as a constant); otherwise it is in the metric's unit. Independent
    samples use Welch's variance unless ``equal_var``. ``diff_ci`` is the (1 - 2 alpha)
    interval whose inclusion in the margin is equivalent to the TOST decision.
    """
    x, y = as_pair(a, b, paired)
    if not margin > 0:
        raise StatsInputError("tost(margin=...)", "a positive margin", repr(margin),
                              "State the largest difference you would call negligible.")
    scale = abs(float(np.mean(x))) if relative else 1.0
    low, high = -margin * scale, margin * scale
    if paired:
        p, lower, upper = ttost_paired(y, x, low, high)
        test = "TOST paired t"
        ci = DescrStatsW(y - x).tconfint_mean(alpha=2 * alpha)
    else:
        usevar = "pooled" if equal_var else "unequal"
        p, lower, upper = ttost_ind(y, x, low, high, usevar=usevar)
        test = "TOST Student's t" if equal_var else "TOST Welch's t"
        ci = CompareMeans(DescrStatsW(y), DescrStatsW(x)).tconfint_diff(alpha=2 * alpha, usevar=usevar)
    stated = f"±{margin:g} × mean of a (±{high:.4g})" if relative else f"±{margin:g}"
    return Equivalence(test=test, margin=stated, low=float(low), high=float(high),
                       diff=float(np.mean(y) - np.mean(x)), diff_ci=(float(ci[0]), float(ci[1])),
                       p_value=float(p), p_lower=float(lower[1]), p_upper=float(upper[1]),
                       alpha=alpha, equivalent=bool(p < alpha), n_a=int(x.size), n_b=int(y.size))
