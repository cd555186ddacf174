"""Effect sizes of a two-group comparison, each oriented as "b relative to a".

- relative difference of means, ``(mean_b - mean_a) / |mean_a|``, with a Fieller (t-based)
  interval and, from :data:`BOOTSTRAP_MIN_N` values per group, a BCa bootstrap interval
  (``scipy.stats.bootstrap``);
- Hedges' g (pooled SD for independent groups, average SD for paired ones, Lakens 2013);
- Cliff's delta, from the Mann-Whitney U statistic (mid-ranks, ``scipy.stats.rankdata``);
- the Hodges-Lehmann shift with the distribution-free interval obtained by inverting
  scipy's Mann-Whitney U (independent) or Wilcoxon signed-rank (paired) test.
"""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats
from scipy.special import gammaln

from ._input import DEFAULT_SEED, Sample, StatsInputError, as_pair, as_sample, check_level, scale_of

Interval = tuple[float, float]

#: Fewest values per group for which :func:`rel_diff_bootstrap` runs. Resampling intervals
#: are too narrow in small samples (Hesterberg 2015; Owen 2025 for BCa and the mean); on
#: skewed data the BCa interval of the relative difference covers 88-93 % for n = 5-60 and
#: reaches the nominal 95 % near n = 100, where Fieller's covers 95-96 % (docs/statistics.md).
BOOTSTRAP_MIN_N = 100


def hedges_correction(df: float) -> float:
    """Exact small-sample bias correction J(df) = Γ(df/2) / (√(df/2) Γ((df-1)/2)) (Hedges 1981)."""
    return float(np.exp(gammaln(df / 2) - 0.5 * np.log(df / 2) - gammaln((df - 1) / 2)))


def hedges_g(a: Sample, b: Sample, *, paired: bool = False) -> float:
    """Hedges' g of ``b - a``: the standardized mean difference with the exact bias correction.

    Independent groups: (mean_b - mean_a) / pooled SD, df = n_a + n_b - 2 (Lakens' g_s).
    Paired: mean difference / average of the two SDs, df = n - 1 (Lakens' g_av).
    Zero spread gives ±inf for a nonzero difference and nan for none.
    """
    x, y = as_pair(a, b, paired)
    k = scale_of(x, y)
    x, y = x / k, y / k
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


def cliffs_delta(a: Sample, b: Sample) -> float:
    """Cliff's delta P(b > a) - P(b < a) = 2U/(n_a n_b) - 1, with U of b from mid-ranks (as scipy's Mann-Whitney U)."""
    x, y = as_pair(a, b, paired=False, min_n=1)
    ranks = stats.rankdata(np.concatenate([y, x]))
    u = ranks[:y.size].sum() - y.size * (y.size + 1) / 2
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


def hodges_lehmann(a: Sample, b: Sample, *, paired: bool = False,
                   level: float = 0.95) -> tuple[float, Interval]:
    """Hodges-Lehmann shift of b against a and its distribution-free confidence interval.

    Independent: median of all differences b_j - a_i (the median of the distribution
    of b - a over random pairs, i.e. the shift, not a difference of medians); the interval inverts
    ``scipy.stats.mannwhitneyu``. Paired: median of the Walsh averages of d = b - a;
    the interval inverts ``scipy.stats.wilcoxon`` (its tie-free exact null distribution
    up to 50 pairs, as in Hollander & Wolfe; the normal approximation above). Bounds
    the test cannot reach at this n are ±inf.
    """
    x, y = as_pair(a, b, paired)
    alpha = 1 - check_level(level)
    k = scale_of(x, y)
    x, y = x / k, y / k
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
        low, high = _invert(np.unique(points), shift, pvalue, alpha)
    return shift * k, (low * k, high * k)


def rel_diff(a: Sample, b: Sample) -> float:
    """Relative difference of means ``(mean_b - mean_a) / |mean_a|`` (nan when mean_a is 0).

    Sign convention: positive means b's mean is larger, whatever the sign of a's mean
    (for a positive baseline this is ``mean_b / mean_a - 1``). Near a zero baseline the
    value is unstable; :func:`rel_diff_fieller` then gives an unbounded interval.
    """
    x, y = as_sample(a, "sample a"), as_sample(b, "sample b")
    k = scale_of(x, y)
    mean_a, mean_b = np.mean(x / k), np.mean(y / k)
    return float((mean_b - mean_a) / abs(mean_a)) if mean_a != 0 else np.nan


def rel_diff_fieller(a: Sample, b: Sample, *, paired: bool = False,
                     level: float = 0.95) -> Interval:
    """Fieller's t-based interval for :func:`rel_diff` (Fieller 1954; Franz 2007), from two samples.

    See :func:`fieller_from_stats`; the covariance of the means is used when ``paired``.
    """
    x, y = as_pair(a, b, paired)
    level = check_level(level)
    k = scale_of(x, y)
    x, y = x / k, y / k
    cov = np.cov(x, y, ddof=1)[0, 1] / x.size if paired else 0.0
    low, high = fieller_from_stats(np.mean(x), np.std(x, ddof=1) / np.sqrt(x.size), x.size,
                                   np.mean(y), np.std(y, ddof=1) / np.sqrt(y.size), y.size,
                                   cov=cov, paired=paired, level=level)
    point = rel_diff(a, b) if not (np.isnan(low) or np.isnan(high)) else np.nan
    # Fieller's interval always holds its estimate; with no spread both collapse onto it, and
    # rounding in the two computations must not leave the estimate one ulp outside.
    return (float(min(float(low), point)), float(max(float(high), point))) if np.isfinite(point) else (float(low), float(high))


def fieller_from_stats(mean_a: ArrayLike, se_a: ArrayLike, n_a: ArrayLike, mean_b: ArrayLike, se_b: ArrayLike,
                       n_b: ArrayLike, *, cov: ArrayLike = 0.0, paired: bool = False,
                       level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Fieller's interval for ``(mean_b - mean_a) / |mean_a|`` from means, standard errors and n.

    Solves (m_b - r m_a)^2 = t^2 (v_b - 2 r c + r^2 v_a) for the ratio r, where v are the
    squared standard errors and c their covariance (0 unless paired). The t quantile has
    n - 1 df when paired, else Welch's t test's own Welch-Satterthwaite df, so the interval
    excludes 0 exactly when that test rejects at the same level (test-interval duality at r = 1). The interval of
    r is mapped to the relative difference: r - 1 for a positive mean_a, 1 - r (bounds
    swapped) for a negative one. It is (-inf, inf) when mean_a is not significantly
    different from 0 at this level, and (nan, nan) when mean_a is exactly 0. Arguments
    broadcast as numpy arrays (one interval per element).
    """
    level = check_level(level)
    ma, mb = np.asarray(mean_a, dtype=float), np.asarray(mean_b, dtype=float)
    va, vb, c = np.square(se_a), np.square(se_b), np.asarray(cov, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = mb / ma
        if paired:
            df = np.asarray(n_a, dtype=float) - 1
        else:
            df = (va + vb) ** 2 / (va**2 / (np.asarray(n_a) - 1) + vb**2 / (np.asarray(n_b) - 1))
        t2 = stats.t.ppf(0.5 + level / 2, df) ** 2
        qa, qb, qc = ma**2 - t2 * va, -2 * (ma * mb - t2 * c), mb**2 - t2 * vb
        root = np.sqrt(np.maximum(qb**2 - 4 * qa * qc, 0.0))
        r1, r2 = (-qb - root) / (2 * qa), (-qb + root) / (2 * qa)
    lo, hi = np.minimum(r1, r2), np.maximum(r1, r2)
    sign = np.sign(ma)
    low, high = np.where(sign > 0, lo - 1, 1 - hi), np.where(sign > 0, hi - 1, 1 - lo)
    point = sign * (ratio - 1)
    degenerate = (va + vb) == 0
    low, high = np.where(degenerate, point, low), np.where(degenerate, point, high)
    unbounded = ~degenerate & (qa <= 0)
    low, high = np.where(unbounded, -np.inf, low), np.where(unbounded, np.inf, high)
    zero = ma == 0
    return np.where(zero, np.nan, low), np.where(zero, np.nan, high)


def ratio_fieller(a: Sample, b: Sample, *, level: float = 0.95) -> tuple[float, float, float]:
    """The ratio mean_b / mean_a of independent samples with Fieller's interval: (ratio, low, high).

    The one interval policy for ratios at any n (no percentile bootstrap: at n = 3 it
    covers about 80 % of the time); a is the denominator and must have a positive mean.
    """
    x, y = as_pair(a, b, False)
    if not np.mean(x) > 0:
        raise StatsInputError("ratio_fieller", "a denominator with a positive mean", f"mean {np.mean(x):g}",
                              "Use a positive quantity as the denominator.")
    low, high = rel_diff_fieller(x, y, level=level)
    return float(np.mean(y) / np.mean(x)), 1.0 + low, 1.0 + high


def _ratio_statistic(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Vectorized ``(mean(y) - mean(x)) / |mean(x)|`` for ``scipy.stats.bootstrap``."""
    mx = np.mean(x, axis=axis)
    return (np.mean(y, axis=axis) - mx) / np.abs(mx)


def rel_diff_bootstrap(a: Sample, b: Sample, *, paired: bool = False,
                       level: float = 0.95, n_resamples: int = 9999,
                       seed: int | None = DEFAULT_SEED) -> Interval:
    """BCa bootstrap interval for :func:`rel_diff` (``scipy.stats.bootstrap``).

    Independent samples are resampled separately, paired ones by block. The seed is
    fixed by default so that a rerun prints the same interval; a degenerate resampling
    distribution (e.g. constant samples) gives (nan, nan). Below :data:`BOOTSTRAP_MIN_N`
    values in a group it refuses: use :func:`rel_diff_fieller` there.
    """
    x, y = as_pair(a, b, paired)
    level = check_level(level)
    if min(x.size, y.size) < BOOTSTRAP_MIN_N:
        raise StatsInputError("rel_diff_bootstrap", f"at least {BOOTSTRAP_MIN_N} values per group",
                              f"{x.size} and {y.size}", "Use rel_diff_fieller (t-based) at this n.")
    k = scale_of(x, y)
    x, y = x / k, y / k
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((x, y), _ratio_statistic, paired=paired, vectorized=True,
                              confidence_level=level, n_resamples=n_resamples,
                              method="BCa", rng=np.random.default_rng(seed))
    ci = res.confidence_interval
    return (float(ci.low), float(ci.high))
