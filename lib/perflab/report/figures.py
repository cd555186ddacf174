"""Figures: vector PDF + PNG in the perflab style, each with a lineage sidecar.

Levels of a factor are shown in natural order (numbers by value, sizes by their
suffix: 4k < 32k < 1M < 128M), each with its own colour, marker and line style. In a
Jupyter kernel, importing this module makes figures display as PNG images (the Agg
backend alone would print ``<Figure size ...>``), so executed notebooks and their
HTML rendering show them.
"""

from __future__ import annotations

import io
import re
import textwrap
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
import pandas as pd  # noqa: E402

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
        tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
        # No creation date: the same figure from the same data and versions is the same bytes.
        fig.savefig(tmp, metadata={"Creator": f"perflab ({generator})", "CreationDate": None}
                    if path.suffix == ".pdf" else None)
        tmp.replace(path)
    lineage.write(paths, inputs, generator=generator, details=details)
    return paths


#: Characters per line of a y-axis label: a longer one is wrapped to stay within its panel's height.
YLABEL_WIDTH = 30
#: Multipliers of size suffixes (binary: block sizes and working sets are powers of two).
_SUFFIX = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
_SIZE = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?\s*$", re.IGNORECASE)


def natural_key(level: object) -> tuple:
    """Sort key of a factor level: numbers and sizes (``4k``, ``32M``, ``1GiB``) by value, other text naturally."""
    if isinstance(level, (int, float, np.integer, np.floating)) and not isinstance(level, bool):
        return (0, float(level), "")
    text = str(level)
    m = _SIZE.match(text)
    if m:
        return (0, float(m[1]) * _SUFFIX[m[2].lower()], text)
    return (1, 0.0, [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", text)])


def natural_order(levels: Iterable[object]) -> list:
    """The distinct ``levels`` in natural order (see :func:`natural_key`)."""
    return sorted(set(levels), key=natural_key)


def levels(df: pd.DataFrame, *, factor: str, value: str, summary: pd.DataFrame, ylabel: str,
           xlabel: str | None = None, scale: float = 1.0, order_col: str = "block") -> plt.Figure:
    """Three panels for one factor: (a) samples per level with mean and CI, (b) run order, (c) ECDFs.

    ``summary`` is :func:`perflab.stats.describe` output for ``value`` by ``factor`` (same
    units as ``df``); ``scale`` divides values for display (e.g. 1e9 for Gbit/s);
    ``ylabel`` names the quantity with its unit. The ECDF shows the shape (skew, modes,
    outliers) that a mean and its CI hide.
    """
    style.use()
    fig = plt.figure(figsize=(style.TEXT_WIDTH, 4.6), layout="constrained")
    axd = fig.subplot_mosaic([["samples", "order"], ["ecdf", "ecdf"]], width_ratios=[1, 1.6], height_ratios=[1.2, 1])
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
    ax.set_title("(a) samples, mean, 95 % CI", loc="left")
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
    return fig


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
