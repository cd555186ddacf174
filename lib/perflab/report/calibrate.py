"""Offered-rate calibration shown: loss against the offered rate per size, the calibrated rates.

:func:`per_rung` joins one loss value per sample (from the tidy table) with the calibration
ladder of the campaign record (:func:`perflab.stats.calibrate.ladder`); :func:`write` draws
the loss of every rung per size with the threshold and the calibrated rung, and writes the
table of calibrated rates and their inline values
(``<name>/<frame>/pps|bitrate|loss|step|next-pps|next-loss``, ``<name>/threshold``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..errors import InputError
from ..stats import calibrate
from . import figures, latex, lineage, macros, style


def per_rung(samples: pd.DataFrame, levels: Sequence[Mapping[str, Any]], *, factor: str) -> pd.DataFrame:
    """``samples`` (one ``value`` per sample, a column ``factor`` with the rung label) with each
    rung's ``frame``, ``length``, ``bitrate`` and ``pps`` from the campaign's ``levels``."""
    rungs = calibrate.ladder(levels)
    out = samples.assign(label=samples[factor].astype(str)).merge(rungs, on="label", how="left")
    unknown = sorted(out.loc[out["pps"].isna(), "label"].unique())
    if unknown:
        raise InputError(f"samples of rung(s) {unknown} have no level in the campaign's factor {factor!r}; pass "
                         "the levels of the campaign that measured these samples")
    return out


def figure(rungs: pd.DataFrame, result: pd.DataFrame, *, threshold: float) -> plt.Figure:
    """One panel per frame size: every sample's loss (gray) and the rung means (black line) against
    the offered rate; the threshold dashed; the calibrated rung circled."""
    style.use()
    frames = sorted(rungs["frame"].unique())
    fig, axes = plt.subplots(1, len(frames), squeeze=False, figsize=(style.TEXT_WIDTH, 2.1))
    for ax, f in zip(axes[0], frames):
        g = rungs[rungs["frame"] == f]
        kpps = g["pps"] / 1e3
        ax.plot(kpps, g["value"], linestyle="none", marker="o", markersize=2.5, color="0.6")
        means = g.groupby("pps")["value"].mean()
        ax.plot(means.index / 1e3, means.to_numpy(), marker="s", markersize=3, color="black", linewidth=0.9)
        ax.axhline(threshold, color="0.3", linestyle="--", linewidth=0.8)
        chosen = result[result["frame"] == f]
        if not chosen.empty and np.isfinite(chosen["rate"].iloc[0]):
            ax.plot([chosen["rate"].iloc[0] / 1e3], [chosen["loss"].iloc[0]], marker="o", markersize=8,
                    markerfacecolor="none", markeredgecolor="black", linestyle="none")
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_ylim(0, 100)
        ax.set_title(f"Frame {f} B")
        ax.set_xlabel("Offered (kpackets/s)")
    axes[0][0].set_ylabel("Loss (%)")
    return fig


def table(result: pd.DataFrame, *, threshold: float, caption: str, label: str) -> str:
    """A LaTeX table: per frame size the calibrated rate (packets/s and payload Mbit/s), its mean
    loss, the calibration's step and the first failing rung with its loss."""
    rows = []
    for _, r in result.iterrows():
        ok = np.isfinite(r["rate"])
        length = int(r["frame"]) - calibrate.UDP_FRAME_OVERHEAD
        rows.append({latex.header("Frame", "(B)"): str(int(r["frame"])), "Rungs": int(r["rungs"]), "n": int(r["n"]),
                     latex.header("Rate", "(packets/s)"): f"{r['rate']:.0f}" if ok else "--",
                     latex.header("Payload", "(Mbit/s)"): latex.format_number(r["rate"] * 8 * length / 1e6) if ok else "--",
                     latex.header("Loss", "(\\%)"): latex.format_number(r["loss"]) if ok else "--",
                     latex.header("Step", "(packets/s)"): f"{r['step']:.0f}" if np.isfinite(r["step"]) else "--",
                     latex.header("Next rung", "(packets/s)"): f"{r['next_rate']:.0f}" if np.isfinite(r["next_rate"]) else "--",
                     latex.header("Its loss", "(\\%)"): latex.format_number(r["next_loss"]) if np.isfinite(r["next_loss"]) else "--"})
    note = (f"Rate: the highest rung whose mean loss is below {threshold:g}\\,\\% with every lower rung below it too; "
            "payload rate = packets/s $\\times$ (frame $-$ 46~B) $\\times$ 8; step: distance to the next rung; next rung: "
            "the first rung that failed (--: none failed); a rate of -- means even the lowest rung failed.")
    return latex.latex_table(pd.DataFrame(rows), caption=caption, label=label, escape=False, notes=[note],
                             column_format="rrrrrrrrr")


def values(result: pd.DataFrame, *, name: str, threshold: float) -> dict[str, str]:
    """Inline values of the calibrated rates per frame size."""
    out = {f"{name}/threshold": f"{threshold:g}"}
    for _, r in result.iterrows():
        stem = f"{name}/{int(r['frame'])}"
        length = int(r["frame"]) - calibrate.UDP_FRAME_OVERHEAD
        if np.isfinite(r["rate"]):
            out[f"{stem}/pps"] = f"{r['rate']:.0f}"
            out[f"{stem}/bitrate"] = latex.format_number(r["rate"] * 8 * length / 1e6)
            out[f"{stem}/loss"] = latex.format_number(r["loss"])
        if np.isfinite(r["step"]):
            out[f"{stem}/step"] = f"{r['step']:.0f}"
        if np.isfinite(r["next_rate"]):
            out[f"{stem}/next-pps"] = f"{r['next_rate']:.0f}"
            out[f"{stem}/next-loss"] = latex.format_number(r["next_loss"])
    return out


def write(rungs: pd.DataFrame, result: pd.DataFrame, *, name: str, threshold: float, caption: str, source: str,
          paper_dir: str | Path = "paper", generator: str = "notebooks/calibrate.ipynb") -> dict[str, Path]:
    """Write the figure (PDF, PNG), the table and the inline values of a calibration; return their paths."""
    paper = Path(paper_dir)
    fig = figure(rungs, result, threshold=threshold)
    paths = figures.save(fig, paper / "figures" / name, inputs=[source], generator=generator)
    plt.close(fig)
    tab = lineage.atomic_text(paper / "tables" / f"{name}.tex",
                              table(result, threshold=threshold, caption=caption, label=f"tab:{name}"))
    lineage.write([tab], [source], generator=generator)
    mac = macros.write(paper / "macros" / f"{name}.tex", values(result, name=name, threshold=threshold),
                       inputs=[source], generator=generator)
    return {"figure_pdf": paths[0], "figure_png": paths[1], "table": tab, "macros": mac}
