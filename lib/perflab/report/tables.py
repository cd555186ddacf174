"""LaTeX tables of descriptions and comparisons, each naming its n, test, CI method and effect size.

Numbers are siunitx-typeset and decimal-aligned (:mod:`perflab.report.latex`); an estimate is
rounded to the precision of its interval; a wide table is turned sideways whole rather than
shrunk (split into column sets only when wider than the page even sideways); a cell left
empty is explained in the table's note.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from ..files import natural_key
from ..stats import BlockEffect, Comparison
from .latex import (ci_decimals, escape_latex, fixed, format_ci, format_number, format_p, header, latex_table, level_text,
                    level_words, p_phrase,
                    significance_note)


def estimate(value: float, low: float, high: float, *, digits: int = 4) -> tuple[str, str, int | None]:
    """An estimate and its interval as (plain number, ``[\\num{low}, \\num{high}]``, decimals): the estimate is
    rounded to the interval's precision (two significant digits of its half-width), or to ``digits``
    significant digits when the interval has no width; an undefined interval is an en dash."""
    decimals = ci_decimals(low, high)
    shown = format_number(value, digits) if decimals is None else fixed(value, decimals)
    undefined = all(v is None or v != v for v in (low, high))
    return shown, "--" if undefined else format_ci(low, high, digits=digits, decimals=decimals), decimals


def describe_table(summary: pd.DataFrame, *, factor: str, factor_label: str, scale: float, unit: str,
                   caption: str, label: str, notes: Sequence[str] = ()) -> str:
    """A booktabs table of :func:`perflab.stats.describe` output, values divided by ``scale``.

    Means and medians are rounded to the precision of their intervals; an interval that is
    undefined (the median's at small n) is an en dash, and the note says why.
    """
    methods = summary.attrs.get("ci_method", {})
    level = level_text(summary.attrs["level"])
    u = escape_latex(unit)
    rows, no_median_ci = [], []
    for r in summary.to_dict("records"):
        mean, mean_ci, _ = estimate(r["mean"] / scale, r["mean_ci_low"] / scale, r["mean_ci_high"] / scale)
        median, median_ci, _ = estimate(r["median"] / scale, r["median_ci_low"] / scale, r["median_ci_high"] / scale)
        if median_ci == "--":
            no_median_ci.append(f"{escape_latex(str(r[factor]))} ($n = {int(r['n'])}$)")
        rows.append({factor_label: escape_latex(str(r[factor])), "$n$": str(int(r["n"])),
                     header("Mean", f"({u})"): mean, header(f"{level} CI", "of the mean"): mean_ci,
                     header("SD", f"({u})"): format_number(r["sd"] / scale, 3),
                     header("CV", "(\\%)"): format_number(100 * r["cv"], 3),
                     header("Median", f"({u})"): median, header(f"{level} CI", "of the median"): median_ci})
    how = [f"CI of the mean: {escape_latex(methods.get('mean', 'Student t'))}; CI of the median: "
           f"{escape_latex(methods.get('median', 'order statistics'))}. Estimates are rounded to the precision "
           "of their interval."]
    if no_median_ci:
        how.append(f"The distribution-free {level} CI of the median is undefined (--) for "
                   f"{', '.join(no_median_ci)}: with so few samples no pair of order statistics covers the "
                   f"median with {level} confidence.")
    frame = pd.DataFrame(rows)
    means, medians = list(frame.columns[:6]), [*frame.columns[:2], *frame.columns[6:]]
    return latex_table(frame, caption=caption, label=label, notes=[*how, *notes], escape=False,
                       align=[c for c in frame.columns if c != factor_label], column_sets=[means, medians])


def _in_words(note: str, labels: Sequence[str], names: Mapping[str, str]) -> str:
    """A comparison's note for a table: its levels in words (:func:`level_words`), its first letter capitalized."""
    for label in labels:
        note = note.replace(label, level_words(label, names))
    return note[:1].upper() + note[1:]


def comparison_table(comparisons: Sequence[Comparison], *, caption: str, label: str, p_adjusted: Sequence[float] = (),
                     scale: float = 1.0, unit: str = "", notes: Sequence[str] = (),
                     names: Mapping[str, str] | None = None) -> str:
    """A booktabs table with one row per :class:`perflab.stats.Comparison` (b against a), in three parts; each
    level named in words (:func:`perflab.report.latex.level_words` with the factors' ``names``).

    The first shows the test, its statistic and the p-value (and the adjusted one when
    ``p_adjusted`` is given); the second the effect the test is about with its interval (in
    ``unit``, values divided by ``scale``) and in percent; the third the two standardized
    effect sizes (the column sets, stacked upright, when the whole is wider than the text). The note names each
    test's reason, the effect, the interval methods and the diagnostics.
    """
    level = level_text(comparisons[0].level) if comparisons else ""
    adjusted = list(p_adjusted) if len(p_adjusted) == len(comparisons) and len(comparisons) > 1 else []
    u = escape_latex(unit)
    tests, effects, sizes = [], [], []
    for i, c in enumerate(comparisons):
        name = escape_latex(f"{level_words(c.labels[1], names)} vs {level_words(c.labels[0], names)}")
        effect, effect_ci, _ = estimate(c.estimate / scale, c.estimate_ci[0] / scale, c.estimate_ci[1] / scale,
                                        digits=3)
        rel, rel_ci, _ = estimate(100 * c.rel_diff, 100 * c.rel_diff_ci[0], 100 * c.rel_diff_ci[1], digits=3)
        row = {"Comparison": name, "$n$": f"{c.n_b}, {c.n_a}", "Test": escape_latex(c.test),
               "Statistic": format_number(c.statistic, 4), "$p$": format_p(c.p_value, markers=not adjusted)}
        if adjusted:
            row["$p_\\mathrm{Holm}$"] = format_p(adjusted[i], markers=True)
        tests.append(row)
        effects.append({"Comparison": name, header("Effect", f"({u})" if u else ""): effect,
                        header(f"{level} CI", f"({u})" if u else ""): effect_ci, header("Relative", "(\\%)"): rel,
                        header(f"{level} CI", "(\\%)"): rel_ci})
        sizes.append({"Comparison": name, "Hedges' $g$": format_number(c.hedges_g, 3),
                      "Cliff's $\\delta$": format_number(c.cliffs_delta, 3)})
    how = []
    for c in comparisons:
        how.append(escape_latex(f"{level_words(c.labels[1], names)} vs {level_words(c.labels[0], names)}: {c.test} "
                                f"({c.reason}); effect: {c.effect}; "
                                f"relative interval: {c.rel_diff_ci_method}.")
                   + "".join(" " + escape_latex(_in_words(n, c.labels, names or {})) + "." for n in c.notes))
    sets = [list(rows[0]) for rows in (tests, effects, sizes)] if comparisons else []
    frame = pd.DataFrame([{**a, **b, **c} for a, b, c in zip(tests, effects, sizes)])
    aligned = [c for c in frame.columns if c not in ("Comparison", "$n$", "Test") and "$p" not in c]
    return latex_table(frame, caption=caption, label=label, escape=False, align=aligned, column_sets=sets, narrow=True,
                       notes=[*how, "Effects are rounded to the precision of their interval; the last part gives the "
                              "standardized effect sizes.", *notes,
                              significance_note() + "."])


def checks_table(checks: pd.DataFrame, block: BlockEffect | None, *, factor: str, factor_label: str, caption: str,
                 label: str) -> str:
    """A booktabs table of :func:`perflab.stats.levels.checks` (levels in natural order), with the RMIT block
    effect in a note; its column sets, when even a sideways page is too narrow: distribution and serial
    dependence, then changes over the run."""
    rows = []
    for r in sorted(checks.to_dict("records"), key=lambda r: natural_key(r[factor])):
        rows.append({factor_label: escape_latex(str(r[factor])), "$n$": str(r["n"]),
                     header("Shapiro--", "Wilk $p$"): format_p(r["shapiro_p"]),
                     header("Lag-1", "autocorr."): format_number(r["lag1_autocorr"], 2),
                     header("Ljung--Box", "$p$ (lags)"): f"{format_p(r['ljung_box_p'])} ({r['ljung_box_lags']})",
                     header("Trend", "(M--K $p$)"): f"{escape_latex(r['trend'])} ({format_p(r['mann_kendall_p'])})",
                     header("Level shift: CUSUM", "$p$ (at run)"):
                         f"{format_p(r['level_change_p'])} ({r['change_at']})",
                     header("Spread change:", "B--F $p$ (windows)"):
                         f"{format_p(r['variance_change_p'])} ({r['variance_windows']})",
                     "Outliers": str(r["outliers"])})
    notes = ["Values in run order per level. Ljung--Box tests serial dependence up to the lag shown; Mann--Kendall "
             "(M--K) a monotonic trend; the OLS-residual CUSUM test a change in level (the run after which the "
             "cumulative deviation peaks); Brown--Forsythe (B--F) a change in spread between consecutive windows of "
             "the run. Outliers: robust $|z| > 3.5$ (median and MAD); flagged, never removed. A dash: the check "
             "needs more samples than the level has."]
    if block is not None:
        notes.append(f"Block effect under RMIT ({block.n_blocks} blocks): two-way ANOVA {p_phrase(block.anova_p)}, "
                     f"Friedman {p_phrase(block.friedman_p)}.")
    frame = pd.DataFrame(rows)
    cols = list(frame.columns)
    return latex_table(frame, caption=caption, label=label, notes=notes, escape=False,
                       align=[c for c in cols if "autocorr" in c or c in ("$n$", "Outliers")],
                       column_sets=[cols[:5] + cols[-1:], cols[:1] + cols[5:-1]])
