"""LaTeX tables of descriptions and comparisons, each naming its n, test, CI method and effect size."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from .latex import escape_latex, format_ci, format_number, format_p, latex_table


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


def comparison_table(comparisons: Sequence, *, caption: str, label: str, notes: Sequence[str] = ()) -> str:
    """A booktabs table with one row per :class:`perflab.stats.Comparison` (b against a)."""
    rows = []
    for c in comparisons:
        rows.append({
            "Comparison": escape_latex(f"{c.labels[1]} vs {c.labels[0]}"), "$n$": f"{c.n_b}, {c.n_a}",
            "Test": escape_latex(c.test), "Statistic": format_number(c.statistic, 4), "$p$": format_p(c.p_value, markers=True),
            "Rel.\\ difference [CI]": f"{format_number(100 * c.rel_diff, 3)}\\,\\% "
                                      f"{format_ci(*c.rel_diff_ci, percent=True)}",
            "Hedges' $g$": format_number(c.hedges_g, 3), "Cliff's $\\delta$": format_number(c.cliffs_delta, 3),
        })
    level = round(100 * comparisons[0].level) if comparisons else 95
    how = [escape_latex(f"Test: {c.test}, because {c.reason}.") for c in comparisons]
    how.append(f"{level}\\,\\% CI of the relative difference of means: {comparisons[0].rel_diff_ci_method}."
               if comparisons else "")
    return fit(latex_table(pd.DataFrame(rows), caption=caption, label=label, notes=[*how, *notes], escape=False))


def fit(table: str) -> str:
    """Shrink a table's tabular to the text width when it is wider (adjustbox ``max width``)."""
    return (table.replace("\\begin{tabular}", "\\begin{adjustbox}{max width=\\linewidth}\n\\begin{tabular}", 1)
            .replace("\\end{tabular}", "\\end{tabular}\n\\end{adjustbox}", 1))


def checks_table(checks: pd.DataFrame, block, *, factor: str, factor_label: str, caption: str, label: str) -> str:
    """A booktabs table of :func:`perflab.report.levels.checks`, with the RMIT block effect in a note."""
    rows = []
    for r in checks.to_dict("records"):
        rows.append({factor_label: str(r[factor]), "$n$": str(r["n"]),
                     "Shapiro--Wilk $p$": format_p(r["shapiro_p"]),
                     "Lag-1 autocorr.": format_number(r["lag1_autocorr"], 2),
                     "Ljung--Box $p$": format_p(r["ljung_box_p"]),
                     "Trend (Mann--Kendall $p$)": f"{escape_latex(r['trend'])} ({format_p(r['mann_kendall_p'])})",
                     "Outliers": str(r["outliers"])})
    notes = ["Values in run order per level. Outliers: robust $|z| > 3.5$ (median and MAD); flagged, never "
             "removed. Ljung--Box and Mann--Kendall test serial dependence and a monotonic trend."]
    if block is not None:
        notes.append(f"Block effect under RMIT ({block.n_blocks} blocks): two-way ANOVA {p_phrase(block.anova_p)}, "
                     f"Friedman {p_phrase(block.friedman_p)}.")
    return fit(latex_table(pd.DataFrame(rows), caption=caption, label=label, notes=notes, escape=False))


def p_phrase(p: float) -> str:
    """``$p = 0.011$`` or ``$p < 0.001$``, for prose and notes."""
    text = format_p(p)
    return f"$p {text.replace('$<$', '< ')}$" if "<" in text else f"$p = {text}$"
