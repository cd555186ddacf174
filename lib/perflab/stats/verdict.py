"""A pre-registered question decided by its data, with minimum-effect semantics.

One contrast (level b of a factor against level a), one primary metric, a smallest effect
size of interest (SESOI, relative to a's mean), an expected outcome and whether the lab has
the mechanism the claim rests on (its testability), all stated before the data. The test is
the one the design implies: the paired t on block differences for an RMIT schedule
(:mod:`perflab.stats.blocked`), or Welch's t. Multiplicity: the question's family of m
questions (every look at one claim is in one family) is Bonferroni-corrected, so the
p-value and the interval are adjusted (:mod:`perflab.stats.family`); every rule below reads
the family-adjusted (1 - alpha/m) interval of the relative difference, or TOST at alpha/m.

A directional claim ("b is higher", "b is lower") is read as a minimum-effect claim: b
differs from a by at least the SESOI in the claimed direction (Murphy & Myors 1999, minimum-effect
tests; Lakens, Scheel & Isager 2018):

1. **supported**: the whole interval lies beyond the SESOI in the claimed direction (a
   one-sided test of "the effect is at most the SESOI" rejected at alpha/(2m));
2. **contradicted**: TOST at alpha/m puts the effect inside ±SESOI (a negligible effect,
   whichever its sign), or the whole interval lies on the other side of 0;
3. **direction only**: the interval excludes 0 on the claimed side but not the SESOI: the
   direction is shown, a size that matters is not (neither shown nor excluded);
4. **inconclusive**: none of these.

An equivalence claim is **equivalent** when TOST rejects both one-sided nulls at alpha/m
(Schuirmann 1987; Lakens 2017), **contradicted** when the whole interval lies outside
±SESOI, else **inconclusive**. A claim whose mechanism the lab does not have (testability
``no``) gets no verdict on the claim: **not testable here**, its estimate reported as a
finding about the lab. So P(supported) <= alpha / (2m) whenever the true effect is at most the
SESOI, a negligible effect never reads "equivalent" on a directional claim, and "no
difference" is never read from a non-significant p-value.

:attr:`Decision.power` is the power at the SESOI for the n used, at the spread the data
show: for a directional claim, of the family-adjusted t test to detect one SESOI (the
power of the minimum-effect test when the true effect is twice the SESOI, to within the
test's other tail); for an equivalence claim, of TOST at alpha/m when the true effect is 0
(:func:`perflab.stats.power.tost_power`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as st

from ._input import StatsInputError, plain
from .blocked import blocked_compare, has_blocks, paired_by_block
from .compare import compare
from .equivalence import tost
from .family import adjusted_level
from .power import n_for_effect, n_for_equivalence, power_at, tost_power
from .summaries import welch_from_stats

#: The fewest samples per cell a question may plan (the planning rule's floor); the study schema's minimum
#: of a question's ``n`` (:data:`perflab.study.MIN_N`) is the same number (tests/test_questions.py).
MIN_N = 40

#: The verdict of a question the lab cannot test (testability ``no``): no word on the seed's claim.
NOT_TESTABLE = "not testable here"
#: Every verdict word, in the order the tables count them.
VERDICTS = ("supported", "direction only", "equivalent", "contradicted", "inconclusive", NOT_TESTABLE)
#: Expected outcomes a question may state.
EXPECTED = ("higher", "lower", "equivalent")
#: Whether the lab has the mechanism a question's claim rests on.
TESTABILITY = ("yes", "partly", "no")
#: Tests a question may name: the blocked (paired by block) analysis, or Welch's t.
TESTS = ("blocked", "welch")


@dataclass(frozen=True)
class Decision:
    """What the data decided for one question, with the numbers behind it."""

    verdict: str
    test: str
    n_a: int
    n_b: int
    rel_diff: float
    ci_low: float
    ci_high: float
    ci_level: float
    p_value: float
    p_adjusted: float
    tost_p: float
    sesoi: float
    m: int
    power: float = math.nan
    testable: str = "yes"
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """Return the decision as a dict of plain values."""
        return plain(asdict(self))


def required_n(sesoi: float, cv: float, *, alpha: float = 0.05, m: int = 1, power: float = 0.8,
               paired: bool = True, expected: str = "higher") -> int:
    """Samples per cell, at least :data:`MIN_N`: for an equivalence claim, TOST at alpha / m within ±``sesoi``
    with ``power`` at a true effect of 0; for a directional claim, a two-sided t test at alpha / m to detect
    ``sesoi`` with ``power`` (the minimum-effect test's power at twice the SESOI)."""
    if expected == "equivalent":
        return max(MIN_N, n_for_equivalence(sesoi, cv, alpha=alpha / max(1, m), power=power, paired=paired))
    return max(MIN_N, n_for_effect(sesoi, cv, alpha=alpha / max(1, m), power=power, paired=paired))


def power_at_sesoi(n: int, cv: float, *, sesoi: float, expected: str, alpha: float = 0.05, m: int = 1,
                   paired: bool = True, ratio: float = 1.0) -> float:
    """The power at the SESOI with ``n`` per cell at spread ``cv`` (module docstring); nan without a spread."""
    if not (math.isfinite(cv) and cv > 0) or n < 2:
        return math.nan
    level = alpha / max(1, m)
    if expected == "equivalent":
        return tost_power(n, cv, sesoi, alpha=level, paired=paired)
    return power_at(sesoi, n, cv, alpha=level, paired=paired, ratio=ratio)


def _check(where: str, expected: str, testable: str) -> None:
    """Refuse an expected outcome or a testability that is not declared."""
    if expected not in EXPECTED:
        raise StatsInputError(f"{where}(expected=...)", f"one of {EXPECTED}", repr(expected), "State the expected outcome.")
    if testable not in TESTABILITY:
        raise StatsInputError(f"{where}(testable=...)", f"one of {TESTABILITY}", repr(testable),
                              "Declare whether the lab has the claim's mechanism.")


def decide(df: pd.DataFrame, *, value: str, factor: str, a: Any, b: Any, expected: str, sesoi: float,
           alpha: float = 0.05, m: int = 1, test: str = "blocked", block: str = "block",
           testable: str = "yes") -> Decision:
    """Decide one question on ``df`` (one row per sample): level ``b`` of ``factor`` against level ``a``.

    ``sesoi`` is relative to a's mean (0.05 = ±5 %); ``m`` is the size of the question's
    family (Bonferroni). ``test="blocked"`` pairs by ``block`` and needs complete blocks;
    when the data have none, Welch's t is used and a note says so. ``testable="no"``: the
    numbers are computed, the verdict is :data:`NOT_TESTABLE`.
    """
    _check("decide", expected, testable)
    if test not in TESTS:
        raise StatsInputError("decide(test=...)", f"one of {TESTS}", repr(test), "Name a declared test.")
    if not sesoi > 0:
        raise StatsInputError("decide(sesoi=...)", "a positive relative SESOI", repr(sesoi), "State the SESOI.")
    level = adjusted_level(1 - alpha, m)
    notes: list[str] = []
    sub = df[df[factor].astype(str).isin([str(a), str(b)])]
    paired = test == "blocked" and has_blocks(sub, factor, block)
    if test == "blocked" and not paired:
        notes.append(f"no complete blocks of {factor} = {a}, {b}: Welch's t instead of the blocked analysis")
    if paired:
        c = blocked_compare(sub, value, factor, block, a, b, level=level)
        xa, xb, _ = paired_by_block(sub, value, factor, block, a, b)
    else:
        xa = sub.loc[sub[factor].astype(str) == str(a), value].to_numpy(float)
        xb = sub.loc[sub[factor].astype(str) == str(b), value].to_numpy(float)
        c = compare(xa, xb, level=level)
    eq = tost(xa, xb, sesoi, relative=True, paired=paired, alpha=alpha / max(1, m))
    p_adj = min(1.0, c.p_value * max(1, m)) if math.isfinite(c.p_value) else math.nan
    low, high = c.rel_diff_ci
    verdict = verdict_word(eq.equivalent, low, high, expected, sesoi, testable)
    if verdict == "inconclusive" and min(xa.size, xb.size) < MIN_N:
        notes.append(f"n = {min(xa.size, xb.size)} per cell, below the planned {MIN_N}")
    n = min(xa.size, xb.size)
    power = power_at_sesoi(n, _cv(xa, xb, paired), sesoi=sesoi, expected=expected, alpha=alpha, m=m, paired=paired,
                           ratio=xb.size / max(1, xa.size))
    return Decision(verdict=verdict, test=c.test, n_a=int(xa.size), n_b=int(xb.size), rel_diff=float(c.rel_diff),
                    ci_low=float(low), ci_high=float(high), ci_level=level, p_value=float(c.p_value),
                    p_adjusted=float(p_adj), tost_p=float(eq.p_value), sesoi=float(sesoi), m=int(m), power=power,
                    testable=testable, notes=tuple(notes) + tuple(n for n in c.notes if "bootstrap" not in n))


def verdict_word(equivalent: bool, low: float, high: float, expected: str, sesoi: float,
                 testable: str = "yes") -> str:
    """The verdict word from TOST at alpha / m and the adjusted interval [low, high], as the module docstring says."""
    if testable == "no":
        return NOT_TESTABLE
    if expected == "equivalent":
        if equivalent:
            return "equivalent"
        return "contradicted" if low > sesoi or high < -sesoi else "inconclusive"
    near, far = (low, high) if expected == "higher" else (-high, -low)  # the interval, the claimed direction positive
    if near > sesoi:
        return "supported"
    if equivalent or far < 0:
        return "contradicted"
    return "direction only" if near > 0 else "inconclusive"


def decide_summary(a: tuple[float, float, int], b: tuple[float, float, int], *, expected: str, sesoi: float,
                   alpha: float = 0.05, m: int = 1, testable: str = "yes") -> Decision:
    """Decide one question from published summaries ``(mean, sd, n)`` of level a and level b.

    Welch's t from the summaries (:func:`perflab.stats.summaries.welch_from_stats`: Fieller
    interval of the relative difference at the family-adjusted level) and TOST as two one-sided
    Welch tests against ±``sesoi`` times a's mean (Schuirmann 1987), both at alpha / m. The
    samples behind a published mean are not available, so nothing is checked of their
    distribution; the decision note says so.
    """
    _check("decide_summary", expected, testable)
    (ma, sa, na), (mb, sb, nb) = a, b
    if min(na, nb) < 2 or min(sa, sb) < 0 or not sesoi > 0:
        raise StatsInputError("decide_summary", "n >= 2 per level, SDs >= 0 and a positive SESOI",
                              f"n {na}, {nb}; SD {sa}, {sb}; SESOI {sesoi}", "Check the published row and the question.")
    level = adjusted_level(1 - alpha, m)
    row = welch_from_stats(ma, sa, na, mb, sb, nb, level=level).iloc[0]
    se = math.sqrt(sa**2 / na + sb**2 / nb)
    margin = sesoi * abs(ma)
    if se > 0:
        lower = float(st.t.sf((mb - ma + margin) / se, row["df"]))
        upper = float(st.t.cdf((mb - ma - margin) / se, row["df"]))
        tost_p = max(lower, upper)
    else:
        tost_p = 0.0 if abs(mb - ma) < margin else 1.0
    p = float(row["p"]) if se > 0 else (0.0 if mb != ma else 1.0)
    p_adj = min(1.0, p * max(1, m))
    low, high = float(row["rel_diff_ci_low"]), float(row["rel_diff_ci_high"])
    verdict = verdict_word(tost_p < alpha / max(1, m), low, high, expected, sesoi, testable)
    cv = math.sqrt((sa**2 + sb**2) / 2) / abs(ma) if ma else math.nan
    power = power_at_sesoi(min(na, nb), cv, sesoi=sesoi, expected=expected, alpha=alpha, m=m, paired=False,
                           ratio=nb / na)
    return Decision(verdict=verdict, test="Welch t from the published mean, SD and n", n_a=int(na), n_b=int(nb),
                    rel_diff=float(row["rel_diff"]), ci_low=low, ci_high=high, ci_level=level, p_value=p,
                    p_adjusted=p_adj, tost_p=tost_p, sesoi=float(sesoi), m=int(m), power=power, testable=testable,
                    notes=("decided from the published summaries: the samples are not available, so their "
                           "distribution and independence cannot be checked",))


def pilot_cv(df: pd.DataFrame, *, value: str, factor: str, a: Any, b: Any, block: str = "block") -> float:
    """The CV a power analysis needs for the question's test: of the block differences b - a relative to
    a's mean when the data have complete blocks, else the pooled CV of the two cells."""
    sub = df[df[factor].astype(str).isin([str(a), str(b)])]
    if has_blocks(sub, factor, block):
        xa, xb, _ = paired_by_block(sub, value, factor, block, a, b)
        return _cv(xa, xb, True)
    xa = sub.loc[sub[factor].astype(str) == str(a), value].to_numpy(float)
    xb = sub.loc[sub[factor].astype(str) == str(b), value].to_numpy(float)
    return _cv(xa, xb, False)


def _cv(xa: np.ndarray, xb: np.ndarray, paired: bool) -> float:
    """The spread a power analysis uses, relative to |mean of a|: of the differences b - a when ``paired``, else
    the pooled SD of the two cells; nan with fewer than two values or a's mean 0."""
    if min(xa.size, xb.size) < 2 or not np.mean(xa):
        return math.nan
    sd = np.std(xb - xa, ddof=1) if paired else np.sqrt((np.var(xa, ddof=1) + np.var(xb, ddof=1)) / 2)
    return float(sd / abs(np.mean(xa)))
