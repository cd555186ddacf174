"""A multi-factor campaign for the paper: factorial ANOVA, interaction plot, heatmap and a grid table.

The statistics come from :mod:`perflab.stats` (rows per sample from
:func:`perflab.stats.levels.select_rows`, cell means and CIs from
:func:`perflab.stats.describe.describe`, the ANOVA from :func:`perflab.stats.anova.factorial_anova`,
ratio CIs from :func:`scipy.stats.bootstrap`); this module picks the rows, lays the numbers
out as a study's tables do (one factor down the rows, the others across, a mean row as
seed 000's tables have) and draws them. Levels keep their natural order (numbers by value).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..errors import InputError
from ..files import slug
from ..stats import anova
from ..stats.describe import describe, range_flags
from ..stats.effect import ratio_fieller
from ..stats.levels import select_rows
from . import figures, lineage, macros, style
from .latex import (cell, escape_latex, float_table, format_number, format_p, header, in_prose, in_words, level_text,
                    p_phrase)

#: ``/proc/stat`` states that count as busy CPU time (idle and iowait do not).
BUSY_STATES = ("user", "nice", "system", "irq", "softirq", "steal")


@dataclass
class FactorialResult:
    """One value per measured sample of a multi-factor campaign, its cell statistics and ANOVA."""

    quantity: str
    unit: str
    factors: list[str]
    data: pd.DataFrame
    cells: pd.DataFrame
    anova: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def samples(df: pd.DataFrame, *, metric: str, factors: Sequence[str], select: Mapping[str, Any] | None = None,
            relabel: Mapping[str, Mapping[str, str]] | None = None, cpu_host: str | None = None,
            source: str = "table") -> tuple[pd.DataFrame, str, list[str]]:
    """One row per measured sample: its factor levels (relabelled) and ``value``; the unit and notes.

    ``metric`` and ``select`` pick rows as :func:`perflab.stats.levels.select_rows` does.
    With ``cpu_host`` the value is instead the busy CPU seconds (:data:`BUSY_STATES`, all
    CPUs) that the monitor of that host saw during the sample, per 10^9 units of ``metric``
    (e.g. CPU seconds per GB moved); on the embedded lab that is the whole machine's time.
    ``relabel`` maps a factor's labels to new ones (e.g. a link name to its path kind).
    """
    sel = select_rows(df, metric, select, source=source)
    data, unit, notes = sel.data, sel.unit or "", list(sel.notes)
    data = data.rename(columns={sel.value: "value"}) if sel.value != "value" else data
    if cpu_host is not None:
        cpu = df[(df["tool"] == "procstat") & (df["metric"] == "cpu_time") & (df["host"] == cpu_host)
                 & (df["cpu"].astype(str) == "all") & df["state"].isin(BUSY_STATES)]
        busy = cpu.groupby("run_id")["value"].sum()
        data = data[data["run_id"].isin(busy.index)].copy()
        if data.empty:
            raise InputError(f"{source}: no procstat cpu_time rows of host {cpu_host!r}; "
                             "run the campaign with monitors: true and name a monitored host")
        data["value"] = busy.loc[data["run_id"]].to_numpy() / (data["value"].to_numpy() / 1e9)
        unit = f"CPU s per billion {unit}"
        notes.append(f"busy CPU time ({', '.join(BUSY_STATES)}) seen by {cpu_host}'s monitor per billion "
                     f"{metric.replace('_', ' ')}")
    out = data[["run_id", *factors, "value", *(["block"] if "block" in data.columns else [])]].copy()
    for f in factors:
        out[f] = out[f].map(lambda v, f=f: (relabel or {}).get(f, {}).get(_label(v), _label(v)))
    return out.reset_index(drop=True), unit, notes


def _label(value: object) -> str:
    """A level as text: whole numbers without a decimal point (a column with gaps reads 16 as 16.0)."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def analyse(df: pd.DataFrame, *, metric: str, factors: Sequence[str], quantity: str,
            select: Mapping[str, Any] | None = None, relabel: Mapping[str, Mapping[str, str]] | None = None,
            cpu_host: str | None = None, level: float = 0.95, typ: int = 2, source: str = "table") -> FactorialResult:
    """Samples, per-cell description (mean and its CI at ``level``) and the factorial ANOVA of ``factors``,
    with the block as an additive term when the samples carry RMIT blocks."""
    data, unit, notes = samples(df, metric=metric, factors=factors, select=select, relabel=relabel,
                                cpu_host=cpu_host, source=source)
    cells = describe(data, "value", list(factors), level, source=source, **range_flags(data["value"]))
    blocked = "block" in data.columns and data["block"].notna().all() and data["block"].nunique() >= 2
    table = anova.factorial_anova(data, "value", list(factors), typ=typ, source=source,
                                  block="block" if blocked else None)
    notes.append(f"{table.attrs['anova_type']}; {table.attrs['formula']}")
    return FactorialResult(quantity, unit, list(factors), data, cells, table, notes)


def order(levels: Sequence[object]) -> list[str]:
    """Labels in natural order (numbers by value), as text."""
    return [str(v) for v in figures.natural_order(list(dict.fromkeys(str(v) for v in levels)))]


def _cell_text(row: pd.Series, scale: float, digits: int) -> str:
    return (f"{row['mean'] / scale:.{digits}f} "
            f"[{row['mean_ci_low'] / scale:.{digits}f}, {row['mean_ci_high'] / scale:.{digits}f}]")


def layout(result: FactorialResult, *, rows: str | Sequence[str], scale: float = 1.0, digits: int = 2,
           mean_row: bool = True) -> pd.DataFrame:
    """The cell means with their CIs, the ``rows`` factor(s) down and the other factors across (a
    column per combination, named ``factor=level`` joined by ``, ``). With several row factors the
    last one varies fastest, in blocks of the others. After each block a row ``mean`` holds the
    mean of the cell means over the last row factor's levels (seed 000's "Média" row)."""
    rows = [rows] if isinstance(rows, str) else list(rows)
    across = [f for f in result.factors if f not in rows]
    cells = result.cells.copy()
    for f in result.factors:
        cells[f] = cells[f].astype(str)
    cells["_col"] = cells[across].agg(", ".join, axis=1) if across else "value"
    cols = sorted(cells["_col"].unique(), key=lambda c: [figures.natural_key(p) for p in c.split(", ")])
    labels = {c: ", ".join(f"{f}={v}" for f, v in zip(across, c.split(", "))) if across else "value" for c in cols}
    indexed = cells.set_index([*rows, "_col"])
    blocks = [()] if len(rows) == 1 else list(dict.fromkeys(
        tuple(k) for k in sorted(cells[rows[:-1]].itertuples(index=False, name=None),
                                 key=lambda k: [figures.natural_key(v) for v in k])))
    out = []
    for block in blocks:
        sub = cells[(cells[rows[:-1]] == list(block)).all(axis=1)] if block else cells
        for level in order(sub[rows[-1]]):
            line = dict(zip(rows, (*block, level)))
            for c in cols:
                key = (*block, level, c)
                line[labels[c]] = _cell_text(indexed.loc[key], scale, digits) if key in indexed.index else "--"
            out.append(line)
        if mean_row:
            line = {**dict(zip(rows, block)), rows[-1]: "mean"}
            for c in cols:
                line[labels[c]] = f"{sub.loc[sub['_col'] == c, 'mean'].mean() / scale:.{digits}f}"
            out.append(line)
    return pd.DataFrame(out, columns=[*rows, *(labels[c] for c in cols)])


#: A number in a grid cell (mean or interval end), typeset by siunitx (true minus sign).
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _grid_cell(text: str) -> str:
    """A grid cell's LaTeX: its numbers by siunitx (true minus), a mean above its interval (narrow columns)."""
    mean, _, interval = text.partition(" [")
    return cell(*(_NUMBER.sub(lambda m: f"\\num{{{m[0]}}}", t) for t in (mean, "[" + interval if interval else "")))


def layout_tex(table: pd.DataFrame, *, caption: str, label: str, over: str, level: float = 0.95,
               labels: Mapping[str, str] | None = None) -> str:
    """A grid table from :func:`layout` (cells are mean above [CI]), never shrunk: turned sideways whole,
    caption and note with it, when wider than the text even so (:func:`perflab.report.latex.float_table`); ``over`` names
    the factor the ``mean`` rows average over. Headers are in words: a row factor by its label in
    ``labels``, a column by its levels alone (one above the other), the note naming the factors they are
    levels of."""
    labels = labels or {}
    is_value = ["=" in str(c) or c == "value" for c in table.columns]
    first = next((str(c) for c in table.columns if "=" in str(c)), "")
    across = [part.split("=", 1)[0] for part in first.split(", ")] if first else []
    heads = [header(*(escape_latex(part.split("=", 1)[1]) for part in str(c).split(", "))) if "=" in str(c)
             else escape_latex(labels.get(str(c), str(c))) for c in table.columns]
    shown = pd.DataFrame({h: [_grid_cell(str(v)) if value else escape_latex(str(v)) for v in table[c]]
                          for h, c, value in zip(heads, table.columns, is_value)})
    body = shown.to_latex(index=False, escape=False, column_format="".join("r" if v else "l" for v in is_value))
    columns = (f"Columns: {escape_latex(' above '.join(in_prose(labels.get(f, f)) for f in across))}. " if across else "")
    note = (f"{columns}Each cell: mean above its {level_text(level)} CI [low, high]; rows \\emph{{mean}}: "
            f"mean of the cell means over the levels of {escape_latex(over)}.")
    return float_table("\\setlength{\\tabcolsep}{3pt}" + body.strip(), caption=caption, label=label,
                       note=note)


def anova_tex(result: FactorialResult, *, caption: str, label: str) -> str:
    """The ANOVA table (term, df, F, p, partial eta squared) as a booktabs ``table``."""
    rows = []
    for _, r in result.anova.iterrows():
        rows.append({"Term": " $\\times$ ".join(escape_latex(part) for part in r["term"].split(":")), "df": f"{r['df']:.0f}",
                     "F": "--" if pd.isna(r["F"]) else format_number(r["F"]),
                     "p": "--" if pd.isna(r["p"]) else format_p(r["p"]),
                     "partial $\\eta^2$": "--" if pd.isna(r["partial_eta_sq"]) else f"{r['partial_eta_sq']:.3f}"})
    body = pd.DataFrame(rows).to_latex(index=False, escape=False, column_format="lrrrr")
    note = escape_latex(f"{result.anova.attrs['anova_type']}; n = {len(result.data)} samples. The residual row has "
                        "no F, p or partial eta squared (--): it is what the terms are tested against.")
    return float_table(body.strip(), caption=caption, label=label, note=note)


def _panels(result: FactorialResult, panel: str | None) -> list[str | None]:
    return [*order(result.cells[panel])] if panel else [None]


def _figsize(width: float, aspect: float) -> tuple[float, float]:
    """Size of a one-row figure printed at ``width`` of the text width: a narrower one keeps most of the height
    a full-width one has, so that its axis label fits."""
    return style.width(width), style.TEXT_WIDTH * aspect * max(width, 0.8)


def interaction_figure(result: FactorialResult, *, x: str, trace: str, panel: str | None = None,
                       scale: float = 1.0, ylabel: str, labels: Mapping[str, str] | None = None,
                       width: float = 1.0) -> plt.Figure:
    """Cell means (with CI bars) against ``x``, one line per level of ``trace``, a panel per level of ``panel``;
    drawn at ``width`` of the text width (the width the paper prints it at)."""
    style.use()
    labels = labels or {}
    panels = _panels(result, panel)
    fig, axes = plt.subplots(1, len(panels), sharey=True, squeeze=False, figsize=_figsize(width, 0.36))
    xs = order(result.cells[x])
    for ax, p in zip(axes[0], panels):
        sub = result.cells if p is None else result.cells[result.cells[panel].astype(str) == p]
        for i, t in enumerate(order(result.cells[trace])):
            line = sub[sub[trace].astype(str) == t].set_index(sub[x].astype(str)[sub[trace].astype(str) == t])
            pos = [k for k, v in enumerate(xs) if v in line.index]
            if not pos:
                continue
            m = line.loc[[xs[k] for k in pos]]
            look = style.look(i)
            # a cell of one repeated value (a tool's printed precision) has a zero-width interval,
            # whose ends may then differ from its mean by rounding: never a negative bar
            low, high = ((m["mean"] - m["mean_ci_low"]).clip(lower=0), (m["mean_ci_high"] - m["mean"]).clip(lower=0))
            ax.errorbar(pos, m["mean"] / scale, yerr=[low / scale, high / scale],
                        capsize=2, markersize=4, label=f"{labels.get(trace, trace)} {t}", **look)
        ax.set_xticks(range(len(xs)), xs)
        ax.set_xlabel(labels.get(x, x))
        if p is not None and panel is not None:  # a panel value p comes with its panel factor
            ax.set_title(f"{labels.get(panel, panel)} {p}")
    axes[0][0].set_ylabel(textwrap.fill(ylabel, figures.YLABEL_WIDTH))
    figures.from_zero(axes[0][0])
    axes[0][-1].legend(loc="best")
    return fig


def heatmap_figure(result: FactorialResult, *, x: str, y: str, panel: str | None = None, scale: float = 1.0,
                   label: str, labels: Mapping[str, str] | None = None, digits: int = 2,
                   width: float = 1.0) -> plt.Figure:
    """Cell means of the ``y`` x ``x`` grid as a gray-scale heatmap with the values written in,
    a panel per level of ``panel``; drawn at ``width`` of the text width."""
    style.use()
    labels = labels or {}
    panels = _panels(result, panel)
    xs, ys = order(result.cells[x]), order(result.cells[y])
    grids = []
    for p in panels:
        sub = result.cells if p is None else result.cells[result.cells[panel].astype(str) == p]
        piv = sub.assign(_x=sub[x].astype(str), _y=sub[y].astype(str)).pivot_table(
            index="_y", columns="_x", values="mean").reindex(index=ys, columns=xs)
        grids.append(piv.to_numpy(dtype=float) / scale)
    vmax = np.nanmax([np.nanmax(g) for g in grids])
    fig, axes = plt.subplots(1, len(panels), squeeze=False, figsize=_figsize(width, 0.34))
    for ax, p, g in zip(axes[0], panels, grids):
        im = ax.imshow(g, cmap="Greys", vmin=0, vmax=vmax, origin="lower", aspect="auto")
        for (r, c), v in np.ndenumerate(g):
            if np.isfinite(v):
                ax.text(c, r, f"{v:.{digits}g}" if v >= 100 else f"{v:.{digits}f}", ha="center", va="center",
                        fontsize=style.SMALL_PT, color="white" if v > 0.55 * vmax else "black")
        ax.set_xticks(range(len(xs)), xs)
        ax.set_yticks(range(len(ys)), ys)
        ax.set_xlabel(labels.get(x, x))
        ax.grid(False)
        if p is not None and panel is not None:  # a panel value p comes with its panel factor
            ax.set_title(f"{labels.get(panel, panel)} {p}")
    axes[0][0].set_ylabel(labels.get(y, y))
    fig.colorbar(im, ax=list(axes[0]), label=textwrap.fill(label, figures.YLABEL_WIDTH), shrink=0.9)
    return fig


def ratio(result: FactorialResult, numerator: Mapping[str, str], denominator: Mapping[str, str],
          level: float = 0.95) -> tuple[float, float, float]:
    """Ratio of the mean of the samples matching ``numerator`` to that matching ``denominator``
    (factor -> level; unnamed factors pooled), with Fieller's interval (:func:`perflab.stats.effect.ratio_fieller`)."""
    def pick(want: Mapping[str, str]) -> np.ndarray:
        d = result.data
        for f, v in want.items():
            d = d[d[f].astype(str) == str(v)]
        if len(d) < 2:
            raise InputError(f"ratio: fewer than 2 samples match {dict(want)}; name levels that the table holds "
                             "for at least 2 samples")
        return d["value"].to_numpy(dtype=float)
    return ratio_fieller(pick(denominator), pick(numerator), level=level)


def values(result: FactorialResult, *, name: str, scale: float, digits: int = 2,
           ratios: Sequence[Mapping[str, Any]] = (), level: float = 0.95) -> dict[str, str]:
    """Inline values: ``<name>/n``, per ANOVA term ``<name>/anova/<term>/p|F|eta`` (and ``ptext``,
    the whole statement "$p = 0.12$" or "$p < 0.001$"), per cell
    ``<name>/cell/<l1>/<l2>.../mean`` (a level that cannot stand in a macro key, such as a relabelled
    ``on (64 MiB)``, as its slug ``on-64-mib``), and per requested ratio ``<name>/ratio/<r>`` (percent)
    with ``-low``/``-high``."""
    out = {f"{name}/n": str(len(result.data))}
    for _, r in result.anova.dropna(subset=["p"]).iterrows():
        term = r["term"].replace(":", "-x-")
        out[f"{name}/anova/{term}/p"] = format_p(r["p"])
        out[f"{name}/anova/{term}/ptext"] = p_phrase(r["p"])
        out[f"{name}/anova/{term}/F"] = format_number(r["F"])
        out[f"{name}/anova/{term}/eta"] = f"{r['partial_eta_sq']:.2f}"
    for _, c in result.cells.iterrows():
        key = "/".join(_key_part(c[f]) for f in result.factors)
        out[f"{name}/cell/{key}/mean"] = f"{c['mean'] / scale:.{digits}f}"
    for spec in ratios:
        est, low, high = ratio(result, spec["numerator"], spec["denominator"], level)
        for suffix, v in (("", est), ("-low", low), ("-high", high)):  # Fieller may be unbounded
            out[f"{name}/ratio/{spec['name']}{suffix}"] = (f"{100 * v:.0f}" if np.isfinite(v) else
                                                           "$\\infty$" if v > 0 else "$-\\infty$")
    return out


def write(result: FactorialResult, *, name: str, source: str | Path, paper_dir: str | Path,
          rows: str | Sequence[str], x: str, trace: str, panel: str | None, scale: float, unit: str,
          labels: Mapping[str, str],
          ratios: Sequence[Mapping[str, Any]] = (), digits: int = 2, level: float = 0.95,
          generator: str, width: float = 1.0) -> dict[str, list[Path]]:
    """Write ``<name>-interaction`` and ``<name>-heatmap`` (PDF+PNG, drawn at ``width`` of the text width),
    ``<name>-layout.tex``, ``<name>-anova.tex`` and the macro file ``<name>.tex`` under ``paper_dir``, each with
    lineage."""
    paper = Path(paper_dir)
    ylabel = f"{result.quantity} ({unit})"
    last = rows if isinstance(rows, str) else list(rows)[-1]
    out: dict[str, list[Path]] = {"figures": [], "tables": []}
    details = {"factors": result.factors, "n": len(result.data)}
    fig = interaction_figure(result, x=x, trace=trace, panel=panel, scale=scale, ylabel=ylabel, labels=labels,
                             width=width)
    out["figures"] += figures.save(fig, paper / "figures" / f"{name}-interaction", inputs=[source],
                                   generator=generator, details=details)
    plt.close(fig)
    fig = heatmap_figure(result, x=x, y=trace, panel=panel, scale=scale, label=ylabel, labels=labels,
                         digits=digits, width=width)
    out["figures"] += figures.save(fig, paper / "figures" / f"{name}-heatmap", inputs=[source],
                                   generator=generator, details=details)
    plt.close(fig)
    texts = {
        "layout": layout_tex(layout(result, rows=rows, scale=scale, digits=digits),
                             caption=f"{result.quantity} ({unit}) per cell.", label=f"tab:{name}-layout",
                             over=labels.get(last, last), level=level, labels=labels),
        "anova": anova_tex(result, caption=f"{result.quantity}: factorial ANOVA over "
                                           f"{in_words([in_prose(labels.get(f, f)) for f in result.factors])}.",
                           label=f"tab:{name}-anova"),
    }
    for kind, text in texts.items():
        path = lineage.atomic_text(paper / "tables" / f"{name}-{kind}.tex", text)
        lineage.write([path], [source], generator=generator)
        out["tables"].append(path)
    out["macros"] = [macros.write(paper / "macros" / f"{name}.tex",
                                  values(result, name=name, scale=scale, digits=digits, ratios=ratios, level=level),
                                  inputs=[source], generator=generator)]
    return out


def _key_part(level: object) -> str:
    """A factor level as a part of a macro key: as it is when a key may hold it, else its slug (:func:`perflab.files.slug`)."""
    text = str(level)
    return text if re.fullmatch(r"[A-Za-z0-9._-]+", text) else slug(level)
