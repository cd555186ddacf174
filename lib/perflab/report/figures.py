"""Figures: vector PDF + PNG in the perflab style, each with a lineage sidecar.

Levels of a factor are shown in natural order (numbers by value, sizes by their
suffix: 4k < 32k < 1M < 128M), each with its own colour, marker and line style. In a
Jupyter kernel, importing this module makes figures display as PNG images (the Agg
backend alone would print ``<Figure size ...>``), so executed notebooks and their
HTML rendering show them.
"""

from __future__ import annotations

import io
import textwrap
from functools import partial
from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
import pandas as pd  # noqa: E402

from ..files import atomic_write, natural_key, natural_order  # noqa: E402
from . import lineage, style  # noqa: E402


def save(fig: plt.Figure, stem: str | Path, *, inputs: Sequence[str | Path], generator: str,
         details: Mapping[str, Any] | None = None) -> list[Path]:
    """Save ``fig`` as ``<stem>.pdf`` and ``<stem>.png`` with a lineage sidecar; return the paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".pdf"), stem.with_suffix(".png")]
    if fig.get_layout_engine() is not None:  # lay out once and keep it: every save is then the same bytes
        fig.draw_without_rendering()
        fig.set_layout_engine("none")
    for path in paths:
        # No creation date: the same figure from the same data and versions is the same bytes.
        meta = {"Creator": f"perflab ({generator})", "CreationDate": None} if path.suffix == ".pdf" else None
        atomic_write(path, partial(fig.savefig, metadata=meta))
    lineage.write(paths, inputs, generator=generator, details=details)
    return paths


#: Room above the highest point, bar or interval end of an axis that starts at 0, as a share of the axis: a
#: marker at the top is drawn whole.
HEADROOM = 0.08


def from_zero(ax: plt.Axes) -> None:
    """Start ``ax``'s y axis at 0 and end it :data:`HEADROOM` above the highest point, bar or interval end drawn
    in it or in an axes sharing its y axis (1 when nothing drawn is above 0)."""
    tops = [float(a.dataLim.y1) for a in ax.get_shared_y_axes().get_siblings(ax)]
    top = max([t for t in tops if np.isfinite(t)], default=0.0)
    ax.set_ylim(0, top / (1 - HEADROOM) if top > 0 else 1)


#: Characters per line of a y-axis label: a longer one is wrapped to stay within its panel's height.
YLABEL_WIDTH = 30
#: Monitor panels under the run-order panel: (key, metrics summed, y-axis label, title).
MONITOR_PANELS = (("cpu", ("cpu_usr", "cpu_sys"), "CPU busy (%)", "CPU busy (usr + sys)"),
                  ("load", ("load_1",), "load (tasks)", "load average, 1 min"))


def monitor_series(monitors: pd.DataFrame, metrics: Sequence[str], *, order_col: str = "block") -> pd.DataFrame:
    """Per monitored host and ``order_col`` value, the mean over samples of the sum of ``metrics`` (sysstat's
    ``sadf`` rows of a tidy table; CPU rows for all CPUs, ``cpu == "all"``): columns host, order_col, value."""
    rows = monitors[(monitors["tool"] == "sadf") & monitors["metric"].isin(metrics)]
    if "cpu" in rows.columns:
        rows = rows[rows["cpu"].isna() | (rows["cpu"].astype(str) == "all")]
    per_sample = rows.groupby(["host", "run_id", order_col], as_index=False)["value"].sum()
    return per_sample.groupby(["host", order_col], as_index=False)["value"].mean()


def monitor_data(df: pd.DataFrame, monitors: pd.DataFrame | None, *, order_col: str = "block") -> dict:
    """The monitor panels to draw for the samples of ``df`` (by ``run_id``): {key of :data:`MONITOR_PANELS`:
    :func:`monitor_series`}, only those with rows; empty without sysstat rows."""
    if monitors is None or not {"tool", "metric", "host", "run_id", "value", order_col} <= set(monitors.columns):
        return {}
    if "run_id" in df.columns:
        monitors = monitors[monitors["run_id"].isin(set(df["run_id"]))]
    series = {key: monitor_series(monitors, metrics, order_col=order_col) for key, metrics, *_ in MONITOR_PANELS}
    return {key: s for key, s in series.items() if len(s)}


def levels(df: pd.DataFrame, *, factor: str, value: str, summary: pd.DataFrame, ylabel: str,
           xlabel: str | None = None, scale: float = 1.0, order_col: str = "block",
           monitors: pd.DataFrame | None = None) -> plt.Figure:
    """Panels for one factor: (a) samples per level with mean and CI, (b) run order, (c) ECDFs, and, when
    ``monitors`` holds sysstat rows, (d) CPU busy and (e) load of the monitored hosts under the run order.

    ``summary`` is :func:`perflab.stats.describe` output for ``value`` by ``factor`` (same
    units as ``df``; its ``attrs["level"]`` is the CI's confidence level); ``scale`` divides
    values for display (e.g. 1e9 for Gbit/s); ``ylabel`` names the quantity with its unit.
    The ECDF shows the shape (skew, modes, outliers) that a mean and its CI hide; the
    monitors show a cause (a busy or loaded host) beside a change in the run order.
    ``monitors`` is a tidy table (tool ``sadf``: ``cpu_usr``, ``cpu_sys`` with ``cpu`` "all",
    ``load_1``); only the samples of ``df`` (by ``run_id``) are plotted.
    """
    style.use()
    series = monitor_data(df, monitors, order_col=order_col)
    if series:
        mosaic = [["samples", "order"], *[["ecdf", key] for key in series]]
        fig = plt.figure(figsize=(style.TEXT_WIDTH, 4.4 + 1.1 * len(series)), layout="constrained")
        axd = fig.subplot_mosaic(mosaic, width_ratios=[1, 1.6], height_ratios=[1.4, *[0.8] * len(series)],
                                 sharex=False)
    else:
        fig = plt.figure(figsize=(style.TEXT_WIDTH, 4.6), layout="constrained")
        axd = fig.subplot_mosaic([["samples", "order"], ["ecdf", "ecdf"]], width_ratios=[1, 1.6],
                                 height_ratios=[1.2, 1])
    ax, ax_ecdf, ax_seq = axd["samples"], axd["ecdf"], axd["order"]
    data = df.assign(_y=df[value] / scale)
    order = natural_order(data[factor])
    looks = {level: style.look(i) for i, level in enumerate(order)}
    jitter = np.random.default_rng(0)
    for i, level in enumerate(order):
        look, y = looks[level], data.loc[data[factor] == level, "_y"].to_numpy()
        ax.scatter(i - 0.1 + jitter.uniform(-0.2, 0.2, len(y)), y, s=8, marker=look["marker"], color=look["color"],
                   edgecolors="none", alpha=0.6, zorder=1)
        row = summary[summary[factor] == level].iloc[0]
        mean, lo, hi = row["mean"] / scale, row["mean_ci_low"] / scale, row["mean_ci_high"] / scale
        ax.errorbar(i + 0.3, mean, yerr=[[mean - lo], [hi - mean]], fmt=look["marker"], color="black", ms=3.5,
                    capsize=2.5, lw=0.9, zorder=3)
        xs = np.sort(y)
        ax_ecdf.step(np.r_[xs[0], xs], np.r_[0.0, np.arange(1, len(xs) + 1) / len(xs)], where="post",
                     color=look["color"], linestyle=look["linestyle"], lw=0.9)
        ax_ecdf.plot(xs, np.arange(1, len(xs) + 1) / len(xs), look["marker"], color=look["color"], ms=2.5,
                     linestyle="none")
        part = data[data[factor] == level].sort_values(order_col)
        ax_seq.plot(part[order_col], part["_y"], color=look["color"], marker=look["marker"],
                    linestyle=look["linestyle"], ms=2.5, lw=0.7, label=str(level))
    ax.set_xticks(range(len(order)), [str(level) for level in order])
    ax.set_xlim(-0.6, len(order) - 0.4)
    legend_title = xlabel or factor
    ax.set_xlabel(legend_title)
    ax.set_ylabel(textwrap.fill(ylabel, YLABEL_WIDTH))
    ax.set_title(f"(a) samples, mean, {100 * summary.attrs['level']:g} % CI", loc="left")
    ax_ecdf.set_xlabel(ylabel)
    ax_ecdf.set_ylabel("fraction of samples")
    ax_ecdf.set_ylim(0, 1.04)
    ax_ecdf.set_title("(c) distribution of the samples (ECDF)", loc="left")
    ax_ecdf.grid(True, axis="x")
    ax_seq.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_seq.set_xlabel(f"{order_col} (run order)")
    ax_seq.set_ylabel(textwrap.fill(ylabel, YLABEL_WIDTH))
    ax_seq.set_title("(b) samples in run order", loc="left")
    ax_seq.legend(title=legend_title, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                  alignment="left")
    low = min(0.0, float(np.nanmin(data["_y"])))
    high = max(float(np.nanmax(data["_y"])), float(np.nanmax(summary["mean_ci_high"])) / scale)
    for a in (ax, ax_seq):
        a.set_ylim(low, high + 0.06 * (high - low))
    _monitor_panels(fig, axd, series, ax_seq, order_col=order_col, first_look=len(order))
    return fig


def _monitor_panels(fig: plt.Figure, axd: Mapping[str, plt.Axes], series: Mapping[str, pd.DataFrame],
                    ax_seq: plt.Axes, *, order_col: str, first_look: int) -> None:
    """Draw the monitor panels (d), (e) under the run-order panel, sharing its x axis, a hollow marker per host
    and point; only the lowest keeps the x-axis label and tick labels."""
    panels = [(key, label, title) for key, _, label, title in MONITOR_PANELS if key in series]
    hosts = sorted({h for s in series.values() for h in s["host"]}, key=natural_key)
    for n, (key, label, title) in enumerate(panels):
        a = axd[key]
        a.sharex(ax_seq)
        for i, host in enumerate(hosts):
            look, part = style.look(first_look + i), series[key][series[key]["host"] == host]
            # hollow markers: hosts that share a machine see nearly the same series, and a filled marker would
            # hide the one under it
            a.plot(part[order_col], part["value"], color=look["color"], marker=look["marker"], ms=3, lw=0.7,
                   mfc="none", mew=0.7, linestyle=look["linestyle"], label=str(host))
        a.set_ylabel(textwrap.fill(label, 16))
        from_zero(a)
        a.set_title(f"({chr(ord('d') + n)}) {title}, mean per {order_col}", loc="left")
        a.set_xlabel(f"{order_col} (run order)")
        if n == 0:
            a.legend(title="host", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, alignment="left")
    if panels:
        fig.align_ylabels([ax_seq, *[axd[key] for key, *_ in panels]])
    for a in [ax_seq, *[axd[key] for key, *_ in panels[:-1]]]:
        a.tick_params(labelbottom=False)
        a.xaxis.label.set_visible(False)


def _png(fig: plt.Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=150)
    return buf.getvalue()


def _show_in_notebooks() -> None:
    """In an IPython kernel, display figure objects as PNG images."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(plt.Figure, _png)


_show_in_notebooks()
