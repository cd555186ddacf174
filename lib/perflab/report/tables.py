"""LaTeX tables of descriptions and comparisons, each naming its n, test, CI method and effect size."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from ..stats import BlockEffect, Comparison
from .latex import escape_latex, format_ci, format_number, format_p, latex_table, significance_note


def describe_table(summary: pd.DataFrame, *, factor: str, factor_label: str, scale: float, unit: str,
                   caption: str, label: str, notes: Sequence[str] = ()) -> str:
    """A booktabs table of :func:`perflab.stats.describe` output, values divided by ``scale``."""
    methods = summary.attrs.get("ci_method", {})
    level = round(100 * summary.attrs.get("level", 0.95))
    rows = []
    for r in summary.to_dict("records"):
        rows.append({
            factor_label: str(r[factor]), "$n$": str(int(r["n"])),
            f"Mean [{level}\\,\\% CI] ({unit})": f"{format_number(r['mean'] / scale, 4)} "
            f"{format_ci(r['mean_ci_low'] / scale, r['mean_ci_high'] / scale, digits=4)}",
            f"SD ({unit})": format_number(r["sd"] / scale, 3),
            "CV (\\%)": format_number(100 * r["cv"], 3),
            f"Median [{level}\\,\\% CI] ({unit})": f"{format_number(r['median'] / scale, 4)} "
            f"{format_ci(r['median_ci_low'] / scale, r['median_ci_high'] / scale, digits=4)}",
        })
    how = (f"CI of the mean: {methods.get('mean', 'Student t')}; CI of the median: "
           f"{methods.get('median', 'order statistics')}.")
    return fit(latex_table(pd.DataFrame(rows), caption=caption, label=label, notes=[how, *notes], escape=False))


def comparison_table(comparisons: Sequence[Comparison], *, caption: str, label: str, p_adjusted: Sequence[float] = (),
                     scale: float = 1.0, unit: str = "", notes: Sequence[str] = ()) -> str:
    """A booktabs table with one row per :class:`perflab.stats.Comparison` (b against a).

    Each row shows the test, the effect the test is about with its interval (in ``unit``,
    values divided by ``scale``) and in percent, the p-value (and the adjusted one when
    ``p_adjusted`` is given), and the two standardized effect sizes; the note names each
    test's reason, the effect, the interval methods and the diagnostics.
    """
    level = round(100 * comparisons[0].level) if comparisons else 95
    adjusted = list(p_adjusted) if len(p_adjusted) == len(comparisons) and len(comparisons) > 1 else []
    rows = []
    for i, c in enumerate(comparisons):
        row = {
            "Comparison": escape_latex(f"{c.labels[1]} vs {c.labels[0]}"), "$n$": f"{c.n_b}, {c.n_a}",
            "Test": escape_latex(c.test), "Statistic": format_number(c.statistic, 4),
            "$p$": format_p(c.p_value, markers=not adjusted),
            f"Effect [{level}\\,\\% CI] ({escape_latex(unit)})": f"{format_number(c.estimate / scale, 3)} "
            f"{format_ci(c.estimate_ci[0] / scale, c.estimate_ci[1] / scale)}",
            "Relative [CI]": f"{format_number(100 * c.rel_diff, 3)}\\,\\% {format_ci(*c.rel_diff_ci, percent=True)}",
            "Hedges' $g$": format_number(c.hedges_g, 3), "Cliff's $\\delta$": format_number(c.cliffs_delta, 3),
        }
        if adjusted:
            row["$p_\\mathrm{Holm}$"] = format_p(adjusted[i], markers=True)
        rows.append(row)
    how = []
    for c in comparisons:
        how.append(escape_latex(f"{c.labels[1]} vs {c.labels[0]}: {c.test} ({c.reason}); effect: {c.effect}; "
                                f"relative interval: {c.rel_diff_ci_method}.")
                   + "".join(" " + escape_latex(n[0].upper() + n[1:]) + "." for n in c.notes))
    return fit(latex_table(pd.DataFrame(rows), caption=caption, label=label,
                           notes=[*how, *notes, significance_note() + "."], escape=False))


def fit(table: str) -> str:
    """Shrink a table's tabular to the text width when it is wider (adjustbox ``max width``)."""
    return (table.replace("\\begin{tabular}", "\\begin{adjustbox}{max width=\\linewidth}\n\\begin{tabular}", 1)
            .replace("\\end{tabular}", "\\end{tabular}\n\\end{adjustbox}", 1))


def checks_table(checks: pd.DataFrame, block: BlockEffect | None, *, factor: str, factor_label: str, caption: str,
                 label: str) -> str:
    """A booktabs table of :func:`perflab.stats.levels.checks`, with the RMIT block effect in a note."""
    rows = []
    for r in checks.to_dict("records"):
        rows.append({factor_label: str(r[factor]), "$n$": str(r["n"]),
                     "Shapiro--Wilk $p$": format_p(r["shapiro_p"]),
                     "Lag-1 autocorr.": format_number(r["lag1_autocorr"], 2),
                     "Ljung--Box $p$ (lags)": f"{format_p(r['ljung_box_p'])} ({r['ljung_box_lags']})",
                     "Trend (Mann--Kendall $p$)": f"{escape_latex(r['trend'])} ({format_p(r['mann_kendall_p'])})",
                     "Level shift: CUSUM $p$ (at run)": f"{format_p(r['level_change_p'])} ({r['change_at']})",
                     "Spread change: B--F $p$ (windows)":
                         f"{format_p(r['variance_change_p'])} ({r['variance_windows']})",
                     "Outliers": str(r["outliers"])})
    notes = ["Values in run order per level. Ljung--Box tests serial dependence up to the lag shown; Mann--Kendall "
             "a monotonic trend; the OLS-residual CUSUM test a change in level (the run after which the cumulative "
             "deviation peaks); Brown--Forsythe a change in spread between consecutive windows of the run. "
             "Outliers: robust $|z| > 3.5$ (median and MAD); flagged, never removed."]
    if block is not None:
        notes.append(f"Block effect under RMIT ({block.n_blocks} blocks): two-way ANOVA {p_phrase(block.anova_p)}, "
                     f"Friedman {p_phrase(block.friedman_p)}.")
    return fit(latex_table(pd.DataFrame(rows), caption=caption, label=label, notes=notes, escape=False))


def p_phrase(p: float) -> str:
    """``$p = 0.011$`` or ``$p < 0.001$``, for prose and notes."""
    text = format_p(p)
    return f"$p {text.replace('$<$', '< ')}$" if "<" in text else f"$p = {text}$"
