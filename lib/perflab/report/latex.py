"""LaTeX tables for the paper: booktabs rules, caption, label and a note under the tabular.

The table body comes from ``pandas.io.formats.style.Styler.to_latex``; this module adds
the note paragraph and small formatters for p-values, significance markers and
intervals so that every table in ``paper/`` prints numbers the same way.
"""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

#: Significance markers, strictest first: (upper bound of p, marker).
SIGNIFICANCE_LEVELS: tuple[tuple[float, str], ...] = ((0.001, "***"), (0.01, "**"), (0.05, "*"))

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}",
}


def escape_latex(text: str) -> str:
    """Escape the LaTeX special characters of ``text`` (for captions and plain-text notes)."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def format_number(value: object, digits: int = 3) -> str:
    """Format a number with ``digits`` significant digits in fixed notation (12345.6 -> "12346", not
    "1.23e+04"; e-notation only below 1e-6 or from 1e15); nan/None as an en dash, inf as ±∞."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "--"
    if isinstance(value, (int,)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and math.isinf(value):
        return r"$\infty$" if value > 0 else r"$-\infty$"
    if isinstance(value, float):
        if value == 0 or not 1e-6 <= abs(value) < 1e15:
            return f"{value:.{digits}g}"
        text = f"{value:.{max(0, digits - 1 - math.floor(math.log10(abs(value))))}f}"  # %g without e-notation
        return text.rstrip("0").rstrip(".") if "." in text else text
    return str(value)


def significance_marker(p: float, levels: Sequence[tuple[float, str]] = SIGNIFICANCE_LEVELS) -> str:
    """Marker of the strictest level that ``p`` is below (``"***"`` for p < 0.001), else ``""``."""
    if p is None or math.isnan(p):
        return ""
    return next((mark for bound, mark in levels if p < bound), "")


def format_p(p: float, *, digits: int = 2, floor: float = 0.001, markers: bool = False) -> str:
    """Format a p-value as ``0.042`` or ``$<$0.001`` (below ``floor``), optionally with markers."""
    if p is None or math.isnan(p):
        return "--"
    text = f"$<${floor:g}" if p < floor else f"{p:.{digits}g}" if p < 0.1 else f"{p:.{digits}f}"
    return text + (significance_marker(p) if markers else "")


def format_ci(low: float, high: float, *, digits: int = 3, percent: bool = False) -> str:
    """Format an interval as ``[low, high]``; ``percent`` multiplies by 100 and adds ``\\%``."""
    scale, unit = (100.0, r"\%") if percent else (1.0, "")
    ends = [format_number(v * scale if v is not None else None, digits) for v in (low, high)]
    return f"[{ends[0]}{unit}, {ends[1]}{unit}]"


def significance_note(levels: Sequence[tuple[float, str]] = SIGNIFICANCE_LEVELS) -> str:
    """The legend of the markers, e.g. ``* p < 0.05, ** p < 0.01, *** p < 0.001``."""
    return ", ".join(f"{mark} $p < {bound:g}$" for bound, mark in reversed(levels))


def latex_table(df: pd.DataFrame, *, caption: str, label: str, notes: Sequence[str] = (),
                column_format: str | None = None, escape: bool = True) -> str:
    """Return a complete booktabs ``table`` environment for ``df`` (its index is not printed).

    Floats are printed with three significant digits, missing values as ``--``. With
    ``escape`` the string cells, headers and caption are LaTeX-escaped; pass
    ``escape=False`` when they already hold LaTeX (math, ``\\%``). ``notes`` are LaTeX
    as given (e.g. :func:`significance_note`), set in a footnote-size paragraph under
    the tabular.
    """
    esc = escape_latex if escape else str
    styler = df.style.hide(axis="index").format(format_number, escape="latex" if escape else None)
    if escape:
        styler = styler.format_index(escape="latex", axis=1)
    columns = column_format or "".join("r" if pd.api.types.is_numeric_dtype(df[c]) else "l"
                                        for c in df.columns)
    body = styler.to_latex(column_format=columns, hrules=True, caption=esc(caption),
                           label=label, position_float="centering", environment="table")
    if notes:
        note = "\\par\\smallskip\n{\\footnotesize " + " ".join(notes) + "\\par}\n"
        body = body.replace("\\end{table}", note + "\\end{table}")
    return body
