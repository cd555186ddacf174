"""Effect sizes of a two-group comparison, each oriented as "b relative to a".

- relative difference of means, ``mean_b / mean_a - 1``, with a Fieller (t-based)
  interval and a BCa bootstrap interval (``scipy.stats.bootstrap``);
- Hedges' g (pooled SD for independent groups, average SD for paired ones, Lakens 2013);
- Cliff's delta, from the Mann-Whitney U statistic (``scipy.stats.mannwhitneyu``);
- the Hodges-Lehmann shift with the distribution-free interval obtained by inverting
  scipy's Mann-Whitney U (independent) or Wilcoxon signed-rank (paired) test.
"""

from __future__ import annotations

import warnings
from typing import Callable, Sequence

import numpy as np
from scipy import stats
from scipy.special import gammaln

from ._input import DEFAULT_SEED, as_pair, as_sample, check_level

Interval = tuple[float, float]


def hedges_correction(df: float) -> float:
    """Exact small-sample bias correction J(df) = Γ(df/2) / (√(df/2) Γ((df-1)/2)) (Hedges 1981)."""
    return float(np.exp(gammaln(df / 2) - 0.5 * np.log(df / 2) - gammaln((df - 1) / 2)))


def hedges_g(a: Sequence[float], b: Sequence[float], *, paired: bool = False) -> float:
    """Hedges' g of ``b - a``: the standardized mean difference with the exact bias correction.

    Independent groups: (mean_b - mean_a) / pooled SD, df = n_a + n_b - 2 (Lakens' g_s).
    Paired: mean difference / average of the two SDs, df = n - 1 (Lakens' g_av).
    Zero spread gives ±inf for a nonzero difference and nan for none.
    """
    x, y = as_pair(a, b, paired)
    va, vb = np.var(x, ddof=1), np.var(y, ddof=1)
    if paired:
        scale, df = (np.sqrt(va) + np.sqrt(vb)) / 2, x.size - 1
    else:
        df = x.size + y.size - 2
        scale = np.sqrt(((x.size - 1) * va + (y.size - 1) * vb) / df)
    diff = np.mean(y) - np.mean(x)
    if scale == 0:
        return float(np.sign(diff) * np.inf) if diff != 0 else np.nan
    return float(diff / scale * hedges_correction(df))


def cliffs_delta(a: Sequence[float], b: Sequence[float]) -> float:
    """Cliff's delta P(b > a) - P(b < a), computed as 2U/(n_a n_b) - 1 from scipy's U of b."""
    x, y = as_pair(a, b, paired=False, min_n=1)
    u = stats.mannwhitneyu(y, x).statistic
    return float(2 * u / (x.size * y.size) - 1)


def _invert(candidates: np.ndarray, estimate: float, pvalue: Callable[[float], float],
            alpha: float) -> Interval:
    """Closure of the shifts whose test p-value exceeds ``alpha``.

    ``candidates`` are the sorted distinct points where the test statistic jumps; the
    p-value is constant between them and unimodal around ``estimate``, so each bound is
    found by bisection over the gaps. A side the test cannot reject at this n is infinite.
    """
    step = candidates[-1] - candidates[0] + 1.0
    if candidates.size == 1:  # every difference is equal: only the outer regions remain to test
        c = float(candidates[0])
        return (-np.inf if pvalue(c - step) > alpha else c, np.inf if pvalue(c + step) > alpha else c)
    mids = (candidates[:-1] + candidates[1:]) / 2
    centre = min(int(np.searchsorted(mids, estimate)), mids.size - 1)
    accept = lambda i: pvalue(mids[i]) > alpha  # noqa: E731
    if not accept(centre):
        return (np.nan, np.nan)
    lo, hi = 0, centre  # first accepted gap in [0, centre]
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if accept(mid) else (mid + 1, hi)
    first = lo
    lo, hi = centre, mids.size - 1  # last accepted gap in [centre, end]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if accept(mid) else (lo, mid - 1)
    last = lo
    low = -np.inf if first == 0 and pvalue(candidates[0] - step) > alpha else candidates[first]
    high = np.inf if last == mids.size - 1 and pvalue(candidates[-1] + step) > alpha else candidates[last + 1]
    return (float(low), float(high))


def hodges_lehmann(a: Sequence[float], b: Sequence[float], *, paired: bool = False,
                   level: float = 0.95) -> tuple[float, Interval]:
    """Hodges-Lehmann shift of b against a and its distribution-free confidence interval.

    Independent: median of all differences b_j - a_i; the interval inverts
    ``scipy.stats.mannwhitneyu``. Paired: median of the Walsh averages of d = b - a;
    the interval inverts ``scipy.stats.wilcoxon`` (its tie-free exact null distribution
    up to 50 pairs, as in Hollander & Wolfe; the normal approximation above). Bounds
    the test cannot reach at this n are ±inf.
    """
    x, y = as_pair(a, b, paired)
    alpha = 1 - check_level(level)
    if paired:
        d = y - x
        i, j = np.triu_indices(d.size)
        points = (d[i] + d[j]) / 2
        method = "exact" if d.size <= 50 else "asymptotic"
        pvalue = lambda s: stats.wilcoxon(d - s, method=method).pvalue  # noqa: E731
    else:
        points = np.subtract.outer(y, x).ravel()
        pvalue = lambda s: stats.mannwhitneyu(y - s, x).pvalue  # noqa: E731
    shift = float(np.median(points))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return shift, _invert(np.unique(points), shift, pvalue, alpha)


def rel_diff(a: Sequence[float], b: Sequence[float]) -> float:
    """Relative difference of means ``mean_b / mean_a - 1`` (nan when mean_a is 0)."""
    x, y = as_sample(a, "sample a"), as_sample(b, "sample b")
    mean_a = np.mean(x)
    return float(np.mean(y) / mean_a - 1) if mean_a != 0 else np.nan


def rel_diff_fieller(a: Sequence[float], b: Sequence[float], *, paired: bool = False,
                     level: float = 0.95) -> Interval:
    """Fieller's t-based interval for ``mean_b / mean_a - 1`` (Fieller 1954; Franz 2007).

    Solves (m_b - r m_a)^2 = t^2 (v_b - 2 r c + r^2 v_a) for r, where v are the squared
    standard errors and c their covariance (0 unless paired). The t quantile has n - 1
    df when paired, else Welch-Satterthwaite df at r = m_b / m_a. The interval is
    (-inf, inf) when mean_a is not significantly different from 0 at this level.
    """
    x, y = as_pair(a, b, paired)
    level = check_level(level)
    ma, mb = np.mean(x), np.mean(y)
    va, vb = np.var(x, ddof=1) / x.size, np.var(y, ddof=1) / y.size
    if ma == 0:
        return (np.nan, np.nan)
    ratio = mb / ma
    if va + vb == 0:
        return (float(ratio - 1), float(ratio - 1))
    if paired:
        c, df = np.cov(x, y, ddof=1)[0, 1] / x.size, x.size - 1
    else:
        c = 0.0
        ra, rb = ratio**2 * va, vb
        df = (ra + rb) ** 2 / (ra**2 / (x.size - 1) + rb**2 / (y.size - 1))
    t = stats.t.ppf(0.5 + level / 2, df)
    qa, qb, qc = ma**2 - t**2 * va, -2 * (ma * mb - t**2 * c), mb**2 - t**2 * vb
    if qa <= 0:
        return (-np.inf, np.inf)
    root = np.sqrt(max(qb**2 - 4 * qa * qc, 0.0))
    low, high = sorted(((-qb - root) / (2 * qa), (-qb + root) / (2 * qa)))
    return (float(low - 1), float(high - 1))


def _ratio_statistic(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Vectorized ``mean(y) / mean(x) - 1`` for ``scipy.stats.bootstrap``."""
    return np.mean(y, axis=axis) / np.mean(x, axis=axis) - 1


def rel_diff_bootstrap(a: Sequence[float], b: Sequence[float], *, paired: bool = False,
                       level: float = 0.95, n_resamples: int = 9999,
                       seed: int | None = DEFAULT_SEED) -> Interval:
    """BCa bootstrap interval for ``mean_b / mean_a - 1`` (``scipy.stats.bootstrap``).

    Independent samples are resampled separately, paired ones by block. The seed is
    fixed by default so that a rerun prints the same interval; a degenerate resampling
    distribution (e.g. constant samples) gives (nan, nan).
    """
    x, y = as_pair(a, b, paired)
    level = check_level(level)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((x, y), _ratio_statistic, paired=paired, vectorized=True,
                              confidence_level=level, n_resamples=n_resamples,
                              method="BCa", rng=np.random.default_rng(seed))
    ci = res.confidence_interval
    return (float(ci.low), float(ci.high))
