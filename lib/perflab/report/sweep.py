"""A metric over a numeric sweep factor (block size, queue depth, numjobs) per device class.

For one campaign's tidy table: one value per sample and cell, the mean and its Student-t
interval per (facet, series, level) (:func:`perflab.stats.describe`), line plots of the
means with their intervals (one panel per facet, e.g. the I/O pattern; one line per
series, e.g. the device class), published values overlaid as hollow markers, the
Little's-law consistency table (IOPS x mean latency against the jobs x queue depth a
closed-loop benchmark keeps in flight, per cell), and the comparison with the published
sweep *in kind*: each curve normalised to its value at the smallest common level, and the
Spearman rank correlation of the two curves over the common levels.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats as sps

from ..errors import InputError
from ..stats.describe import describe
from ..tools.base import mean_in_flight
from . import figures, lineage, macros, style
from .latex import Tex, escape_latex, format_number, header, in_prose, latex_table


@dataclass
class Sweep:
    """What :func:`analyse` found: per-sample values, per-cell summary, Little's law, published comparison."""

    metric: str
    factor: str
    series: str
    facet: str | None
    points: pd.DataFrame
    summary: pd.DataFrame
    littles: pd.DataFrame
    kind: pd.DataFrame
    published: pd.DataFrame | None
    notes: list[str] = field(default_factory=list)


def _select(df: pd.DataFrame, select: Mapping[str, Any] | None) -> pd.DataFrame:
    """Rows of ``df`` matching ``select`` (dimension -> value; None matches a missing dimension)."""
    for key, value in (select or {}).items():
        if key not in df.columns:
            df = df if value is None else df.iloc[0:0]
            continue
        df = df[df[key].isna()] if value is None else df[df[key].astype(str) == str(value)]
    return df


def _level_value(level: object) -> float:
    """The numeric value of a sweep level (``4k`` -> 4096, ``16`` -> 16) for ordering and axes."""
    key = figures.natural_key(level)
    if key[0] != 0:
        raise InputError(f"sweep level {level!r} is not a number or a size (4k, 1m); sweep a numeric factor")
    return key[1]


def _measured(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The benchmark's rows of ``metric``: warm-up samples and monitor rows left out."""
    rows = df[df["metric"] == metric]
    if "warmup" in rows.columns:
        rows = rows[~rows["warmup"].fillna(False).astype(bool)]
    if "tool" in rows.columns:
        rows = rows[~rows["tool"].isin(["sadf", "procstat"])]
    return rows


def per_sample(df: pd.DataFrame, metric: str, *, keys: Sequence[str], select: Mapping[str, Any] | None = None,
               sum_over: str | None = None, source: str = "tidy table") -> pd.DataFrame:
    """One value of ``metric`` per measured sample (warm-ups left out), with the ``keys`` columns.

    ``sum_over`` names a dimension whose rows of one sample are added (e.g. ``direction`` for
    IOPS of a mixed or single-direction fio job, where the idle direction reports 0).
    """
    rows = _select(_measured(df, metric), select)
    if rows.empty:
        raise InputError(f"{source}: no rows of metric {metric!r} matching {dict(select or {})}; "
                         f"name one of the metrics there: {sorted(df['metric'].unique())[:20]}")
    group = ["run_id", *keys]
    if sum_over:
        out = rows.groupby(group, dropna=False, sort=False)["value"].sum().reset_index()
    else:
        dup = rows.duplicated(group)
        if dup.any():
            raise InputError(f"{source}: metric {metric!r} has several rows per sample after select {dict(select or {})}; "
                             "narrow select (e.g. job: None for the group row) or set sum_over")
        out = rows[group + ["value"]]
    return out.reset_index(drop=True)


def _published(published: pd.DataFrame | None, *, factor: str, series: str, facet: str | None, column: str,
               scale: float, series_map: Mapping[str, str]) -> pd.DataFrame | None:
    """The published sweep in the analysis's columns: factor, series, facet, value (in the tidy unit)."""
    if published is None:
        return None
    pub = published.copy()
    pub[series] = pub[series].astype(str).map(lambda s: series_map.get(s, s))
    pub = pub[pd.to_numeric(pub[column], errors="coerce").notna()]
    out = pd.DataFrame({factor: pub[factor].astype(str), series: pub[series],
                        "value": pd.to_numeric(pub[column]) * scale,
                        "uncertain": pub.get("uncertain", pd.Series(False, index=pub.index)).astype(str).str.lower() == "true"})
    if facet:
        out[facet] = pub[facet].astype(str)
    return out.reset_index(drop=True)


def littles_law(df: pd.DataFrame, *, cell: Sequence[str], iops: str = "iops", latency: str = "lat_mean",
                select: Mapping[str, Any] | None = None, sum_over: str | None = "direction",
                fixed: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Per cell: mean IOPS, mean latency (s), observed concurrency (each sample's IOPS x mean latency,
    averaged over the cell's samples), the outstanding I/Os numjobs x iodepth (cell columns, else
    ``fixed``), and their ratio (1 for a full closed loop).

    Latency rows of a direction that did no I/O are left out before averaging over directions.
    """
    fixed = dict(fixed or {})
    counts = per_sample(df, iops, keys=cell, select=select, sum_over=sum_over)
    lat_rows = _measured(df, latency)
    if sum_over and sum_over in df.columns:
        busy = _measured(df, iops)
        busy = busy[busy["value"] > 0][["run_id", sum_over]].drop_duplicates()
        lat_rows = lat_rows.merge(busy, on=["run_id", sum_over])
    lat_rows = _select(lat_rows, {k: v for k, v in (select or {}).items() if k != sum_over})
    lat = lat_rows.groupby(["run_id", *cell], dropna=False)["value"].mean().reset_index()
    both = counts.merge(lat, on=["run_id", *cell], suffixes=("_iops", "_lat"))
    both["_conc"] = mean_in_flight(both["value_iops"], both["value_lat"])
    out = both.groupby(list(cell), dropna=False, sort=False).agg(
        n=("run_id", "nunique"), iops=("value_iops", "mean"), latency_s=("value_lat", "mean"),
        concurrency=("_conc", "mean")).reset_index()
    jobs = pd.to_numeric(out["numjobs"]) if "numjobs" in out.columns else float(fixed.get("numjobs", 1))
    depth = pd.to_numeric(out["iodepth"]) if "iodepth" in out.columns else float(fixed.get("iodepth", 1))
    out["outstanding"] = jobs * depth
    out["ratio"] = out["concurrency"] / out["outstanding"]
    return out


def littles_law_published(published: pd.DataFrame, *, factor: str, series: str, facet: str | None,
                          series_map: Mapping[str, str], iops: str = "iops", latency: str = "lat_mean_s") -> pd.DataFrame:
    """The same consistency check on a published sweep that gives IOPS and mean latency per queue depth."""
    pub = published.copy()
    pub = pub[pd.to_numeric(pub[iops], errors="coerce").notna() & pd.to_numeric(pub[latency], errors="coerce").notna()]
    jobs = pd.to_numeric(pub["numjobs"]) if "numjobs" in pub.columns else 1.0
    out = pd.DataFrame({series: pub[series].astype(str).map(lambda s: series_map.get(s, s)),
                        "iodepth": pd.to_numeric(pub["iodepth"]), "iops": pd.to_numeric(pub[iops]),
                        "latency_s": pd.to_numeric(pub[latency])})
    if facet:
        out[facet] = pub[facet].astype(str).to_numpy()
    if factor != "iodepth":
        out[factor] = pub[factor].astype(str).to_numpy()
    out["outstanding"] = jobs * out["iodepth"]
    out["concurrency"] = mean_in_flight(out["iops"], out["latency_s"])
    out["ratio"] = out["concurrency"] / out["outstanding"]
    return out.reset_index(drop=True)


def in_kind(summary: pd.DataFrame, published: pd.DataFrame | None, *, factor: str, series: str,
            facet: str | None) -> pd.DataFrame:
    """Per (facet, series): the curves' spans (largest over smallest mean) and the Spearman rank
    correlation of rerun and published means over their common levels; NaN where fewer than 3 match."""
    if published is None or published.empty:
        return pd.DataFrame()
    pub = published.groupby([c for c in (facet, series, factor) if c], dropna=False)["value"].mean().reset_index()
    rows = []
    groups = [c for c in (facet, series) if c]
    for key, part in summary.groupby(groups, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        match = pub.copy()
        for col, val in zip(groups, key):
            match = match[match[col].astype(str) == str(val)]
        both = part[[factor, "mean"]].astype({factor: str}).merge(match[[factor, "value"]], on=factor)
        both = both.assign(_x=both[factor].map(_level_value)).sort_values("_x")
        rho = float(sps.spearmanr(both["mean"], both["value"]).statistic) if len(both) >= 3 else np.nan
        rows.append({**dict(zip(groups, key)), "levels": len(both),
                     "rerun_span": float(both["mean"].max() / both["mean"].min()) if len(both) else np.nan,
                     "published_span": float(both["value"].max() / both["value"].min()) if len(both) else np.nan,
                     "rerun_best": str(both.loc[both["mean"].idxmax(), factor]) if len(both) else "",
                     "published_best": str(both.loc[both["value"].idxmax(), factor]) if len(both) else "",
                     "spearman": rho})
    return pd.DataFrame(rows)


def analyse(df: pd.DataFrame, *, metric: str, factor: str, series: str, facet: str | None = None,
            select: Mapping[str, Any] | None = None, sum_over: str | None = None, level: float = 0.95,
            published: pd.DataFrame | None = None, published_column: str | None = None,
            published_scale: float = 1.0, series_map: Mapping[str, str] | None = None,
            littles_fixed: Mapping[str, float] | None = None, littles_cell: Sequence[str] | None = None,
            published_littles: bool = False, source: str = "tidy table") -> Sweep:
    """Summarise ``metric`` over ``factor`` per ``series`` (and ``facet``), with Little's law and the
    published comparison (``published`` rows with columns factor, series, facet and ``published_column``)."""
    keys = [c for c in (facet, series, factor) if c]
    missing = [c for c in keys if c not in df.columns]
    if missing:
        raise InputError(f"{source}: no factor column(s) {missing}; name one of the columns {list(df.columns)[:30]}")
    pts = per_sample(df, metric, keys=keys, select=select, sum_over=sum_over, source=source)
    pts[factor] = pts[factor].astype(str)
    summ = describe(pts, "value", keys, level, source=source)
    summ["_x"] = summ[factor].map(_level_value)
    summ = summ.sort_values([c for c in (facet, series) if c] + ["_x"]).reset_index(drop=True)
    notes = []
    if int(summ["n"].min()) < 2:
        notes.append(f"{int((summ['n'] < 2).sum())} of {len(summ)} cells have one sample: no interval there "
                     "(the short rerun; the -full campaign has repetitions)")
    cell = list(littles_cell) if littles_cell is not None else [c for c in keys]
    has_lat = "lat_mean" in set(df["metric"]) and "iops" in set(df["metric"])
    lit = littles_law(df, cell=cell, select={k: v for k, v in (select or {}).items()},
                      fixed=littles_fixed) if has_lat else pd.DataFrame()
    pub = _published(published, factor=factor, series=series, facet=facet, column=published_column or metric,
                      scale=published_scale, series_map=series_map or {}) if published is not None else None
    if published_littles and published is not None and len(lit):
        plit = littles_law_published(published, factor=factor, series=series, facet=facet, series_map=series_map or {})
        plit["source"] = "published"
        lit = pd.concat([lit.assign(source="rerun"), plit], ignore_index=True)
    elif len(lit):
        lit = lit.assign(source="rerun")
    kind = in_kind(summ, pub, factor=factor, series=series, facet=facet)
    return Sweep(metric, factor, series, facet, pts, summ, lit, kind, pub, notes)


def figure(result: Sweep, *, ylabel: str, xlabel: str, scale: float = 1.0, logy: bool = True,
           width: float = 1.0) -> plt.Figure:
    """One panel per facet: the mean per level and series with its interval (solid), published values
    (hollow markers, dotted; uncertain ones in gray); x on a log2 axis labelled with the levels. Drawn at
    ``width`` of the text width."""
    style.use()
    facets = figures.natural_order(result.summary[result.facet]) if result.facet else [None]
    ncols = len(facets) if len(facets) <= 3 else 2
    nrows = int(np.ceil(len(facets) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(style.width(width), 2.1 * nrows + 0.6), squeeze=False,
                             sharey=True, layout="constrained")
    series_levels = figures.natural_order(result.summary[result.series])
    for k, fac in enumerate(facets):
        ax = axes[k // ncols][k % ncols]
        part = result.summary if fac is None else result.summary[result.summary[result.facet] == fac]
        for i, ser in enumerate(series_levels):
            look = style.look(i)
            s = part[part[result.series] == ser].sort_values("_x")
            if s.empty:
                continue
            mean = s["mean"] / scale
            lo = (s["mean"] - s["mean_ci_low"]).fillna(0) / scale
            hi = (s["mean_ci_high"] - s["mean"]).fillna(0) / scale
            ax.errorbar(s["_x"], mean, yerr=[lo, hi], color=look["color"], marker=look["marker"],
                        linestyle=look["linestyle"], ms=3.5, capsize=2, lw=1.0, label=f"{ser} (rerun)")
            if result.published is not None:
                p = result.published[result.published[result.series] == ser]
                if fac is not None:
                    p = p[p[result.facet] == str(fac)]
                if len(p):
                    p = p.assign(_x=p[result.factor].map(_level_value)).sort_values("_x")
                    ax.plot(p["_x"], p["value"] / scale, color=look["color"], linestyle=":", lw=0.8,
                            marker=look["marker"], mfc="white", ms=4, label=f"{ser.split('-')[0]} (published)")
                    unc = p[p["uncertain"]]
                    ax.plot(unc["_x"], unc["value"] / scale, linestyle="none", marker="x", color="0.4", ms=4,
                            label="published, uncertain" if len(unc) else None)
        ax.set_xscale("log", base=2)
        ticks = sorted(set(part["_x"]))
        labels = {row["_x"]: str(row[result.factor]) for _, row in part.iterrows()}
        if result.published is not None:
            ticks = sorted(set(ticks) | {_level_value(v) for v in result.published[result.factor]})
            labels.update({_level_value(v): str(v) for v in result.published[result.factor]})
        ax.set_xticks(ticks, [labels[t] for t in ticks], rotation=45 if len(ticks) * ncols > 16 else 0)
        ax.minorticks_off()
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        if k % ncols == 0:
            ax.set_ylabel(textwrap.fill(ylabel, figures.YLABEL_WIDTH))
        if fac is not None:
            numeric = figures.natural_key(fac)[0] == 0
            ax.set_title(f"{result.facet} {fac}" if numeric else str(fac), loc="left")
    for k in range(len(facets), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    seen: dict[str, Any] = {}
    for ax in axes.flat:
        for handle, text in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(text, handle)
    fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncols=min(len(seen), 3))
    return fig


def summary_table(result: Sweep, *, scale: float, unit: str, quantity: str, xlabel: str, caption: str,
                  label: str) -> str:
    """Booktabs table of the means and intervals: one row per level, one column pair per (facet, series)."""
    s = result.summary
    cols = [c for c in (result.facet, result.series) if c]
    rows = []
    for key, part in s.groupby(cols, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        for _, r in part.iterrows():
            ci = ("--" if pd.isna(r["mean_ci_low"]) else
                  f"[{format_number(r['mean_ci_low'] / scale)}, {format_number(r['mean_ci_high'] / scale)}]")
            rows.append({**{c.replace("_", " "): escape_latex(str(v)) for c, v in zip(cols, key)},
                         escape_latex(xlabel): escape_latex(str(r[result.factor])), "$n$": str(int(r["n"])),
                         f"{escape_latex(quantity)} ({escape_latex(unit)})": format_number(r["mean"] / scale),
                         "95\\,\\% CI": ci})
    return latex_table(pd.DataFrame(rows), caption=caption, label=label, escape=False,
                           column_format="l" * (len(cols) + 1) + "rrr")


def littles_table(result: Sweep, *, caption: str, label: str, tolerance: float = 0.25) -> str:
    """Booktabs table of the Little's-law check per rerun cell, with the published ratio of the same cell
    (when the published sweep has it) beside it."""
    lit = result.littles
    if lit.empty:
        return ""
    cell = [c for c in lit.columns if c not in {"n", "iops", "latency_s", "outstanding", "concurrency", "ratio", "source"}]
    rerun = lit[lit["source"] == "rerun"].copy()
    pub = lit[lit["source"] == "published"]
    cell = [c for c in cell if rerun[c].notna().all()]
    for c in cell:
        rerun[c] = rerun[c].astype(str)
    if len(pub):
        keys = [c for c in cell if c in pub.columns and pub[c].notna().all()]
        pub = pub.assign(**{c: pub[c].astype(str) for c in keys})[keys + ["ratio"]].rename(columns={"ratio": "pub"})
        rerun = rerun.merge(pub.drop_duplicates(keys), on=keys, how="left")
    rerun["_x"] = rerun[result.factor].map(_level_value) if result.factor in cell else rerun["outstanding"]
    rerun = rerun.sort_values([c for c in (result.facet, result.series) if c in rerun.columns] + ["_x", "outstanding"])

    def mark(ratio: float) -> str:
        return format_number(ratio) + ("" if abs(ratio - 1) <= tolerance else " $\\dagger$")

    rows = []
    for _, r in rerun.iterrows():
        row = {c.replace("_", " "): escape_latex(str(r[c])) for c in cell}
        # headers on two lines: the table stays narrow enough to stand upright
        row.update({"$n$": str(int(r["n"])), "IOPS": format_number(r["iops"]),
                    header("latency", "(ms)"): format_number(1e3 * r["latency_s"]),
                    header("IOPS", "$\\times$ lat."): format_number(r["concurrency"]),
                    header("jobs", "$\\times$ QD"): format_number(r["outstanding"]), "ratio": mark(r["ratio"])})
        if "pub" in rerun.columns:
            row[header("published", "ratio")] = "--" if pd.isna(r["pub"]) else mark(r["pub"])
        rows.append(row)
    note = (f"Little's law for a closed loop: IOPS $\\times$ mean latency (per sample, averaged over the cell's "
            f"samples; IOPS and latency columns: means) equals "
            f"the I/Os in flight, numjobs $\\times$ iodepth. $\\dagger$: ratio farther than {tolerance:g} from 1."
            + (" Published ratio: the same check on the thesis's IOPS and latency for that cell." if len(pub) else ""))
    table = pd.DataFrame(rows)
    return latex_table(table, caption=caption, label=label, notes=[note], escape=False,
                           column_format="l" * len(cell) + "r" * (table.shape[1] - len(cell)))


def kind_table(result: Sweep, *, xlabel: str, caption: str, label: str) -> str:
    """Booktabs table of the published-vs-rerun comparison in kind (spans, best level, Spearman)."""
    k = result.kind
    if k.empty:
        return ""
    rows = []
    for _, r in k.iterrows():
        rows.append({**{c.replace("_", " "): escape_latex(str(r[c])) for c in (result.facet, result.series) if c},
                     "levels": str(int(r["levels"])),
                     "span rerun": format_number(r["rerun_span"]), "span published": format_number(r["published_span"]),
                     f"best {escape_latex(in_prose(xlabel))} rerun": escape_latex(r["rerun_best"]),
                     "published": escape_latex(r["published_best"]),
                     "Spearman $\\rho$": "--" if pd.isna(r["spearman"]) else format_number(r["spearman"], 2)})
    note = ("Over the levels both sweeps have: span = largest over smallest mean of the curve; best = level of "
            "the largest mean; $\\rho$: Spearman rank correlation of the two curves (shape, not size), a description of "
            "the levels' order, not a test of agreement: on n levels a perfect $\\rho$ arises by chance once in n! "
            "orderings (once in 24 for four).")
    return latex_table(pd.DataFrame(rows), caption=caption, label=label, notes=[note], escape=False)


def write(result: Sweep, *, name: str, paper_dir: str | Path, inputs: Sequence[str | Path], generator: str,
          ylabel: str, xlabel: str, quantity: str, scale: float, unit: str, logy: bool = True,
          width: float = 1.0) -> dict[str, Any]:
    """Write the figure (PDF, PNG; drawn at ``width`` of the text width), the summary, Little's-law and in-kind
    tables and the inline values."""
    paper = Path(paper_dir)
    fig = figure(result, ylabel=ylabel, xlabel=xlabel, scale=scale, logy=logy, width=width)
    out: dict[str, Any] = {"figures": figures.save(fig, paper / "figures" / name, inputs=inputs, generator=generator)}
    plt.close(fig)
    texts = {
        "summary": summary_table(result, scale=scale, unit=unit, quantity=quantity, xlabel=xlabel,
                                 caption=Tex(f"{escape_latex(quantity)} over {escape_latex(in_prose(xlabel))}: mean and 95\\,\\% "
                                             "Student-t interval per cell."),
                                 label=f"tab:{name}-summary"),
        "littles": littles_table(result, label=f"tab:{name}-littles",
                                 caption=f"Little's-law consistency of {in_prose(quantity)} over {in_prose(xlabel)} per cell."),
        "kind": kind_table(result, xlabel=xlabel, caption=f"Published and rerun {in_prose(quantity)} over {in_prose(xlabel)}, "
                                                          "compared in kind.", label=f"tab:{name}-kind"),
    }
    for key, text in texts.items():
        path = lineage.atomic_text(paper / "tables" / f"{name}-{key}.tex",
                                   text or "% nothing to show for this analysis\n")
        lineage.write([path], inputs, generator=generator)
        out[key] = path
    values = {f"{name}/cells": str(len(result.summary)), f"{name}/samples": str(len(result.points))}
    rerun = result.littles[result.littles["source"] == "rerun"] if len(result.littles) else result.littles
    if len(rerun):
        values[f"{name}/littles/cells"] = str(len(rerun))
        values[f"{name}/littles/within"] = str(int((abs(rerun["ratio"] - 1) <= 0.25).sum()))
        values[f"{name}/littles/min"] = format_number(rerun["ratio"].min())
        values[f"{name}/littles/max"] = format_number(rerun["ratio"].max())
    pub_l = result.littles[result.littles["source"] == "published"] if len(result.littles) else result.littles
    if len(pub_l):
        values[f"{name}/littles/published-cells"] = str(len(pub_l))
        values[f"{name}/littles/published-within"] = str(int((abs(pub_l["ratio"] - 1) <= 0.25).sum()))
    if len(result.kind):
        rho = result.kind["spearman"].dropna()
        values[f"{name}/kind/curves"] = str(len(result.kind))
        values[f"{name}/kind/rho-positive"] = str(int((rho > 0).sum()))
        values[f"{name}/kind/rho-median"] = format_number(float(rho.median()), 2) if len(rho) else "--"
    for _, r in result.summary.iterrows():
        key = "/".join(str(r[c]) for c in (result.facet, result.series, result.factor) if c)
        values[f"{name}/mean/{key}"] = format_number(r["mean"] / scale)
    out["macros"] = macros.write(paper / "macros" / f"{name}.tex", values, inputs=inputs, generator=generator)
    return out
