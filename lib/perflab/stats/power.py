"""Planning: minimum detectable effect, runs needed for an effect or an equivalence, runs for a CI half-width.

Effects are relative to the mean (0.05 = 5 %) and spread is a coefficient of variation
from a pilot, so Cohen's d = relative effect / CV. Power comes from statsmodels'
``TTestIndPower`` (independent cells) or ``TTestPower`` (paired by block, where the CV
is that of the per-block differences relative to the mean); the power of two one-sided
tests (TOST) within ±margin is the noncentral-t approximation of Chow & Liu
(``scipy.stats.nct``: P(both reject) >= P(lower rejects) + P(upper rejects) - 1, which is
conservative); the half-width plan uses Student's t quantiles (``scipy.stats.t``).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.power import TTestIndPower, TTestPower

from ._input import StatsInputError, check_level


def _solve(paired: bool, **kwargs: float | None) -> float:
    """Solve the statsmodels power equation of the design for the argument given as None."""
    if paired:
        return float(TTestPower().solve_power(nobs=kwargs.pop("n"), **kwargs))
    return float(TTestIndPower().solve_power(nobs1=kwargs.pop("n"), **kwargs))


def _check_cv(cv: float) -> float:
    """Return ``cv`` if it is a positive finite coefficient of variation, else raise."""
    if not (np.isfinite(cv) and cv > 0):
        raise StatsInputError("cv", "a positive coefficient of variation (sd / mean) from a pilot",
                              repr(cv), "Run a pilot of at least a few runs per cell and use its CV.")
    return float(cv)


def min_detectable_effect(n: int, cv: float, *, alpha: float = 0.05, power: float = 0.8,
                          paired: bool = False) -> float:
    """Smallest relative difference of means a two-sided t test detects with ``power``.

    ``n`` is the number of runs per cell (pairs when ``paired``); the result is
    d * CV where d solves the statsmodels power equation.
    """
    cv = _check_cv(cv)
    if n < 2:
        raise StatsInputError("n", "at least 2 runs per cell", repr(n), "Plan more runs.")
    d = _solve(paired, effect_size=None, n=n, alpha=alpha, power=power)
    return d * cv


def n_for_effect(effect: float, cv: float, *, alpha: float = 0.05, power: float = 0.8,
                 paired: bool = False) -> int:
    """Runs per cell (rounded up) for a two-sided t test to detect a relative ``effect``."""
    cv = _check_cv(cv)
    if not effect > 0:
        raise StatsInputError("effect", "a positive relative effect (0.05 = 5 %)", repr(effect),
                              "State the smallest difference that matters.")
    n = _solve(paired, effect_size=effect / cv, n=None, alpha=alpha, power=power)
    if math.isnan(n):
        # statsmodels' root finder gives up when the effect is many times the spread: the smallest n whose power
        # (:func:`power_at`, with its normal approximation there) is enough
        return _smallest(lambda k: power_at(effect, k, cv, alpha=alpha, paired=paired) >= power, 2)
    return max(2, math.ceil(n))


def power_at(effect: float, n: int, cv: float, *, alpha: float = 0.05, paired: bool = False,
             ratio: float = 1.0) -> float:
    """Power of a two-sided t test at ``alpha`` to detect a relative ``effect`` with ``n`` runs per cell
    (pairs when ``paired``; independent cells: ``n`` in a and ``ratio`` × n in b)."""
    cv = _check_cv(cv)
    if paired:
        power = float(TTestPower().power(effect_size=effect / cv, nobs=n, alpha=alpha))
        shift = effect / cv * math.sqrt(n)
    else:
        power = float(TTestIndPower().power(effect_size=effect / cv, nobs1=n, alpha=alpha, ratio=ratio))
        shift = effect / cv * math.sqrt(n * ratio / (1 + ratio))
    if math.isnan(power):
        # the noncentral t's tail is not computed for a large noncentrality (statsmodels returns nan there); the
        # normal approximation is exact to far below the printed precision at such a shift
        z = stats.norm.isf(alpha / 2)
        power = float(stats.norm.sf(z - shift) + stats.norm.cdf(-z - shift))
    return power


def tost_power(n: int, cv: float, margin: float, *, alpha: float = 0.05, paired: bool = False,
               effect: float = 0.0) -> float:
    """Power of TOST at ``alpha`` within ±``margin`` (relative) when the true relative difference is ``effect``.

    ``n`` runs per cell (pairs when ``paired``, where ``cv`` is that of the differences); the
    Chow & Liu lower bound from the noncentral t, never below 0.
    """
    cv = _check_cv(cv)
    if n < 2 or not margin > 0:
        raise StatsInputError("tost_power", "n >= 2 and a positive margin", f"n {n}, margin {margin}",
                              "Plan more runs or state the margin.")
    se, df = (cv / math.sqrt(n), n - 1) if paired else (cv * math.sqrt(2 / n), 2 * n - 2)
    crit = stats.t.ppf(1 - alpha, df)
    lower = stats.nct.sf(crit, df, (effect + margin) / se)
    upper = stats.nct.cdf(-crit, df, (effect - margin) / se)
    return float(max(0.0, lower + upper - 1))


def n_for_equivalence(margin: float, cv: float, *, alpha: float = 0.05, power: float = 0.8,
                      paired: bool = False) -> int:
    """Runs per cell for TOST at ``alpha`` within ±``margin`` to declare equivalence with ``power`` when the
    true difference is 0 (:func:`tost_power`)."""
    return _smallest(lambda n: tost_power(n, cv, margin, alpha=alpha, paired=paired) >= power, 4)


def n_for_halfwidth(cv: float, halfwidth: float, *, level: float = 0.95) -> int:
    """Smallest n whose Student-t CI of the mean has half-width <= ``halfwidth`` × mean.

    Solves t_{level, n-1} · CV / √n <= halfwidth, assuming the pilot's CV holds (the
    realized half-width varies with the sample SD).
    """
    cv, level = _check_cv(cv), check_level(level)
    if not halfwidth > 0:
        raise StatsInputError("halfwidth", "a positive relative half-width (0.01 = ±1 %)",
                              repr(halfwidth), "State the precision you need.")
    quantile = 0.5 + level / 2
    return _smallest(lambda n: stats.t.ppf(quantile, n - 1) * cv / math.sqrt(n) <= halfwidth,
                     max(2, math.ceil((stats.norm.ppf(quantile) * cv / halfwidth) ** 2)))


def _smallest(fits: Callable[[int], bool], start: int) -> int:
    """The smallest n >= 2 for which ``fits`` holds (it holds for every larger n): doubling from ``start``, then
    bisection."""
    high = start
    while not fits(high):
        high *= 2
    low = 2
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if fits(mid) else (mid + 1, high)
    return low


def plan(pilot: pd.DataFrame, n: int, *, alpha: float = 0.05, power: float = 0.8,
         halfwidth: float = 0.01, level: float = 0.95) -> pd.DataFrame:
    """Add planning columns to a pilot's :func:`~perflab.stats.describe` table.

    Columns added per cell from the magnitude of its ``cv`` (sd / |mean|, so a negative
    mean plans as a positive one): ``mde`` (relative minimum detectable effect at ``n``
    independent runs) and ``n_halfwidth`` (runs for a ``halfwidth`` CI of the mean).
    Cells whose CV is missing get nan for both; a zero CV (a constant pilot) gives mde 0
    and the minimum of 2 runs.
    """
    out = pilot.copy()
    cvs = np.abs(out["cv"].to_numpy(float))
    ok = np.isfinite(cvs) & (cvs > 0)
    out["mde"] = [min_detectable_effect(n, cv, alpha=alpha, power=power) if good else 0.0 if cv == 0 else np.nan
                  for cv, good in zip(cvs, ok)]
    out["n_halfwidth"] = [n_for_halfwidth(cv, halfwidth, level=level) if good else 2 if cv == 0 else np.nan
                          for cv, good in zip(cvs, ok)]
    out.attrs.update(pilot.attrs, plan={"n": n, "alpha": alpha, "power": power,
                                        "halfwidth": halfwidth, "level": level})
    return out
