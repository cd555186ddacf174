"""Per-cell description: location, spread and confidence intervals of the mean and the median.

The interval of the mean is Student's t (``scipy.stats.t.interval``), or, for a quantity
that can only be positive (throughput, IOPS, latency, CPU time), the modified Cox interval
computed on the log scale (Olsson 2005), which never has a negative bound; for a quantity that
cannot be negative but may be 0 (packet loss, retransmissions), Student's t cut at 0; the interval of the
median is distribution-free, from order statistics and the binomial distribution
(``scipy.stats.quantile_test(...).confidence_interval``).
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import pandas as pd
from scipy import stats

from ..files import natural_key
from ._input import Sample, StatsInputError, as_sample, check_labels, check_level, scale_of

#: Methods behind the interval columns of :func:`describe` (also stored in ``df.attrs``).
CI_METHODS = {"mean": "Student t", "median": "distribution-free order statistics (binomial)"}
#: Method of the mean's interval for a positive quantity (``positive=True``).
POSITIVE_MEAN_CI = "modified Cox, log scale (Olsson 2005)"
#: Method of the mean's interval for a quantity that cannot be negative (``nonnegative=True``).
NONNEGATIVE_MEAN_CI = "Student t, cut at 0 (the quantity's lower bound)"

COLUMNS = ("n", "mean", "sd", "median", "cv", "min", "max",
           "mean_ci_low", "mean_ci_high", "median_ci_low", "median_ci_high")


class RangeFlags(TypedDict):
    """The range of a quantity's values as :func:`mean_ci`'s keywords (see :func:`range_flags`)."""

    positive: bool
    nonnegative: bool


def range_flags(x: Sample) -> RangeFlags:
    """The ``positive`` / ``nonnegative`` flags of :func:`mean_ci` that a quantity's values imply: every value
    above 0 (throughput, latency) is ``positive``; else every value at or above 0 (loss with some zeros) is
    ``nonnegative``. Pass them as keywords: ``describe(df, "value", by, **range_flags(df["value"]))``."""
    v = np.asarray(x, float)
    positive = bool(v.size and (v > 0).all())
    return {"positive": positive, "nonnegative": bool(v.size and not positive and (v >= 0).all())}


def mean_ci(x: Sample, level: float = 0.95, *, positive: bool = False,
            nonnegative: bool = False) -> tuple[float, float]:
    """Confidence interval of the mean of ``x``: Student's t, or with ``positive`` the modified Cox interval.

    The modified Cox interval (Olsson 2005) is exp(ȳ + s²/2 ± t(level, n-1) · √(s²/n + s⁴/(2(n-1))))
    with ȳ and s the mean and SD of log x: an interval of the arithmetic mean of a positive,
    right-skewed quantity whose bounds stay positive. With ``positive`` a value <= 0 is refused.
    When the sample's arithmetic mean lies outside that interval, the log-normal shape it assumes is
    contradicted by the data (a few large values, two modes), and Student's interval cut at 0 is
    given instead: it always holds the mean it is the interval of.
    With ``nonnegative`` (a quantity that cannot be negative but may be 0) Student's interval is
    intersected with [0, inf): the true mean lies in it whenever it lies in Student's, so the
    coverage is kept; a value < 0 is refused.
    Documented edge cases: n < 2 gives (nan, nan); a constant sample gives the
    degenerate interval (mean, mean).
    """
    x = as_sample(x, "mean_ci sample")
    level = check_level(level)
    if x.size < 2:
        return (np.nan, np.nan)
    if positive:
        if np.any(x <= 0):
            raise StatsInputError("mean_ci(positive=True)", "values > 0 (a positive quantity)",
                                  f"{int(np.sum(x <= 0))} value(s) <= 0",
                                  "Drop failed runs explicitly, or describe the quantity without positive=True.")
        y = np.log(x)
        m, v, n = float(np.mean(y)), float(np.var(y, ddof=1)), x.size
        half = stats.t.ppf(0.5 + level / 2, n - 1) * np.sqrt(v / n + v**2 / (2 * (n - 1)))
        low, high = float(np.exp(m + v / 2 - half)), float(np.exp(m + v / 2 + half))
        if low <= float(np.mean(x)) <= high:
            return (low, high)
        return mean_ci(x, level, nonnegative=True)
    if nonnegative and np.any(x < 0):
        raise StatsInputError("mean_ci(nonnegative=True)", "values >= 0 (a quantity that cannot be negative)",
                              f"{int(np.sum(x < 0))} value(s) < 0", "Describe the quantity without nonnegative=True.")
    k = scale_of(x)
    mean = float(np.mean(x / k))
    sem = stats.sem(x / k)
    if sem == 0.0:
        return (mean * k, mean * k)
    low, high = stats.t.interval(level, df=x.size - 1, loc=mean, scale=sem)
    return (max(float(low) * k, 0.0) if nonnegative else float(low) * k, float(high) * k)


def median_ci(x: Sample, level: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median of ``x`` from order statistics.

    Bounds the order statistics cannot reach at this n (e.g. n < 6 at 95 %) are nan.
    """
    x = as_sample(x, "median_ci sample")
    level = check_level(level)
    ci = stats.quantile_test(x, p=0.5).confidence_interval(level)
    return (float(ci.low), float(ci.high))


def summarize(x: Sample, level: float = 0.95, where: str = "sample", *,
              positive: bool = False, nonnegative: bool = False) -> dict[str, float]:
    """Return the :data:`COLUMNS` statistics of one sample as a dict (``positive``, ``nonnegative``: see
    :func:`mean_ci`).

    ``sd`` uses n - 1; ``cv`` is sd / mean (nan when the mean is 0); n = 1 gives nan
    for sd, cv and the intervals.
    """
    x = as_sample(x, where)
    n, k = x.size, scale_of(x)
    mean = float(np.mean(x / k)) * k
    sd = float(np.std(x / k, ddof=1)) * k if n > 1 else np.nan
    low, high = mean_ci(x, level, positive=positive, nonnegative=nonnegative)
    med_low, med_high = median_ci(x, level)
    return {
        "n": n, "mean": mean, "sd": sd, "median": float(np.median(x)),
        "cv": sd / mean if mean != 0 else np.nan,
        "min": float(np.min(x)), "max": float(np.max(x)),
        "mean_ci_low": low, "mean_ci_high": high,
        "median_ci_low": med_low, "median_ci_high": med_high,
    }


def describe(df: pd.DataFrame, value: str, by: str | list[str], level: float = 0.95, *,
             source: str = "table", positive: bool = False, nonnegative: bool = False) -> pd.DataFrame:
    """One row per group of ``by``, groups in natural order (4k < 32k < 1M, 2 < 16): the group columns, then
    :data:`COLUMNS`.

    ``positive`` marks a quantity that can only be positive: the mean's interval is then
    the modified Cox interval on the log scale (:func:`mean_ci`); ``nonnegative`` one that cannot be
    negative: Student's interval cut at 0.
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
    groups = [(g if isinstance(g, tuple) else (g,), sub) for g, sub in df.groupby(keys, sort=False, dropna=False)]
    for group, sub in sorted(groups, key=lambda item: [natural_key(g) for g in item[0]]):
        where = f"{source}, column {value!r}, group " + ", ".join(f"{k}={g!r}" for k, g in zip(keys, group))
        rows.append({**dict(zip(keys, group)), **summarize(sub[value], level, where, positive=positive,
                                                                 nonnegative=nonnegative)})
    out = pd.DataFrame(rows, columns=[*keys, *COLUMNS])
    out["n"] = out["n"].astype(int)
    out.attrs["ci_method"] = {**CI_METHODS, **({"mean": POSITIVE_MEAN_CI} if positive else
                                               {"mean": NONNEGATIVE_MEAN_CI} if nonnegative else {})}
    out.attrs["level"] = level
    return out
