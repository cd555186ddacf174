"""The figure style: thesis-sized, serif type matching the paper, colour-blind-safe and grayscale-safe.

A figure is drawn at the width the paper prints it (:func:`width`: the text block, or the
fraction of it a chapter's ``\\includegraphics`` gives), so that its type is printed at the
size set here, never below :data:`MIN_TEXT_PT`. Fonts are embedded as TrueType/OpenType
outlines (``pdf.fonttype`` 42), never as Type 3 bitmaps-in-procedures that publishers reject;
each level of a factor gets a colour, a marker and a line style of its own, so a figure
printed in gray still tells them apart.
"""

from __future__ import annotations

import matplotlib
from matplotlib import font_manager
from matplotlib.rcsetup import cycler  # matplotlib.cycler itself (it validates the properties)

from ..errors import InputError

#: Width of the paper's text block in inches: A4 (21 cm) less two 2.5 cm margins (``paper/main.tex``'s geometry).
TEXT_WIDTH = 16 / 2.54
#: The smallest type a printed figure may have, in points.
MIN_TEXT_PT = 7.0
#: Type sizes in points: titles and axis labels, tick labels and legends, and the smallest, for text written
#: into a plot (values in heatmap cells, "not run" marks).
TEXT_PT, TICK_PT, SMALL_PT = 9.0, 8.0, 7.5
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


def width(fraction: float = 1.0) -> float:
    """The width in inches of a figure the paper prints at ``fraction`` of its text width (0 < fraction <= 1)."""
    if not 0 < fraction <= 1:
        raise InputError(f"figure width {fraction!r}: give the fraction of the text width the paper prints it at, "
                         "above 0 and at most 1")
    return fraction * TEXT_WIDTH


def rc() -> dict:
    """Matplotlib rcParams of the perflab figure style."""
    available = {f.name for f in font_manager.fontManager.ttflist}
    serif = [f for f in SERIF if f in available] or ["DejaVu Serif"]
    return {
        "font.family": serif, "font.serif": serif, "mathtext.fontset": "stix",
        "font.size": TEXT_PT, "axes.labelsize": TEXT_PT, "axes.titlesize": TEXT_PT,
        "figure.titlesize": TEXT_PT, "figure.labelsize": TEXT_PT, "legend.fontsize": TICK_PT,
        "legend.title_fontsize": TICK_PT, "xtick.labelsize": TICK_PT, "ytick.labelsize": TICK_PT,
        "axes.spines.top": False, "axes.spines.right": False,
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
