"""Two-group comparison: a named test, the effect that matches it, and diagnostics beside it.

Tests (all from ``scipy.stats``, oriented as b against a): ``"welch"`` ttest_ind(equal_var=False)
(the default for independent groups), ``"student"`` ttest_ind, ``"paired-t"`` ttest_rel (the
default for paired groups), and the rank-based choices ``"mannwhitney"`` mannwhitneyu and
``"wilcoxon"`` wilcoxon on b - a. The test is never switched on the data: normality
(Shapiro-Wilk) and equal spread (Brown-Forsythe) are computed and reported as diagnostics,
with a sentence saying what they mean for the result (Zimmerman 2004 on why pre-testing
distorts error rates; Delacre et al. 2017 on Welch by default).

The reported effect matches the test: a difference of means (and its relative form with
Fieller's interval) after a t test; the Hodges-Lehmann shift (independent) or the
pseudomedian of the differences (paired), with the distribution-free interval that inverts
the same rank test, after a rank test.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
from scipy import stats

from ._input import (DEFAULT_SEED, Sample, StatsInputError, as_pair, check_labels, check_level, p_text, plain,
                     scale_of, shapiro_p)
from .names import TEST_NAMES
from .effect import (BOOTSTRAP_MIN_N, Interval, cliffs_delta, hedges_g, hodges_lehmann, rel_diff,
                     rel_diff_bootstrap, rel_diff_fieller)

PAIRED_TESTS = frozenset({"paired-t", "wilcoxon"})
RANK_TESTS = frozenset({"mannwhitney", "wilcoxon"})
#: The test used when none is named: Welch's t for independent groups, the paired t for paired ones.
DEFAULT_TESTS = {False: "welch", True: "paired-t"}
#: What the reported ``estimate`` measures, by test.
EFFECTS = {
    "welch": "difference of means", "student": "difference of means",
    "paired-t": "mean of the paired differences",
    "mannwhitney": "Hodges-Lehmann shift (median of all b - a differences)",
    "wilcoxon": "pseudomedian of the paired differences (Hodges-Lehmann)",
}
#: Significance level of the diagnostics (they inform; they never choose the test).
DIAGNOSTIC_ALPHA = 0.05


@dataclass(frozen=True)
class Comparison:
    """Result of :func:`compare`: the test, its outcome, the effect that matches it, diagnostics.

    Everything is b against a and positive when b tends to be larger. ``estimate`` (in the
    data's unit) is what ``effect`` names; ``rel_diff`` is the same effect relative to a's
    location: ``(mean_b - mean_a) / |mean_a|`` after a t test (Fieller's interval),
    ``shift / |median_a|`` after a rank test (the shift's interval divided by |median_a|,
    taken as fixed). ``rel_diff_ci_bootstrap`` is the BCa interval of the relative
    difference of means after a t test, computed only from
    :data:`~perflab.stats.effect.BOOTSTRAP_MIN_N` values per group (else nan). ``assumptions`` holds the diagnostic p-values and
    ``notes`` says what they mean.
    """

    test: str
    reason: str
    statistic: float
    p_value: float
    df: float
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    median_a: float
    median_b: float
    effect: str
    estimate: float
    estimate_ci: Interval
    rel_diff: float
    rel_diff_ci: Interval
    rel_diff_ci_method: str
    rel_diff_ci_bootstrap: Interval
    hedges_g: float
    cliffs_delta: float
    assumptions: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    labels: tuple[str, str] = ("a", "b")
    paired: bool = False
    level: float = 0.95

    def as_dict(self) -> dict[str, Any]:
        """Return the result as a dict of plain values (tuples become lists, numpy scalars floats)."""
        return plain(asdict(self))


def _run_test(key: str, x: np.ndarray, y: np.ndarray, level: float) -> tuple[float, float, float, Interval | None]:
    """Run test ``key`` of b (``y``) against a (``x``): statistic, p-value, df, and for t tests
    the interval of the difference of means (None for rank tests)."""
    runners: dict[str, Callable[[], Any]] = {
        "student": lambda: stats.ttest_ind(y, x),
        "welch": lambda: stats.ttest_ind(y, x, equal_var=False),
        "mannwhitney": lambda: stats.mannwhitneyu(y, x),
        "paired-t": lambda: stats.ttest_rel(y, x),
        "wilcoxon": lambda: stats.wilcoxon(y - x),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = runners[key]()
        ci = None
        if key not in RANK_TESTS:
            bounds = res.confidence_interval(level)
            ci = (float(bounds.low), float(bounds.high))
    return float(res.statistic), float(res.pvalue), float(getattr(res, "df", np.nan)), ci


def diagnostics(a: Sample, b: Sample, *, test: str, paired: bool = False,
                labels: tuple[str, str] = ("a", "b"), alpha: float = DIAGNOSTIC_ALPHA,
                ) -> tuple[dict[str, float], list[str]]:
    """Assumption checks of ``test`` on a and b: their p-values and what they mean, in sentences.

    Shapiro-Wilk per group (of b - a when paired) and Brown-Forsythe (Levene, median-centred)
    for equal spread. They are reported beside the result and never change the test.
    """
    x, y = as_pair(a, b, paired)
    k = scale_of(x, y)
    x, y = x / k, y / k
    notes: list[str] = []
    if paired:
        d = y - x
        checks = {"shapiro_p_diff": shapiro_p(d)}
        if d.size < 3 or np.ptp(d) == 0:
            notes.append("normality of the differences cannot be checked (fewer than 3 pairs or all equal)")
        elif checks["shapiro_p_diff"] < alpha:
            notes.append(_normality_note(f"the paired differences (Shapiro-Wilk {p_text(checks['shapiro_p_diff'])})",
                                         test, d.size))
        return checks, notes
    checks = {f"shapiro_p_{labels[0]}": shapiro_p(x), f"shapiro_p_{labels[1]}": shapiro_p(y)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        checks["levene_p"] = float(stats.levene(x, y, center="median").pvalue)
    unchecked = [lab for lab, s in zip(labels, (x, y)) if s.size < 3 or np.ptp(s) == 0]
    if unchecked:
        notes.append(f"normality of {', '.join(unchecked)} cannot be checked (n < 3 or constant)")
    rejected = [f"{lab} (Shapiro-Wilk {p_text(checks[f'shapiro_p_{lab}'])})" for lab in labels
                if checks[f"shapiro_p_{lab}"] < alpha]
    if rejected:
        notes.append(_normality_note(" and ".join(rejected), test, min(x.size, y.size)))
    if checks["levene_p"] < alpha:
        spread = f"the spreads differ (Brown-Forsythe {p_text(checks['levene_p'])})"
        notes.append({
            "welch": f"{spread}; Welch's t does not assume equal variances",
            "student": f"{spread}; Student's t assumes equal variances and its p-value is then unreliable, "
                       "most with unequal n: prefer Welch's t",
            "mannwhitney": f"{spread}; Mann-Whitney then tests P(b > a) = 1/2 rather than a pure shift, "
                           "so read the Hodges-Lehmann shift with care",
        }[test])
    return checks, notes


def _normality_note(what: str, test: str, n: int) -> str:
    """What a rejected normality check means for ``test`` at ``n`` (the smaller group); below 15 runs
    the note says the t test's result is approximate (docs/statistics.md: even at n = 25 strongly
    skewed differences raise its error rate to 8.5 %)."""
    if test in RANK_TESTS:
        return f"normality is rejected for {what}; the rank test does not assume it"
    shift = "if a typical shift is the question, a rank test (Mann-Whitney, or Wilcoxon's signed-rank when paired) answers it"
    if n < 15:
        return (f"normality is rejected for {what}; with only {n} samples per group the t test relies on near-normal data, so "
                f"its p-value and interval are approximate: plan more runs, or {shift}")
    return (f"normality is rejected for {what}; the t test concerns means and is robust to this with {n} samples per group "
            f"unless the data are strongly skewed or heavy-tailed; {shift}")


def compare(a: Sample, b: Sample, *, test: str | None = None, paired: bool = False,
            level: float = 0.95, labels: tuple[str, str] = ("a", "b"), n_resamples: int = 9999,
            seed: int | None = DEFAULT_SEED) -> Comparison:
    """Compare b against a with a two-sided test and the effect that matches it, at ``level``.

    ``test`` is a key of :data:`TEST_NAMES`; by default Welch's t (independent) or the
    paired t (``paired=True``: equal-length samples, position i of a and b is block i).
    Each group needs n >= 2 finite values. Values are rescaled by a power of two before
    computing, so results hold from 1e-300 to 1e300.
    """
    level = check_level(level)
    check_labels(labels, "labels", "compare")
    x, y = as_pair(a, b, paired, labels=labels)
    key = DEFAULT_TESTS[paired] if test is None else test
    if key not in TEST_NAMES:
        raise StatsInputError("compare(test=...)", f"one of {sorted(TEST_NAMES)}", repr(test),
                              "Name the test (there is no automatic choice: pre-testing distorts error rates).")
    if (key in PAIRED_TESTS) != paired:
        kind = "paired" if key in PAIRED_TESTS else "independent-sample"
        raise StatsInputError("compare(test=...)", f"paired={key in PAIRED_TESTS} for the {kind} test {key!r}",
                              f"paired={paired}", "Pass a matching test or paired flag.")
    reason = ("requested by the caller" if test is not None else
              "default for paired samples" if paired else
              "default for independent groups: it does not assume equal variances (Delacre et al. 2017)")
    checks, notes = diagnostics(x, y, test=key, paired=paired, labels=labels)
    k = scale_of(x, y)
    xs, ys = x / k, y / k
    statistic, p_value, df, t_ci = _run_test(key, xs, ys, level)
    mean_a, mean_b = float(np.mean(xs)) * k, float(np.mean(ys)) * k
    median_a, median_b = float(np.median(xs)) * k, float(np.median(ys)) * k
    boot: Interval = (np.nan, np.nan)
    if key not in RANK_TESTS and min(x.size, y.size) >= BOOTSTRAP_MIN_N:
        boot = rel_diff_bootstrap(x, y, paired=paired, level=level, n_resamples=n_resamples, seed=seed)
    if key in RANK_TESTS:
        estimate, estimate_ci = hodges_lehmann(x, y, paired=paired, level=level)
        base = abs(median_a)
        rel = estimate / base if base > 0 else np.nan
        rel_ci = (estimate_ci[0] / base, estimate_ci[1] / base) if base > 0 else (np.nan, np.nan)
        rel_method = f"shift interval (inverted {TEST_NAMES[key]}) / |median of {labels[0]}|"
        if base == 0:
            notes.append(f"the median of {labels[0]} is 0: no relative shift")
    else:
        estimate = float(np.mean(ys - xs) if paired else np.mean(ys) - np.mean(xs)) * k
        assert t_ci is not None, "a t test always gives the interval of the difference (_run_test): a bug"
        estimate_ci = (t_ci[0] * k, t_ci[1] * k) if np.all(np.isfinite(t_ci)) else (estimate, estimate)
        rel, rel_ci = rel_diff(x, y), rel_diff_fieller(x, y, paired=paired, level=level)
        rel_method = "Fieller (t)"
        if mean_a == 0:
            notes.append(f"the mean of {labels[0]} is 0: no relative difference")
        elif np.isinf(rel_ci[0]) or np.isinf(rel_ci[1]):
            notes.append(f"the mean of {labels[0]} is not significantly different from 0: the relative "
                         "difference is unbounded; read the difference of means instead")
    if key not in RANK_TESTS and min(x.size, y.size) < BOOTSTRAP_MIN_N:
        notes.append(f"no bootstrap interval: n < {BOOTSTRAP_MIN_N} per group, where resampling intervals "
                     "are too narrow; the relative interval is Fieller's (t-based)")
    return Comparison(
        test=TEST_NAMES[key], reason=reason, statistic=statistic, p_value=p_value, df=df,
        n_a=int(x.size), n_b=int(y.size), mean_a=mean_a, mean_b=mean_b, median_a=median_a, median_b=median_b,
        effect=EFFECTS[key], estimate=float(estimate), estimate_ci=(float(estimate_ci[0]), float(estimate_ci[1])),
        rel_diff=float(rel), rel_diff_ci=(float(rel_ci[0]), float(rel_ci[1])), rel_diff_ci_method=rel_method,
        rel_diff_ci_bootstrap=boot, hedges_g=hedges_g(x, y, paired=paired), cliffs_delta=cliffs_delta(x, y),
        assumptions=checks, notes=tuple(notes), labels=(labels[0], labels[1]), paired=paired, level=level,
    )
