"""Two-group comparison: a named test, the reason it was chosen, and effect sizes.

Tests (all from ``scipy.stats``, oriented as b against a):
``"student"`` ttest_ind, ``"welch"`` ttest_ind(equal_var=False), ``"mannwhitney"``
mannwhitneyu, ``"paired-t"`` ttest_rel and ``"wilcoxon"`` wilcoxon on b - a.
``"auto"`` checks normality (Shapiro-Wilk per group, or of the paired differences)
and equal variances (Levene, median-centred, i.e. Brown-Forsythe) at
``assumption_alpha`` and records the p-values and its reason in the result.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from scipy import stats

from ._input import DEFAULT_SEED, StatsInputError, as_pair, check_level, plain, shapiro_p
from .effect import (Interval, cliffs_delta, hedges_g, hodges_lehmann, rel_diff,
                     rel_diff_bootstrap, rel_diff_fieller)

#: Human names of the tests, by the key accepted in ``compare(test=...)``.
TEST_NAMES = {
    "student": "Student's t", "welch": "Welch's t", "mannwhitney": "Mann-Whitney U",
    "paired-t": "paired t", "wilcoxon": "Wilcoxon signed-rank",
}
PAIRED_TESTS = frozenset({"paired-t", "wilcoxon"})
PARAMETRIC_TESTS = frozenset({"student", "welch", "paired-t"})


@dataclass(frozen=True)
class Comparison:
    """Result of :func:`compare`: the test, why it was used, its outcome and effect sizes.

    Differences are b against a: ``rel_diff = mean_b / mean_a - 1``, ``hedges_g``,
    ``cliffs_delta`` and ``hl_shift`` are positive when b tends to be larger.
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
    rel_diff: float
    rel_diff_ci: Interval
    rel_diff_ci_method: str
    rel_diff_ci_fieller: Interval
    rel_diff_ci_bootstrap: Interval
    hedges_g: float
    cliffs_delta: float
    hl_shift: float
    hl_ci: Interval
    assumptions: dict[str, float] = field(default_factory=dict)
    labels: tuple[str, str] = ("a", "b")
    paired: bool = False
    level: float = 0.95

    def as_dict(self) -> dict[str, Any]:
        """Return the result as a JSON-ready dict (tuples become lists, numpy scalars floats)."""
        return plain(asdict(self))


def _run_test(key: str, x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Run test ``key`` of b (``y``) against a (``x``); return statistic, p-value and df."""
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
    return float(res.statistic), float(res.pvalue), float(getattr(res, "df", np.nan))


def choose_test(a: Sequence[float], b: Sequence[float], *, paired: bool = False,
                assumption_alpha: float = 0.05, labels: tuple[str, str] = ("a", "b"),
                ) -> tuple[str, str, dict[str, float]]:
    """The ``"auto"`` rule: return (test key, reason, assumption p-values).

    Independent: a group with n < 3 -> Welch (normality cannot be checked); a constant
    group or Shapiro-Wilk p < alpha in either group -> Mann-Whitney U; otherwise
    Levene p < alpha -> Welch's t, else Student's t. Paired: the same normality check
    on b - a chooses Wilcoxon signed-rank or the paired t.
    """
    x, y = as_pair(a, b, paired)
    if paired:
        d = y - x
        p = shapiro_p(d)
        checks = {"shapiro_p_diff": p}
        if d.size < 3:
            return "paired-t", f"n = {d.size} < 3 pairs: normality cannot be checked; paired t", checks
        if np.ptp(d) == 0:
            return "wilcoxon", "all paired differences are equal: normality cannot hold; Wilcoxon signed-rank", checks
        if p < assumption_alpha:
            return "wilcoxon", (f"Shapiro-Wilk rejects normality of the differences (p = {p:.3g} "
                                f"< {assumption_alpha}); Wilcoxon signed-rank"), checks
        return "paired-t", f"differences compatible with normality (Shapiro-Wilk p = {p:.3g}); paired t", checks
    checks = {f"shapiro_p_{labels[0]}": shapiro_p(x), f"shapiro_p_{labels[1]}": shapiro_p(y)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        checks["levene_p"] = float(stats.levene(x, y, center="median").pvalue)
    small = [f"{lab} (n = {s.size})" for lab, s in zip(labels, (x, y)) if s.size < 3]
    if small:
        return "welch", f"n < 3 in {', '.join(small)}: normality cannot be checked; Welch's t", checks
    constant = [lab for lab, s in zip(labels, (x, y)) if np.ptp(s) == 0]
    if constant:
        return "mannwhitney", (f"{', '.join(constant)} constant (zero variance): normality cannot "
                               "hold; Mann-Whitney U"), checks
    rejected = [f"{lab} (p = {checks[f'shapiro_p_{lab}']:.3g})" for lab in labels
                if checks[f"shapiro_p_{lab}"] < assumption_alpha]
    if rejected:
        return "mannwhitney", (f"Shapiro-Wilk rejects normality of {', '.join(rejected)} at "
                               f"{assumption_alpha}; Mann-Whitney U"), checks
    normal = (f"both groups compatible with normality (Shapiro-Wilk p = "
              f"{checks[f'shapiro_p_{labels[0]}']:.3g}, {checks[f'shapiro_p_{labels[1]}']:.3g})")
    if checks["levene_p"] < assumption_alpha:
        return "welch", f"{normal}; Levene rejects equal variances (p = {checks['levene_p']:.3g}); Welch's t", checks
    return "student", f"{normal}; Levene does not reject equal variances (p = {checks['levene_p']:.3g}); Student's t", checks


def compare(a: Sequence[float], b: Sequence[float], *, test: str = "auto", paired: bool = False,
            level: float = 0.95, labels: tuple[str, str] = ("a", "b"),
            assumption_alpha: float = 0.05, n_resamples: int = 9999,
            seed: int | None = DEFAULT_SEED) -> Comparison:
    """Compare b against a with a two-sided test and effect sizes with ``level`` intervals.

    ``test`` is ``"auto"`` or a key of :data:`TEST_NAMES`; paired tests need
    ``paired=True`` and equal-length samples (position i of a and b is block i). Each
    group needs n >= 2 and finite values. The primary interval of ``rel_diff`` is
    Fieller's for t tests and the BCa bootstrap for rank tests (Fieller when the
    bootstrap is degenerate); both are kept.
    """
    level = check_level(level)
    x, y = as_pair(a, b, paired)
    if test == "auto":
        key, reason, checks = choose_test(x, y, paired=paired, assumption_alpha=assumption_alpha,
                                          labels=labels)
    elif test in TEST_NAMES:
        if (test in PAIRED_TESTS) != paired:
            kind = "paired" if test in PAIRED_TESTS else "independent-sample"
            raise StatsInputError("compare(test=...)", f"paired={test in PAIRED_TESTS} for the {kind} test {test!r}",
                                  f"paired={paired}", "Pass a matching test or paired flag.")
        key, reason = test, "requested by the caller"
        checks = choose_test(x, y, paired=paired, assumption_alpha=assumption_alpha, labels=labels)[2]
    else:
        raise StatsInputError("compare(test=...)", f"'auto' or one of {sorted(TEST_NAMES)}",
                              repr(test), "Use one of the listed test names.")
    statistic, p_value, df = _run_test(key, x, y)
    fieller = rel_diff_fieller(x, y, paired=paired, level=level)
    boot = rel_diff_bootstrap(x, y, paired=paired, level=level, n_resamples=n_resamples, seed=seed)
    if key in PARAMETRIC_TESTS:
        ci, ci_method = fieller, "Fieller (t)"
    elif np.all(np.isfinite(boot)):
        ci, ci_method = boot, "bootstrap BCa"
    else:
        ci, ci_method = fieller, "Fieller (t); bootstrap degenerate"
    shift, shift_ci = hodges_lehmann(x, y, paired=paired, level=level)
    return Comparison(
        test=TEST_NAMES[key], reason=reason, statistic=statistic, p_value=p_value, df=df,
        n_a=int(x.size), n_b=int(y.size), mean_a=float(np.mean(x)), mean_b=float(np.mean(y)),
        median_a=float(np.median(x)), median_b=float(np.median(y)),
        rel_diff=rel_diff(x, y), rel_diff_ci=ci, rel_diff_ci_method=ci_method,
        rel_diff_ci_fieller=fieller, rel_diff_ci_bootstrap=boot,
        hedges_g=hedges_g(x, y, paired=paired), cliffs_delta=cliffs_delta(x, y),
        hl_shift=shift, hl_ci=shift_ci, assumptions=checks, labels=tuple(labels),
        paired=paired, level=level,
    )
