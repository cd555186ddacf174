"""Per-cell description: location, spread and confidence intervals of the mean and the median.

The interval of the mean is Student's t (``scipy.stats.t.interval``); the interval of the
median is distribution-free, from order statistics and the binomial distribution
(``scipy.stats.quantile_test(...).confidence_interval``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ._input import StatsInputError, as_sample, check_labels, check_level, scale_of

#: Methods behind the interval columns of :func:`describe` (also stored in ``df.attrs``).
CI_METHODS = {"mean": "Student t", "median": "distribution-free order statistics (binomial)"}

COLUMNS = ("n", "mean", "sd", "median", "cv", "min", "max",
           "mean_ci_low", "mean_ci_high", "median_ci_low", "median_ci_high")


def mean_ci(x: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Student-t confidence interval of the mean of ``x``.

    Documented edge cases: n < 2 gives (nan, nan); a constant sample gives the
    degenerate interval (mean, mean).
    """
    x = as_sample(x, "mean_ci sample")
    level = check_level(level)
    if x.size < 2:
        return (np.nan, np.nan)
    k = scale_of(x)
    mean = float(np.mean(x / k))
    sem = stats.sem(x / k)
    if sem == 0.0:
        return (mean * k, mean * k)
    low, high = stats.t.interval(level, df=x.size - 1, loc=mean, scale=sem)
    return (float(low) * k, float(high) * k)


def median_ci(x: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median of ``x`` from order statistics.

    Bounds the order statistics cannot reach at this n (e.g. n < 6 at 95 %) are nan.
    """
    x = as_sample(x, "median_ci sample")
    level = check_level(level)
    ci = stats.quantile_test(x, p=0.5).confidence_interval(level)
    return (float(ci.low), float(ci.high))


def summarize(x: Sequence[float], level: float = 0.95, where: str = "sample") -> dict[str, float]:
    """Return the :data:`COLUMNS` statistics of one sample as a dict.

    ``sd`` uses n - 1; ``cv`` is sd / mean (nan when the mean is 0); n = 1 gives nan
    for sd, cv and the intervals.
    """
    x = as_sample(x, where)
    n, k = x.size, scale_of(x)
    mean = float(np.mean(x / k)) * k
    sd = float(np.std(x / k, ddof=1)) * k if n > 1 else np.nan
    low, high = mean_ci(x, level)
    med_low, med_high = median_ci(x, level)
    return {
        "n": n, "mean": mean, "sd": sd, "median": float(np.median(x)),
        "cv": sd / mean if mean != 0 else np.nan,
        "min": float(np.min(x)), "max": float(np.max(x)),
        "mean_ci_low": low, "mean_ci_high": high,
        "median_ci_low": med_low, "median_ci_high": med_high,
    }


def describe(df: pd.DataFrame, value: str, by: str | list[str], level: float = 0.95, *,
             source: str = "table") -> pd.DataFrame:
    """One row per group of ``by``: the group columns, then :data:`COLUMNS`.

    ``df.attrs["ci_method"]`` names the interval methods and ``df.attrs["level"]`` the
    level. NaN in ``value`` and blank group labels raise :class:`StatsInputError` naming
    ``source`` (the file), the column and the group.
    """
    keys = [by] if isinstance(by, str) else list(by)
    missing = [c for c in [value, *keys] if c not in df.columns]
    if missing:
        raise StatsInputError("describe", f"columns {[value, *keys]}", f"no column(s) {missing} "
                              f"among {list(df.columns)}", "Pass the names of existing columns.")
    level = check_level(level)
    for key in keys:
        check_labels(df[key], key, source)
    rows = []
    for group, sub in df.groupby(keys, sort=True, dropna=False):
        group = group if isinstance(group, tuple) else (group,)
        where = f"{source}, column {value!r}, group " + ", ".join(f"{k}={g!r}" for k, g in zip(keys, group))
        rows.append({**dict(zip(keys, group)), **summarize(sub[value], level, where)})
    out = pd.DataFrame(rows, columns=[*keys, *COLUMNS])
    out["n"] = out["n"].astype(int)
    out.attrs["ci_method"] = dict(CI_METHODS)
    out.attrs["level"] = level
    return out
