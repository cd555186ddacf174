"""Figures: vector PDF + PNG in the perflab style, each with a lineage sidecar."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from . import lineage, style  # noqa: E402


def save(fig: plt.Figure, stem: str | Path, *, inputs: Sequence[str | Path], generator: str,
         details: Mapping[str, Any] | None = None) -> list[Path]:
    """Save ``fig`` as ``<stem>.pdf`` and ``<stem>.png`` with a lineage sidecar; return the paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".pdf"), stem.with_suffix(".png")]
    for path in paths:
        tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
        fig.savefig(tmp, metadata={"Creator": f"perflab ({generator})"} if path.suffix == ".pdf" else None)
        tmp.replace(path)
    lineage.write(paths, inputs, generator=generator, details=details)
    return paths


def levels(df: pd.DataFrame, *, factor: str, value: str, summary: pd.DataFrame, ylabel: str,
           xlabel: str | None = None, scale: float = 1.0, order_col: str = "block") -> plt.Figure:
    """Two panels for one factor: (a) every sample per level with mean and CI; (b) samples in run order.

    ``summary`` is :func:`perflab.stats.describe` output for ``value`` by ``factor`` (same
    units as ``df``); ``scale`` divides values for display (e.g. 1e9 for Gbit/s).
    """
    style.use()
    fig, (ax, ax_seq) = plt.subplots(1, 2, figsize=(style.TEXT_WIDTH, 2.5), width_ratios=[1, 1.6],
                                     layout="constrained")
    data = df.assign(_y=df[value] / scale)
    levels_ = sorted(data[factor].unique())
    colors = dict(zip(levels_, style.PALETTE))
    sns.stripplot(data=data, x=factor, y="_y", order=levels_, hue=factor, hue_order=levels_, palette=colors,
                  ax=ax, size=2.6, alpha=0.55, jitter=0.22, legend=False, zorder=1)
    for i, level in enumerate(levels_):
        row = summary[summary[factor] == level].iloc[0]
        mean, lo, hi = row["mean"] / scale, row["mean_ci_low"] / scale, row["mean_ci_high"] / scale
        ax.errorbar(i + 0.36, mean, yerr=[[mean - lo], [hi - mean]], fmt="o", color="black", ms=3.5,
                    capsize=2.5, lw=0.9, zorder=3)
    ax.set_xlim(-0.5, len(levels_) - 0.3)
    ax.set_xlabel(xlabel or factor)
    ax.set_ylabel(ylabel)
    ax.set_title("(a) samples, mean and 95 % CI", loc="left")
    for level in levels_:
        part = data[data[factor] == level].sort_values(order_col)
        ax_seq.plot(part[order_col], part["_y"], "o-", ms=2.2, lw=0.6, alpha=0.85, color=colors[level],
                    label=str(level))
    ax_seq.set_xlabel("block (run order under RMIT)")
    ax_seq.set_ylabel(ylabel)
    ax_seq.set_title("(b) samples in run order", loc="left")
    ax_seq.legend(title=xlabel or factor, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                  alignment="left")
    low = float(np.nanmin(data["_y"]))
    for a in (ax, ax_seq):
        a.set_ylim(bottom=min(0.0, low) if low < 0 else 0.0)
    return fig
