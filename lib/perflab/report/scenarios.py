"""Scenarios compared per packet size: one panel per size and metric, tests against a baseline.

For a campaign whose cells cross a ``panel`` factor (e.g. frame size) with a ``scenario``
factor (e.g. the neighbour's state), :func:`per_sample` takes one value per sample and metric
from the tidy table (the benchmark's summary rows, windowed jitter from interval reports via
:mod:`perflab.stats.windows`, a CPU's busy share from the monitors' /proc deltas, or a lab
host's CPU load from its cgroup counters);
:func:`analyse` describes every (metric, panel, scenario) cell with a mean and its CI and
compares each scenario with the baseline scenario in the same panel (the paired t on the RMIT
blocks when every block holds both cells, :mod:`perflab.stats.blocked`; Welch's t otherwise),
with p-values and intervals Bonferroni-adjusted over all comparisons of a metric; :func:`write` draws the panels
and writes the LaTeX table and inline values.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..errors import InputError
from ..stats import windows
from ..stats.blocked import has_blocks, paired_by_block
from ..stats.describe import range_flags, summarize
from ..stats.family import compare_family, family_rows, min_detectable
from . import figures, latex, lineage, macros, style

#: Tools whose rows are host monitors, not the benchmark.
MONITOR_TOOLS = ("sadf", "procstat", "cgroup")
#: /proc/stat CPU states that are not busy time.
IDLE_STATES = ("idle", "iowait")
#: /proc/stat CPU states already counted in ``user`` and ``nice`` (left out of the total).
GUEST_STATES = ("guest", "guest_nice")


@dataclass(frozen=True)
class Metric:
    """A metric to analyse: its key, how it is computed, and how it is shown."""

    key: str
    label: str
    unit: str = ""
    scale: float = 1.0
    source: str = "summary"  # "summary" (benchmark summary row), "windows" (windowed jitter/loss), "cpu", "cgroup"
    name: str = ""  # tidy metric (summary), "jitter"/"loss" (windows), the CPU ("0") for "cpu", the host for "cgroup"

    @property
    def share(self) -> bool:
        """A share in percent (CPU load, loss): its change is a difference in percentage points, since a ratio
        of shares near 0 (an idle CPU's) grows without meaning."""
        return self.unit == "%"

    @classmethod
    def from_dict(cls, d: Mapping) -> "Metric":
        """A Metric from a notebook parameter mapping."""
        return cls(**{k: d[k] for k in ("key", "label", "unit", "scale", "source", "name") if k in d})


def per_sample(df: pd.DataFrame, metric: Metric, *, factors: Sequence[str], duration: float | None = None,
               where: Mapping[str, object] | None = None) -> pd.DataFrame:
    """One row per measured sample: run_id, its RMIT ``block`` (where the table has one), the ``factors``
    and ``value`` of ``metric``."""
    df = df[~df["warmup"].astype(bool)]
    for col, level in (where or {}).items():
        df = df[df[col].astype(str) == str(level)]
    bench = df[~df["tool"].isin(MONITOR_TOOLS)]
    keys = ["run_id", *(["block"] if "block" in df.columns else []), *factors]
    if metric.source == "summary":
        rows = bench[(bench["metric"] == metric.name) & bench["summary"].astype(bool)]
        if "interval_start" in rows:
            rows = rows[rows["interval_start"].isna()]
        return rows.groupby(keys, sort=False, observed=True)["value"].mean().reset_index()
    if metric.source == "windows":
        iv = bench[bench["interval_start"].notna() & bench["metric"].isin(["jitter", "lost_packets", "packets"])]
        wide = iv.pivot_table(index=[*keys, "interval_start", "interval_end"], columns="metric",
                              values="value", aggfunc="first", observed=True).reset_index()
        per_window = windows.window_values(wide, windows.seed_windows(duration))
        out = per_window.groupby(keys, sort=False, observed=True)[metric.name].mean().reset_index()
        return out.rename(columns={metric.name: "value"})
    if metric.source == "cpu":
        proc = df[(df["tool"] == "procstat") & (df["metric"] == "cpu_time") & (df["cpu"].astype(str) == metric.name)
                  & ~df["state"].isin(GUEST_STATES)]
        if proc.empty:
            raise InputError(f"metric {metric.key}: no /proc/stat rows of CPU {metric.name!r}; run the campaign with "
                             "monitors: true (or name a CPU the table holds)")
        proc = proc[proc["host"] == min(proc["host"])]  # /proc/stat is the machine's: one host's copy
        total = proc.groupby(keys, observed=True)["value"].sum()
        busy = proc[~proc["state"].isin(IDLE_STATES)].groupby(keys, observed=True)["value"].sum()
        return (100.0 * busy / total).rename("value").reset_index()
    if metric.source == "cgroup":
        rows = df[(df["tool"] == "cgroup") & (df["metric"] == "cpu_load") & (df["host"] == metric.name)]
        if rows.empty:
            raise InputError(f"metric {metric.key}: no cgroup cpu_load rows of host {metric.name!r}; run the campaign "
                             "with monitors: true on a lab whose hosts have cgroups, or name a monitored host")
        return rows.groupby(keys, sort=False, observed=True)["value"].mean().reset_index()
    raise InputError(f"metric {metric.key}: source {metric.source!r} is unknown; use summary, windows, cpu or cgroup")


def analyse(samples: Mapping[str, pd.DataFrame], *, panel: str, scenario: str, baseline: str,
            order: Sequence[str], level: float = 0.95, test: str | None = None) -> pd.DataFrame:
    """Per metric, panel and scenario: n, mean, CI (log scale when the metric is positive, cut at 0 when it
    cannot be negative: :func:`perflab.stats.describe.range_flags`); against
    ``baseline`` in the panel: relative difference with its interval and p, both Bonferroni-adjusted over
    the comparisons of one metric (:func:`perflab.stats.family.compare_family`; ``level`` the mean's interval's level,
    ``ci_level`` the adjusted interval's), and ``mde``, the smallest
    relative change a t test at the n used detects with power 0.8 (:func:`perflab.stats.family.min_detectable`).

    Without a named ``test``, a metric whose samples carry RMIT blocks holding every scenario of every
    panel is compared by the paired t on the block differences (column ``blocked`` True), so that a shift
    of the machine between rounds cancels; otherwise by Welch's t."""
    out = []
    for key, s in samples.items():
        rows: list[dict] = []
        pairs: list[tuple] = []
        tested: list = []
        flags = range_flags(s["value"])
        blocked = test is None and "block" in s.columns and all(
            has_blocks(s[s[panel] == pv], scenario) for pv in s[panel].unique())
        for pv in figures.natural_order(s[panel].unique()):
            g = s[s[panel] == pv]
            base = g.loc[g[scenario] == baseline, "value"].to_numpy(float)
            for sc in order:
                x = g.loc[g[scenario] == sc, "value"].to_numpy(float)
                if x.size == 0:
                    continue
                d = summarize(x, level, **flags)
                row = {"metric": key, panel: pv, scenario: sc, "n": d["n"], "mean": d["mean"],
                       "ci_low": d["mean_ci_low"], "ci_high": d["mean_ci_high"], "rel_diff": np.nan,
                       "rel_low": np.nan, "rel_high": np.nan, "diff": np.nan, "diff_low": np.nan,
                       "diff_high": np.nan, "p": np.nan, "p_adjusted": np.nan, "mde": np.nan,
                       "mde_diff": np.nan, "blocked": blocked, "identical": False, "level": level,
                       "ci_level": np.nan}
                if sc != baseline and base.size >= 2 and x.size >= 2:
                    if np.ptp(np.concatenate([base, x])) == 0:  # one constant in both (e.g. no loss anywhere):
                        # no change, and nothing a test could say (no p); a ratio of zeros has no value
                        row.update(rel_diff=0.0 if base[0] else np.nan, diff=0.0, identical=True)
                    elif np.ptp(base) == 0 and np.ptp(x) == 0:  # two different constants: no t statistic
                        row.update(rel_diff=float(x[0] / base[0] - 1) if base[0] else np.nan,
                                   diff=float(x[0] - base[0]))
                    else:
                        a, b = paired_by_block(g, "value", scenario, "block", baseline, sc)[:2] if blocked else (base, x)
                        pairs.append((a, b))
                        tested.append(len(rows))
                        row["mde"] = min_detectable(a, b, alpha=1 - level, paired=blocked)
                        row["mde_diff"] = row["mde"] * abs(float(np.mean(a)))  # the same in the data's unit
                rows.append(row)
        for i, r in zip(tested, family_rows(compare_family(pairs, level=level, test=test, paired=blocked),
                                            nonnegative=flags["positive"] or flags["nonnegative"])):
            rows[i].update(rel_diff=r["rel_diff"], rel_low=r["ci_low"], rel_high=r["ci_high"], diff=r["diff"],
                           diff_low=r["diff_low"], diff_high=r["diff_high"], p=r["p"], p_adjusted=r["p_adjusted"],
                           ci_level=r["ci_level"])
        out.append(pd.DataFrame(rows))
    return pd.concat(out, ignore_index=True)


def empty_metrics(samples: Mapping[str, pd.DataFrame], metrics: Sequence[Metric]) -> list[Metric]:
    """The metrics of which every sample is zero or missing (e.g. no datagram out of order anywhere): a row of
    panels of them would show nothing."""
    def empty(m: Metric) -> bool:
        values = samples[m.key]["value"].to_numpy(float) if m.key in samples else np.array([])
        return not np.any(np.nan_to_num(values, nan=0.0))
    return [m for m in metrics if empty(m)]


def figure(samples: Mapping[str, pd.DataFrame], result: pd.DataFrame, metrics: Sequence[Metric], *,
           panel: str, panel_label: str, scenario: str, order: Sequence[str], panel_unit: str = "",
           width: float = 1.0) -> plt.Figure:
    """Rows of panels (one row per metric, one panel per level of ``panel``): each sample as a
    dot, the mean with its CI as a bar, scenarios on the x axis in ``order``; the axis of a
    non-negative metric starts at 0 (a t interval reaching below it is clipped there) and ends above every
    sample and interval. A scenario of ``order`` the campaign did not measure gets no place on the axis; each
    keeps its marker of ``order``. A metric whose samples are all zero or missing (:func:`empty_metrics`)
    gets no row: a line under the panels says so. Drawn at ``width`` of the text width."""
    style.use()
    marker = {sc: style.look(k)["marker"] for k, sc in enumerate(order)}
    order = [sc for sc in order if (result[scenario] == sc).any()]
    panels = figures.natural_order(result[panel].unique())
    empty = empty_metrics(samples, metrics)
    drawn = [m for m in metrics if m not in empty] or list(metrics)
    fig, axes = plt.subplots(len(drawn), len(panels), squeeze=False, sharex=True,
                             figsize=(style.width(width), 1.45 * len(drawn) + 0.4))
    for i, m in enumerate(drawn):
        s, r = samples[m.key], result[result["metric"] == m.key]
        for j, pv in enumerate(panels):
            ax = axes[i][j]
            for k, sc in enumerate(order):
                x = s.loc[(s[panel] == pv) & (s[scenario] == sc), "value"].to_numpy(float) / m.scale
                row = r[(r[panel] == pv) & (r[scenario] == sc)]
                if row.empty:
                    continue
                mean, lo, hi = (float(row[c].iloc[0]) / m.scale for c in ("mean", "ci_low", "ci_high"))
                ax.plot(np.full(x.size, k) + np.linspace(-0.12, 0.12, x.size), x, linestyle="none",
                        marker=marker[sc], markersize=2.5, color="0.55")
                yerr = None if np.isnan(lo) else [[mean - lo], [hi - mean]]  # the interval holds the mean (describe.mean_ci)
                ax.errorbar([k], [mean], yerr=yerr, marker=marker[sc], color="black",
                            markersize=4, capsize=2, linewidth=0.8)
            ax.set_xticks(range(len(order)), order, rotation=40, ha="right")
            ax.set_xlim(-0.5, len(order) - 0.5)
            values = s.loc[s[panel] == pv, "value"].to_numpy(float) / m.scale
            if values.size and np.nanmin(values) >= 0:  # a non-negative metric: the axis starts at 0 (CIs clipped)
                figures.from_zero(ax)
            if i == 0:
                ax.set_title(f"{panel_label} {pv} {panel_unit}".strip())
            if j == 0:
                ax.set_ylabel(f"{m.label} ({m.unit})" if m.unit else m.label)
    if len(drawn) < len(metrics):
        fig.supxlabel(f"Not drawn: {latex.in_words([latex.in_prose(m.label) for m in empty])}, zero or missing in "
                      "every sample.",
                      fontsize=style.TICK_PT, x=0.02, ha="left")
    return fig




def table(result: pd.DataFrame, metrics: Sequence[Metric], *, panel: str, panel_label: str, scenario: str,
          caption: str, label: str, panel_unit: str = "") -> str:
    """A LaTeX table: per metric, panel and scenario the mean above its CI, change vs baseline above its
    adjusted interval, its adjusted p and the MDE at the n used.

    One table per panel level (its caption names the level, e.g. the frame size), breaking across pages when
    longer than a page, naming its metric in its first row; labels ``label``, ``label-2``, ... in that order.
    The headers say the intervals' levels (the change's adjusted over the comparisons of one metric; their range,
    with each metric's level in the note, when they differ between metrics). A value that would fill a column throughout (a
    table's panel level, the n of every cell) is said in the caption or the note instead, so that the table
    stands upright."""
    shown = result[result["metric"].isin([m.key for m in metrics])]
    one_n = shown["n"].nunique() == 1
    levels = figures.natural_order(shown[panel].unique())
    none = pd.Series(dtype=float)
    mean_level, adjusted = _level_head(shown.get("level", none)), _level_head(shown.get("ci_level", none))
    change_level = latex.level_range(shown.get("ci_level", none).dropna())  # its range where the metrics' differ
    frames = []
    for pv in levels:
        rows = []
        for m in metrics:
            for _, r in shown[(shown["metric"] == m.key) & (shown[panel] == pv)].iterrows():
                row = {"Metric": latex.cell(latex.escape_latex(m.label),
                                            latex.escape_latex(f"({m.unit})") if m.unit else "", align="l"),
                       "Scenario": latex.escape_latex(str(r[scenario]))}
                if not one_n:
                    row["n"] = str(int(r["n"]))
                row.update({
                    latex.header("Mean", f"{{[}}{mean_level} CI{{]}}" if mean_level else "{[}CI{]}"): latex.cell(
                        latex.num(r["mean"] / m.scale), latex.format_ci(r["ci_low"] / m.scale, r["ci_high"] / m.scale)),
                    latex.header("Change", f"{{[}}{change_level or 'adjusted'} CI{{]}}"): _change_cell(r, m),
                    latex.header("p", "(Bonf.)"): latex.format_p(r["p_adjusted"], markers=True),
                    "MDE": _mde_cell(r, m)})
                rows.append(row)
        frames.append((pv, pd.DataFrame(rows)))
    level_names = {pv: f"{panel_label} {pv} {panel_unit}".strip() for pv in levels}
    level_text = {pv: latex.escape_latex(name) for pv, name in level_names.items()}
    said = ([level_text[levels[0]]] if len(levels) == 1 else []) + \
        ([f"n = {int(shown['n'].iloc[0])} samples in every cell"] if one_n else [])
    how = ("the paired t on the differences within the RMIT blocks (every block holds each cell once)"
           if bool(result["blocked"].all()) else "Welch's t" if not result["blocked"].any()
           else "the paired t on the RMIT blocks where every block holds both cells, Welch's t otherwise")
    spread = "the spread of the block differences" if bool(result["blocked"].all()) else "the pooled spread"
    notes = [("; ".join(said) + ". ") * bool(said)
             + "Change: relative difference of means against the baseline in the "
             f"same {latex.escape_latex(latex.in_prose(panel_label))}, with Fieller's interval; p: {how}; the interval and "
             "p are both Bonferroni-adjusted over the comparisons of one "
             "metric, so they agree; MDE: the smallest change a t test at the n "
             f"used detects with power 0.8 at {spread} "
             "(unadjusted $\\alpha$ = 0.05); a change below it is not evidence "
             "of no change.",
             latex.significance_note()]
    if "identical" in shown.columns and bool(shown["identical"].any()):
        notes.insert(1, "Same: every sample of the scenario and of the baseline had one value (no loss in any, say): "
                        "no change, and nothing for a test to weigh, so no p.")
    if any(m.share for m in metrics):
        notes.insert(1, "For a share in \\% (CPU load, loss) the change is the difference of means in percentage "
                        "points (pp), with the interval of the test's difference adjusted in the same way, and the MDE "
                        "is in points too: a ratio of shares near 0 grows without meaning.")
    per_metric = {m.label: _level_head(shown.loc[shown["metric"] == m.key].get("ci_level", none)) for m in metrics}
    if not adjusted and all(per_metric.values()):
        notes.insert(1, "Adjusted intervals: " + "; ".join(f"{latex.escape_latex(latex.in_prose(k))} {v}"
                                                           for k, v in per_metric.items())
                     + ".")
    out = []
    for i, (pv, frame) in enumerate(frames):
        frame.loc[frame["Metric"].duplicated(), "Metric"] = ""
        out.append(latex.latex_table(frame, caption=f"{caption}: {level_names[pv]}" if len(levels) > 1 else caption,
                                     label=label if i == 0 else f"{label}-{i + 1}", escape=False,
                                     column_format="ll" + "r" * (5 - one_n), narrow=True, notes=notes))
    return "\n".join(out)


def _level_head(levels: pd.Series) -> str:
    """The one confidence level of ``levels`` as a header says it (``99.2\\,\\%``), "" when they differ or are
    missing (e.g. a result written before the levels were recorded)."""
    known = {round(float(v), 6) for v in levels if pd.notna(v)}
    return latex.level_text(known.pop()) if len(known) == 1 else ""


def _change_cell(r: pd.Series, m: Metric) -> str:
    """A table's change above its adjusted interval: in percentage points for a share, else relative; ``same``
    where every sample of both cells has one value (nothing to test)."""
    if r.get("identical", False):
        return "same"
    if m.share:
        if np.isnan(r["diff"]):
            return "--"
        return latex.cell(latex.point_change(r["diff"] / m.scale),
                          latex.format_ci(r["diff_low"] / m.scale, r["diff_high"] / m.scale))
    if np.isnan(r["rel_diff"]):
        return "--"
    return latex.cell(latex.percent_change(r["rel_diff"]),
                      latex.format_ci(r["rel_low"], r["rel_high"], digits=2, percent=True))


def _mde_cell(r: pd.Series, m: Metric) -> str:
    """The MDE at the n used: relative, or in percentage points for a share."""
    if np.isnan(r["mde"]):
        return "--"
    if m.share:
        return f"\\num{{{latex.format_number(r['mde_diff'] / m.scale, 2)}}}\\,pp"
    return f"\\num{{{100 * r['mde']:.1f}}}\\,\\%"


def values(result: pd.DataFrame, metrics: Sequence[Metric], *, name: str, panel: str, scenario: str,
           alpha: float = 0.05) -> dict[str, str]:
    """Inline values: ``<name>/<metric>/<panel>/<scenario>/mean|n|change|p-adj|mde`` and per metric the
    number of comparisons and of significant ones after Bonferroni's adjustment."""
    out: dict[str, str] = {}
    for m in metrics:
        r = result[result["metric"] == m.key]
        tested = r[r["p_adjusted"].notna()]
        out[f"{name}/{m.key}/comparisons"] = str(len(tested))
        out[f"{name}/{m.key}/significant"] = str(int((tested["p_adjusted"] < alpha).sum()))
        for _, row in r.iterrows():
            stem = f"{name}/{m.key}/{row[panel]}/{str(row[scenario]).replace('+', '-')}"
            out[f"{stem}/mean"] = latex.format_number(row["mean"] / m.scale)
            out[f"{stem}/n"] = str(int(row["n"]))
            if row.get("identical", False):
                out[f"{stem}/change"] = "none (every sample of both the same)"
            elif not np.isnan(row["rel_diff"]) or (m.share and not np.isnan(row["diff"])):
                out[f"{stem}/change"] = (latex.point_change(row["diff"] / m.scale) if m.share
                                         else latex.percent_change(row["rel_diff"]))
                out[f"{stem}/p-adj"] = latex.format_p(row["p_adjusted"])
            if not np.isnan(row["mde"]):
                out[f"{stem}/mde"] = _mde_cell(row, m)
    return out


def write(samples: Mapping[str, pd.DataFrame], result: pd.DataFrame, metrics: Sequence[Metric], *, name: str,
          panel: str, panel_label: str, scenario: str, order: Sequence[str], caption: str, source: str,
          panel_unit: str = "", paper_dir: str | Path = "paper", generator: str = "notebooks/scenarios.ipynb",
          width: float = 1.0) -> dict[str, Path]:
    """Write the figure (PDF, PNG; drawn at ``width`` of the text width), the table and the inline values of one
    analysis; return their paths."""
    paper = Path(paper_dir)
    fig = figure(samples, result, metrics, panel=panel, panel_label=panel_label, scenario=scenario, order=order,
                 panel_unit=panel_unit, width=width)
    paths = figures.save(fig, paper / "figures" / name, inputs=[source], generator=generator)
    plt.close(fig)
    tab = lineage.atomic_text(paper / "tables" / f"{name}.tex",
                              table(result, metrics, panel=panel, panel_label=panel_label, scenario=scenario,
                                    caption=caption, label=f"tab:{name}", panel_unit=panel_unit))
    lineage.write([tab], [source], generator=generator)
    mac = macros.write(paper / "macros" / f"{name}.tex",
                       values(result, metrics, name=name, panel=panel, scenario=scenario),
                       inputs=[source], generator=generator)
    return {"figure_pdf": paths[0], "figure_png": paths[1], "table": tab, "macros": mac}
