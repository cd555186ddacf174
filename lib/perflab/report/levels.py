"""One factor's levels for the paper: figure, tables, inline values and an appendix section.

The statistics (row selection, description, tests, run-order checks and their verdict) are
computed by :mod:`perflab.stats.levels`; this module only formats a
:class:`~perflab.stats.levels.LevelsResult`. ``analyse`` is that module's function,
re-exported so that notebooks need one import.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ..stats.levels import LevelsResult, analyse
from . import figures, lineage, macros, tables
from ..files import slug
from .latex import (ci_decimals, escape_latex, fixed, format_number, format_p, in_prose, level_text, level_words, num,
                    p_phrase, plain_p_phrase)
from .tables import estimate

__all__ = ["analyse", "output_stem", "write", "section_tex", "sentence"]


def output_stem(campaign: str, metric: str) -> str:
    """The file stem of a campaign's figure, tables and macros for ``metric``, e.g. ``tool-ping-rtt-avg``."""
    return f"{campaign}-{slug(metric)}"


def write(result: LevelsResult, *, campaign: str, source: str | Path, paper_dir: str | Path, factor_label: str,
          quantity: str, scale: float, unit: str, generator: str, title: str | None = None,
          stem: str | None = None, monitors: pd.DataFrame | None = None) -> dict[str, list[Path]]:
    """Write the figure (PDF+PNG), the tables, the macro file and an appendix section under ``paper_dir``.

    ``stem`` names the files (default :func:`output_stem`); the pipeline passes the analysis name.
    ``monitors`` is the tidy table the result came from: its sysstat rows of the measured hosts
    are plotted under the run order (see :func:`perflab.report.figures.levels`).
    """
    paper = Path(paper_dir)
    stem = stem or output_stem(campaign, result.metric)
    level = result.summary.attrs["level"]
    fig = figures.levels(result.data, factor=result.factor, value="value", summary=result.summary,
                         ylabel=f"{quantity} ({unit})", xlabel=factor_label, scale=scale, monitors=monitors)
    shown = figures.monitor_data(result.data, monitors)
    n_total = int(result.summary["n"].sum())
    fig_paths = figures.save(fig, paper / "figures" / stem, inputs=[source], generator=generator,
                             details={"metric": result.metric, "factor": result.factor, "n": n_total})
    desc_tex = tables.describe_table(
        result.summary, factor=result.factor, factor_label=factor_label, scale=scale, unit=unit,
        caption=f"{quantity} per level of {in_prose(factor_label)}; warm-up samples excluded.",
        label=f"tab:{stem}-summary")
    names = {result.factor: in_prose(factor_label)}
    notes = ["Holm-adjusted $p$-values (each level against the baseline) are used for the decisions in the "
             "text."] if len(result.comparisons) > 1 else []
    cmp_tex = tables.comparison_table(
        result.comparisons, p_adjusted=result.p_adjusted, scale=scale, unit=unit,
        caption=f"{quantity}: each level of {in_prose(factor_label)} against "
                f"{level_words(result.comparisons[0].labels[0], names) if result.comparisons else 'the baseline'}.",
        label=f"tab:{stem}-comparison", notes=notes, names=names) if result.comparisons else ""
    checks_tex = tables.checks_table(result.checks, result.block, factor=result.factor, factor_label=factor_label,
                                     caption=f"{quantity}: assumptions and run-order checks per level "
                                             f"of {in_prose(factor_label)}.",
                                     label=f"tab:{stem}-checks")
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
        factor_label=factor_label, scale=scale, unit=unit, level=level, monitors=tuple(shown)))
    lineage.write([section], [source], generator=generator)
    return {"figures": fig_paths, "tables": table_paths, "macros": [macro_path], "sections": [section]}


def section_tex(result: LevelsResult, *, stem: str, title: str, quantity: str, factor_label: str, scale: float,
                unit: str, level: float, monitors: tuple[str, ...] = ()) -> str:
    """A LaTeX section with the figure, the tables and the reading of the result, for an appendix.

    ``monitors`` names the monitor panels the figure has (keys of
    :data:`perflab.report.figures.MONITOR_PANELS`); the caption describes every panel.
    """
    reading = tex_minus(escape_latex(sentence(result, quantity=quantity, factor_label=factor_label, scale=scale,
                                              unit=unit)))
    panels = [f"(a) every sample, the mean and its {level_text(level)} Student-$t$ CI",
              "(b) the samples in run order", "(c) the empirical distribution (ECDF) of each level's samples"]
    names = {"cpu": "the CPU time busy in user and system mode", "load": "the 1-minute load average"}
    panels += [f"({chr(ord('d') + i)}) {names[key]} of each monitored host (sysstat), mean per block, "
               "on the run order's axis" for i, key in enumerate(monitors)]
    return "\n".join([
        "% Generated by perflab; do not edit.",
        f"\\section{{{escape_latex(title)}}}",
        f"\\label{{sec:{stem}}}",
        reading, "",
        "\\begin{figure}[htbp]\\centering",
        f"\\includegraphics[width=\\textwidth]{{{stem}.pdf}}",
        f"\\caption{{{escape_latex(quantity)} per level of {escape_latex(in_prose(factor_label))}: "
        f"{'; '.join(panels)}.}}",
        f"\\label{{fig:{stem}}}", "\\end{figure}", "",
        *(f"\\plinput{{tables/{stem}-{kind}.tex}}" for kind in ("summary", "comparison", "checks")), ""])


def _values(result: LevelsResult, *, campaign: str, scale: float) -> dict[str, str]:
    """The inline values (``\\plv`` keys) of a result: per level, per comparison, and the verdict."""
    key = f"{campaign}/{slug(result.metric)}"
    values: dict[str, str] = {f"{key}/n-total": str(int(result.summary["n"].sum()))}
    for r in result.summary.to_dict("records"):
        lv = f"{key}/{slug(result.factor)}-{slug(r[result.factor])}"
        low, high = r["mean_ci_low"] / scale, r["mean_ci_high"] / scale
        mean, _, decimals = estimate(r["mean"] / scale, low, high)
        values.update({f"{lv}/n": str(int(r["n"])), f"{lv}/mean": f"\\num{{{mean}}}",
                       f"{lv}/sd": num(r["sd"] / scale, 3), f"{lv}/cv": num(100 * r["cv"], 2),
                       f"{lv}/ci-low": _bound(low, decimals), f"{lv}/ci-high": _bound(high, decimals)})
    values[f"{key}/checks/verdict"] = escape_latex(result.verdict)
    values[f"{key}/level"] = f"{100 * result.summary.attrs['level']:g}"
    for c, p_adj in zip(result.comparisons, result.p_adjusted):
        other = c.labels[1].split("=", 1)[1]
        ck = f"{key}/{slug(result.factor)}-{slug(other)}-vs-base"
        low, high = c.estimate_ci[0] / scale, c.estimate_ci[1] / scale
        effect, _, decimals = estimate(c.estimate / scale, low, high, digits=3)
        rel_low, rel_high = 100 * c.rel_diff_ci[0], 100 * c.rel_diff_ci[1]
        rel, _, rel_decimals = estimate(100 * c.rel_diff, rel_low, rel_high, digits=3)
        values.update({f"{ck}/test": escape_latex(c.test), f"{ck}/effect": escape_latex(c.effect),
                       f"{ck}/p": format_p(p_adj), f"{ck}/p-phrase": p_phrase(p_adj),
                       f"{ck}/estimate": f"\\num{{{effect}}}",
                       f"{ck}/estimate-ci-low": _bound(low, decimals),
                       f"{ck}/estimate-ci-high": _bound(high, decimals),
                       f"{ck}/rel-diff": f"\\num{{{rel}}}",
                       f"{ck}/rel-diff-ci-low": _bound(rel_low, rel_decimals),
                       f"{ck}/rel-diff-ci-high": _bound(rel_high, rel_decimals),
                       f"{ck}/hedges-g": num(c.hedges_g, 3),
                       f"{ck}/cliffs-delta": num(c.cliffs_delta, 3)})
    return values


def _bound(value: float, decimals: int | None) -> str:
    """An interval bound as ``\\num`` at the interval's precision (three significant digits when it has none)."""
    return num(value, 3) if decimals is None or value != value else f"\\num{{{fixed(value, decimals)}}}"


def _plain(value: float, low: float, high: float, *, sign: bool = True) -> tuple[str, str, str]:
    """An estimate and its interval's bounds as plain text at the interval's precision, with explicit signs."""
    decimals = ci_decimals(low, high)
    texts = [format_number(v, 3) if decimals is None else fixed(v, decimals) for v in (value, low, high)]
    value_t, low_t, high_t = (("+" + t if sign and not t.startswith("-") and t not in ("0", "--") else t)
                              for t in texts)
    return value_t, low_t, high_t


def sentence(result: LevelsResult, *, quantity: str, factor_label: str, scale: float, unit: str) -> str:
    """A plain-language reading of each comparison (test, effect with its interval, p), then the verdict.

    Numbers are in fixed notation, each estimate (and each mean) rounded to the precision of its interval, as
    in the tables."""
    means = {}
    for r in result.summary.to_dict("records"):
        means[f"{result.factor}={r[result.factor]}"] = estimate(r["mean"] / scale, r["mean_ci_low"] / scale,
                                                                r["mean_ci_high"] / scale)[0]
    parts = []
    for c, p_adj in zip(result.comparisons, result.p_adjusted):
        verdict = "differs significantly from" if p_adj < 1 - c.level else "does not differ significantly from"
        est, low, high = _plain(c.estimate / scale, c.estimate_ci[0] / scale, c.estimate_ci[1] / scale)
        rel, rel_low, rel_high = _plain(100 * c.rel_diff, 100 * c.rel_diff_ci[0], 100 * c.rel_diff_ci[1])
        mean_a, mean_b = (means.get(label, format_number(m / scale, 4)) for label, m in zip(c.labels, (c.mean_a,
                                                                                                        c.mean_b)))
        names = {result.factor: in_prose(factor_label)}
        parts.append(f"{quantity} at {level_words(c.labels[1], names)} ({mean_b} {unit}, {c.n_b} samples) "
                     f"{verdict} {level_words(c.labels[0], names)} ({mean_a} {unit}, {c.n_a} samples): {c.test}, "
                     f"{plain_p_phrase(p_adj)}, {c.effect} {est} {unit} ({100 * c.level:g} % CI {low} to {high}), "
                     f"relative {rel} % (CI {rel_low} to {rel_high} %).")
    return " ".join([*parts, result.verdict])


def tex_minus(text: str) -> str:
    """Escaped prose with the hyphen before a number set as a true minus sign (``\\textminus``)."""
    return re.sub(r"(?<![\w-])-(?=\d)", r"\\textminus{}", text)
