"""A pre-registered question decided by its data: supported, contradicted, equivalent or inconclusive.

One contrast (level b of a factor against level a), one primary metric, a smallest effect
size of interest (SESOI, relative to a's mean) and an expected direction, all stated before
the data. The test is the one the design implies: the paired t on block differences for an
RMIT schedule (:mod:`perflab.stats.blocked`), or Welch's t. Multiplicity: the question's
family of m questions is Bonferroni-corrected, so both the p-value and the interval are
adjusted (:mod:`perflab.stats.family`). Equivalence: two one-sided tests (TOST) within
±SESOI at alpha / m (Schuirmann 1987; Lakens 2017). The decision, in this order:

1. **equivalent**: TOST rejects both one-sided nulls (the effect is inside ±SESOI);
2. **supported**: the difference is significant in the expected direction;
3. **contradicted**: significant in the other direction, or, for an expected
   equivalence, the whole interval lies outside ±SESOI;
4. **inconclusive**: none of these (too few samples or too much spread to decide).

"No difference" is therefore only ever *equivalent* (TOST) or *inconclusive*, never read from
a non-significant p-value (Lakens, Scheel & Isager 2018).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as st

from ..study import MIN_N
from ._input import StatsInputError, plain
from .blocked import blocked_compare, has_blocks, paired_by_block
from .compare import compare
from .equivalence import tost
from .family import adjusted_level
from .power import n_for_effect
from .summaries import welch_from_stats

#: The four outcomes, in the order they are decided.
VERDICTS = ("equivalent", "supported", "contradicted", "inconclusive")
#: Expected outcomes a question may state.
EXPECTED = ("higher", "lower", "equivalent")
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
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """Return the decision as a dict of plain values."""
        return plain(asdict(self))


def required_n(sesoi: float, cv: float, *, alpha: float = 0.05, m: int = 1, power: float = 0.8,
               paired: bool = True) -> int:
    """Samples per cell for a two-sided t test at alpha / m to detect ``sesoi`` with ``power``, at least :data:`MIN_N`."""
    return max(MIN_N, n_for_effect(sesoi, cv, alpha=alpha / max(1, m), power=power, paired=paired))


def decide(df: pd.DataFrame, *, value: str, factor: str, a: Any, b: Any, expected: str, sesoi: float,
           alpha: float = 0.05, m: int = 1, test: str = "blocked", block: str = "block") -> Decision:
    """Decide one question on ``df`` (one row per sample): level ``b`` of ``factor`` against level ``a``.

    ``sesoi`` is relative to a's mean (0.05 = ±5 %); ``m`` is the size of the question's
    family (Bonferroni). ``test="blocked"`` pairs by ``block`` and needs complete blocks;
    when the data have none, Welch's t is used and a note says so.
    """
    if expected not in EXPECTED:
        raise StatsInputError("decide(expected=...)", f"one of {EXPECTED}", repr(expected), "State the expected outcome.")
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
    verdict = _verdict(eq.equivalent, p_adj < alpha, c.rel_diff, low, high, expected, sesoi)
    if verdict == "inconclusive" and min(xa.size, xb.size) < MIN_N:
        notes.append(f"n = {min(xa.size, xb.size)} per cell, below the planned {MIN_N}")
    return Decision(verdict=verdict, test=c.test, n_a=int(xa.size), n_b=int(xb.size), rel_diff=float(c.rel_diff),
                    ci_low=float(low), ci_high=float(high), ci_level=level, p_value=float(c.p_value),
                    p_adjusted=float(p_adj), tost_p=float(eq.p_value), sesoi=float(sesoi), m=int(m),
                    notes=tuple(notes) + tuple(n for n in c.notes if "bootstrap" not in n))


def _verdict(equivalent: bool, significant: bool, rel_diff: float, low: float, high: float, expected: str,
             sesoi: float) -> str:
    """The verdict word, decided in the order of the module docstring."""
    if equivalent:
        return "equivalent"
    if significant and ((rel_diff > 0) == (expected == "higher")) and expected != "equivalent":
        return "supported"
    if (significant and expected != "equivalent") or (expected == "equivalent" and (low > sesoi or high < -sesoi)):
        return "contradicted"
    return "inconclusive"


def decide_summary(a: tuple[float, float, int], b: tuple[float, float, int], *, expected: str, sesoi: float,
                   alpha: float = 0.05, m: int = 1) -> Decision:
    """Decide one question from published summaries ``(mean, sd, n)`` of level a and level b.

    Welch's t from the summaries (:func:`perflab.stats.summaries.welch_from_stats`: Fieller
    interval of the relative difference at the family-adjusted level) and TOST as two one-sided
    Welch tests against ±``sesoi`` times a's mean (Schuirmann 1987), both at alpha / m. The
    samples behind a published mean are not available, so nothing is checked of their
    distribution; the decision note says so.
    """
    if expected not in EXPECTED:
        raise StatsInputError("decide_summary(expected=...)", f"one of {EXPECTED}", repr(expected),
                              "State the expected outcome.")
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
    verdict = _verdict(tost_p < alpha / max(1, m), p_adj < alpha, float(row["rel_diff"]), low, high, expected, sesoi)
    return Decision(verdict=verdict, test="Welch t from the published mean, SD and n", n_a=int(na), n_b=int(nb),
                    rel_diff=float(row["rel_diff"]), ci_low=low, ci_high=high, ci_level=level, p_value=p,
                    p_adjusted=p_adj, tost_p=tost_p, sesoi=float(sesoi), m=int(m),
                    notes=("decided from the published summaries: the samples are not available, so their "
                           "distribution and independence cannot be checked",))


def pilot_cv(df: pd.DataFrame, *, value: str, factor: str, a: Any, b: Any, block: str = "block") -> float:
    """The CV a power analysis needs for the question's test: of the block differences b - a relative to
    a's mean when the data have complete blocks, else the pooled CV of the two cells."""
    sub = df[df[factor].astype(str).isin([str(a), str(b)])]
    if has_blocks(sub, factor, block):
        xa, xb, _ = paired_by_block(sub, value, factor, block, a, b)
        return float(np.std(xb - xa, ddof=1) / abs(np.mean(xa)))
    xa = sub.loc[sub[factor].astype(str) == str(a), value].to_numpy(float)
    xb = sub.loc[sub[factor].astype(str) == str(b), value].to_numpy(float)
    return float(np.sqrt((np.var(xa, ddof=1) + np.var(xb, ddof=1)) / 2) / abs(np.mean(xa)))
