"""One factor's levels compared: description, tests, checks, figure, tables and inline values.

Each level is compared with the first (the baseline); with more than one comparison the
p-values are Holm-adjusted. Warm-up samples are excluded; nothing else is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.stats

from .. import stats
from ..stats.describe import COLUMNS as DESCRIBE_COLUMNS
from ..stats.multi import adjust_pvalues
from . import figures, lineage, macros, tables
from .latex import escape_latex, format_number, format_p


@dataclass
class LevelsResult:
    """What :func:`analyse` found for one metric across the levels of one factor."""

    metric: str
    factor: str
    data: pd.DataFrame
    summary: pd.DataFrame
    comparisons: list
    p_adjusted: list[float]
    checks: pd.DataFrame
    block: stats.BlockEffect | None = None
    figure: plt.Figure | None = None


def select_rows(df: pd.DataFrame, metric: str, select: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The measured (non-warm-up) rows of ``metric``, one per sample.

    Without ``select`` these are the summary rows; ``select`` maps dimension columns to the
    value to keep (``None``: the dimension must be empty), e.g. ``{"direction": "read",
    "job": None}`` for fio's per-direction totals. More than one row per sample is refused.
    """
    data = df[(df["metric"] == metric) & ~df["warmup"]]
    if select is None:
        data = data[data["summary"]]
    else:
        for column, value in select.items():
            if column not in data:
                raise ValueError(f"select: no column {column!r} in the tidy table; columns: {list(df.columns)}")
            data = data[data[column].isna()] if value is None else data[data[column].astype(str) == str(value)]
    if data.empty:
        raise ValueError(f"no measured rows of metric {metric!r} with select={select}; metrics present: "
                         f"{sorted(df['metric'].dropna().unique())}")
    repeated = data["run_id"].duplicated()
    if repeated.any():
        extra = [c for c in data.columns[data.columns.get_loc("unit") + 1:]
                 if c not in ("parser_version", "source") and data[c].nunique(dropna=False) > 1]
        raise ValueError(f"metric {metric!r}: {int(repeated.sum())} samples have several rows; choose one with "
                         f"select on these columns: {extra}")
    return data.copy()


def analyse(df: pd.DataFrame, *, metric: str, factor: str, level: float = 0.95,
            select: Mapping[str, Any] | None = None) -> LevelsResult:
    """Describe ``metric`` per level of ``factor`` and compare every level with the first.

    The rows are :func:`select_rows` of ``metric`` (summary rows unless ``select`` says).
    """
    data = select_rows(df, metric, select)
    name = factor
    if factor in DESCRIBE_COLUMNS:
        data[f"{factor}_level"] = data[factor]
        factor = f"{factor}_level"
    summary = stats.describe(data, "value", factor, level=level)
    lv = list(summary[factor])
    base = data.loc[data[factor] == lv[0], "value"].to_numpy()
    comparisons = [stats.compare(base, data.loc[data[factor] == other, "value"].to_numpy(), level=level,
                                 labels=(f"{name}={lv[0]}", f"{name}={other}")) for other in lv[1:]]
    raw_p = [c.p_value for c in comparisons]
    p_adjusted = list(adjust_pvalues(raw_p, "holm")) if len(raw_p) > 1 else raw_p
    return LevelsResult(metric, factor, data, summary, comparisons, p_adjusted, checks(data, factor),
                        _block_effect(data, factor))


def checks(data: pd.DataFrame, factor: str) -> pd.DataFrame:
    """Per level, in run order: normality, serial dependence, trend and flagged outliers."""
    flagged = stats.flag_outliers(data, "value", factor)
    rows = []
    for level_, sub in flagged.sort_values(["block", "position"]).groupby(factor, sort=True):
        d = stats.drift(sub["value"]) if len(sub) >= 4 else None
        rows.append({factor: level_, "n": len(sub), "shapiro_p": _shapiro(sub["value"].to_numpy()),
                     "lag1_autocorr": d.lag1_autocorr if d else float("nan"),
                     "ljung_box_p": d.ljung_box_p if d else float("nan"),
                     "trend": d.trend if d else "n < 4", "mann_kendall_p": d.mann_kendall_p if d else float("nan"),
                     "outliers": int(sub["outlier"].sum())})
    return pd.DataFrame(rows)


def _shapiro(x) -> float:
    return float(scipy.stats.shapiro(x).pvalue) if len(x) >= 3 and np.ptp(x) > 0 else float("nan")


def _block_effect(data: pd.DataFrame, factor: str) -> stats.BlockEffect | None:
    try:
        return stats.block_effect(data, "value", factor, "block")
    except stats.StatsInputError:
        return None


def output_stem(campaign: str, metric: str) -> str:
    """The file stem of a campaign's figure, tables and macros for ``metric``, e.g. ``tool-ping-rtt-avg``."""
    return f"{campaign}-{_slug(metric)}"


def _slug(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return re.sub(r"[^a-z0-9]+", "-", str(value).lower()).strip("-")


def write(result: LevelsResult, *, campaign: str, source: str | Path, paper_dir: str | Path, factor_label: str,
          quantity: str, scale: float, unit: str, generator: str, title: str | None = None) -> dict[str, list[Path]]:
    """Write the figure (PDF+PNG), the tables, the macro file and an appendix section under ``paper_dir``."""
    paper = Path(paper_dir)
    stem = output_stem(campaign, result.metric)
    fig = figures.levels(result.data, factor=result.factor, value="value", summary=result.summary,
                         ylabel=f"{quantity} ({unit})", xlabel=factor_label, scale=scale)
    result.figure = fig
    n_total = int(result.summary["n"].sum())
    fig_paths = figures.save(fig, paper / "figures" / stem, inputs=[source], generator=generator,
                             details={"metric": result.metric, "factor": result.factor, "n": n_total})
    desc_tex = tables.describe_table(
        result.summary, factor=result.factor, factor_label=factor_label, scale=scale, unit=unit,
        caption=f"{quantity} per level of {factor_label.lower()} ({campaign}); warm-up samples excluded.",
        label=f"tab:{stem}-summary")
    notes = ["Holm-adjusted $p$-values are used for the decisions in the text."] if len(result.comparisons) > 1 else []
    cmp_tex = tables.comparison_table(
        result.comparisons, caption=f"{quantity}: each level of {factor_label.lower()} against "
                                    f"{escape_latex(result.comparisons[0].labels[0]) if result.comparisons else 'the baseline'}.",
        label=f"tab:{stem}-comparison", notes=notes) if result.comparisons else ""
    checks_tex = tables.checks_table(result.checks, result.block, factor=result.factor, factor_label=factor_label,
                                     caption=f"{quantity}: assumptions and run-order checks per level of "
                                             f"{factor_label.lower()} ({campaign}).", label=f"tab:{stem}-checks")
    table_paths = []
    for kind, text in (("summary", desc_tex), ("comparison", cmp_tex), ("checks", checks_tex)):
        if text:
            path = lineage.atomic_text(paper / "tables" / f"{stem}-{kind}.tex", text)
            lineage.write([path], [source], generator=generator)
            table_paths.append(path)
    values = _values(result, campaign=campaign, scale=scale)
    macro_path = macros.write(paper / "macros" / f"{stem}.tex", values, inputs=[source], generator=generator)
    section = lineage.atomic_text(paper / "sections" / f"{stem}.tex", section_tex(
        result, stem=stem, title=title or f"{quantity} ({campaign})", quantity=quantity,
        factor_label=factor_label, scale=scale, unit=unit))
    lineage.write([section], [source], generator=generator)
    return {"figures": fig_paths, "tables": table_paths, "macros": [macro_path], "sections": [section]}


def section_tex(result: LevelsResult, *, stem: str, title: str, quantity: str, factor_label: str, scale: float,
                unit: str) -> str:
    """A LaTeX section with the figure, the tables and the reading of the result, for an appendix."""
    reading = escape_latex(sentence(result, quantity=quantity, factor_label=factor_label, scale=scale, unit=unit))
    return "\n".join([
        "% Generated by perflab; do not edit.",
        f"\\section{{{escape_latex(title)}}}",
        f"\\label{{sec:{stem}}}",
        reading, "", checks_sentence(result), "",
        "\\begin{figure}[htbp]\\centering",
        f"\\includegraphics[width=\\textwidth]{{{stem}.pdf}}",
        f"\\caption{{{escape_latex(quantity)} per level of {escape_latex(factor_label.lower())}: (a) every sample, "
        "the mean and its 95\\,\\% Student-$t$ CI; (b) the samples in run order.}",
        f"\\label{{fig:{stem}}}", "\\end{figure}", "",
        *(f"\\plinput{{tables/{stem}-{kind}.tex}}" for kind in ("summary", "comparison", "checks")), ""])


def _values(result: LevelsResult, *, campaign: str, scale: float) -> dict[str, str]:
    key = f"{campaign}/{_slug(result.metric)}"
    values: dict[str, str] = {f"{key}/n-total": str(int(result.summary["n"].sum()))}
    for r in result.summary.to_dict("records"):
        lv = f"{key}/{_slug(result.factor)}-{_slug(r[result.factor])}"
        values.update({f"{lv}/n": str(int(r["n"])), f"{lv}/mean": format_number(r["mean"] / scale, 4),
                       f"{lv}/sd": format_number(r["sd"] / scale, 3), f"{lv}/cv": format_number(100 * r["cv"], 2),
                       f"{lv}/ci-low": format_number(r["mean_ci_low"] / scale, 4),
                       f"{lv}/ci-high": format_number(r["mean_ci_high"] / scale, 4)})
    values[f"{key}/checks/verdict"] = checks_sentence(result)
    for c, p_adj in zip(result.comparisons, result.p_adjusted):
        other = c.labels[1].split("=", 1)[1]
        ck = f"{key}/{_slug(result.factor)}-{_slug(other)}-vs-base"
        values.update({f"{ck}/test": c.test, f"{ck}/p": format_p(p_adj),
                       f"{ck}/rel-diff": format_number(100 * c.rel_diff, 3),
                       f"{ck}/rel-diff-ci-low": format_number(100 * c.rel_diff_ci[0], 3),
                       f"{ck}/rel-diff-ci-high": format_number(100 * c.rel_diff_ci[1], 3),
                       f"{ck}/hedges-g": format_number(c.hedges_g, 3),
                       f"{ck}/cliffs-delta": format_number(c.cliffs_delta, 3)})
    return values


def checks_sentence(result: LevelsResult, alpha: float = 0.05) -> str:
    """What the run-order checks say about the comparison's independence assumption, as LaTeX prose."""
    dependent = result.checks[(result.checks["ljung_box_p"] < alpha) | (result.checks["mann_kendall_p"] < alpha)]
    block = result.block is not None and min(result.block.anova_p, result.block.friedman_p) < alpha
    if dependent.empty and not block:
        return ("No level shows serial dependence or a trend, and no block effect is detected: the samples can "
                "be treated as independent draws, as the tests assume.")
    parts = []
    if not dependent.empty:
        parts.append(f"{len(dependent)} of {len(result.checks)} levels show serial dependence or a trend "
                     f"({escape_latex(result.factor)} = {', '.join(escape_latex(str(v)) for v in dependent[result.factor])})")
    if block:
        parts.append(f"the block (round) shifts the values ({tables.p_phrase(result.block.anova_p)}, two-way ANOVA)")
    text = "; ".join(parts)
    return (text[0].upper() + text[1:] + ". The samples are therefore not independent draws: the comparison's "
            "$p$-value overstates the evidence, and the conditions of the hosts drifted during the campaign.")


def _p_plain(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"


def sentence(result: LevelsResult, *, quantity: str, factor_label: str, scale: float, unit: str) -> str:
    """A plain-language reading of the result, for the notebook's interpretation cell."""
    parts = []
    for c, p_adj in zip(result.comparisons, result.p_adjusted):
        verdict = "differs significantly from" if p_adj < 1 - c.level else "does not differ significantly from"
        parts.append(f"{quantity} at {c.labels[1]} ({c.mean_b / scale:.3g} {unit}, n={c.n_b}) {verdict} "
                     f"{c.labels[0]} ({c.mean_a / scale:.3g} {unit}, n={c.n_a}): {c.test}, {_p_plain(p_adj)}, "
                     f"relative difference {100 * c.rel_diff:+.1f} % "
                     f"(CI {100 * c.rel_diff_ci[0]:+.1f} to {100 * c.rel_diff_ci[1]:+.1f} %).")
    return " ".join(parts)
