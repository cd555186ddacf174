"""The figure style: thesis-sized, serif type matching the paper, colour-blind-safe and grayscale-safe.

Fonts are embedded as TrueType/OpenType outlines (``pdf.fonttype`` 42), never as Type 3
bitmaps-in-procedures that publishers reject; each level of a factor gets a colour, a
marker and a line style of its own, so a figure printed in gray still tells them apart.
"""

from __future__ import annotations

import matplotlib
from matplotlib import font_manager
from matplotlib.rcsetup import cycler  # matplotlib.cycler itself (it validates the properties)

#: Width of a figure that spans the text block of an A4 thesis page, in inches.
TEXT_WIDTH = 6.0
#: STIX, a TrueType serif with full Unicode coverage (µ, −, °) bundled with matplotlib, and its
#: math fonts. The paper's Latin Modern is OpenType/CFF, which cannot be embedded as TrueType
#: (Type 42) cleanly, and matplotlib's cmr10 misprints every non-ASCII character.
SERIF = ["STIXGeneral", "DejaVu Serif"]
#: Okabe-Ito colours, distinguishable with every common colour-vision deficiency.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
#: Markers per level: shapes that stay distinct in grayscale.
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "*"]
#: Line styles per level.
LINESTYLES = ["-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (8, 2)), (0, (3, 1, 3, 3))]


def look(i: int) -> dict:
    """Colour, marker and line style of the ``i``-th level (cycling when there are more levels than styles)."""
    return {"color": PALETTE[i % len(PALETTE)], "marker": MARKERS[i % len(MARKERS)],
            "linestyle": LINESTYLES[i % len(LINESTYLES)]}


def rc() -> dict:
    """Matplotlib rcParams of the perflab figure style."""
    available = {f.name for f in font_manager.fontManager.ttflist}
    serif = [f for f in SERIF if f in available] or ["DejaVu Serif"]
    return {
        "font.family": serif, "font.serif": serif, "mathtext.fontset": "stix",
        "font.size": 9, "axes.labelsize": 9, "axes.titlesize": 9, "legend.fontsize": 8,
        "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.spines.top": False, "axes.spines.right": False,
        "axes.linewidth": 0.6, "xtick.major.width": 0.6, "ytick.major.width": 0.6, "lines.linewidth": 1.0,
        "axes.prop_cycle": cycler(color=PALETTE), "axes.grid": True, "axes.grid.axis": "y",
        "grid.linewidth": 0.4, "grid.alpha": 0.5, "legend.frameon": False,
        "figure.figsize": (TEXT_WIDTH, TEXT_WIDTH * 0.42), "figure.dpi": 100, "savefig.dpi": 300,
        "savefig.bbox": "tight", "savefig.pad_inches": 0.02, "pdf.fonttype": 42, "ps.fonttype": 42,
        "axes.unicode_minus": True, "figure.constrained_layout.use": True,
        "axes.formatter.use_mathtext": True,
    }


def use() -> None:
    """Apply the perflab figure style to matplotlib globally."""
    matplotlib.rcParams.update(rc())
