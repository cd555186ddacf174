"""The figure style: thesis-sized, serif type matching the paper, colour-blind-safe palette."""

from __future__ import annotations

import matplotlib
from matplotlib import font_manager

#: Width of a figure that spans the text block of an A4 thesis page, in inches.
TEXT_WIDTH = 6.0
#: The paper's body font where installed (Debian fonts-lmodern), else a serif fallback.
SERIF = ["Latin Modern Roman", "CMU Serif", "DejaVu Serif"]
#: Okabe-Ito colours, distinguishable with every common colour-vision deficiency.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]


def rc() -> dict:
    """Matplotlib rcParams of the perflab figure style."""
    available = {f.name for f in font_manager.fontManager.ttflist}
    serif = [f for f in SERIF if f in available] or ["DejaVu Serif"]
    return {
        "font.family": "serif", "font.serif": serif, "mathtext.fontset": "cm",
        "font.size": 9, "axes.labelsize": 9, "axes.titlesize": 9, "legend.fontsize": 8,
        "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.spines.top": False, "axes.spines.right": False,
        "axes.linewidth": 0.6, "xtick.major.width": 0.6, "ytick.major.width": 0.6, "lines.linewidth": 1.0,
        "axes.prop_cycle": matplotlib.cycler(color=PALETTE), "axes.grid": True, "axes.grid.axis": "y",
        "grid.linewidth": 0.4, "grid.alpha": 0.5, "legend.frameon": False,
        "figure.figsize": (TEXT_WIDTH, TEXT_WIDTH * 0.42), "figure.dpi": 100, "savefig.dpi": 300,
        "savefig.bbox": "tight", "savefig.pad_inches": 0.02, "pdf.fonttype": 3,
        "axes.formatter.use_mathtext": True,
    }


def use() -> None:
    """Apply the perflab figure style to matplotlib globally."""
    matplotlib.rcParams.update(rc())
