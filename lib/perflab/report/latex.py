"""LaTeX tables for the paper: booktabs rules, siunitx numbers, caption, label and a note under the tabular.

Numbers are typeset by siunitx (``S`` columns aligned on the decimal marker, ``\\num``
elsewhere): true minus signs, digit grouping, no e-notation for ordinary magnitudes. A
mean is rounded to the precision of its confidence interval (:func:`ci_decimals`). Tables
are never shrunk: a table wider than the text is set as its column sets stacked upright
when each fits the text width, else turned sideways whole, caption and note with it
(``\\plfloat`` of ``paper/perflab.sty``, a ``sidewaystable``); a table of a row or two is set
transposed; a table longer than a float holds is one ``longtable`` broken across pages
(:func:`long_table`), never numbered parts. A long note several tables share is said once
(:func:`note_text`). A work a note names by author and year (:data:`WORKS`) is cited.

Text from a declaration or data (a caption, a level name, a question, a host fact) is never
LaTeX: it is escaped here, by :func:`escape_latex`, and a table's caption is escaped by
:func:`float_table` unless it is :class:`Tex` (LaTeX this package writes itself, with every
part from data escaped); a label keeps only the characters a label may hold.
"""

from __future__ import annotations

import hashlib
import math
import re
import textwrap
from typing import Iterable, Mapping, Sequence

import pandas as pd

from ..stats._input import format_p as stats_format_p, p_text

#: Significance markers, strictest first: (upper bound of p, marker).
SIGNIFICANCE_LEVELS: tuple[tuple[float, str], ...] = ((0.001, "***"), (0.01, "**"), (0.05, "*"))

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}",
}


class Tex(str):
    """LaTeX written by this package (its parts from data escaped by :func:`escape_latex`), set as it is where
    a plain ``str`` would be escaped (a table's caption)."""


def escape_latex(text: str) -> str:
    """``text`` as LaTeX that prints it (a :class:`Tex`): every special character escaped (``\\``, ``%``, braces,
    ``^`` of ``^^5c`` ...), line breaks and other control characters as spaces (a blank line would end a caption)."""
    return Tex("".join(_LATEX_SPECIALS.get(ch, " " if ch.isspace() or not ch.isprintable() else ch) for ch in text))


def times(text: str) -> str:
    """LaTeX ``text`` with an ``x`` between two numbers or words of three letters or more (a product: "4 jobs x
    iodepth 4", "numjobs x iodepth") as ``$\\times$``; "a box of x and y" keeps its x."""
    return Tex(re.sub(r"(?:(?<=\w\w\w)|(?<=\d)) x (?=\w\w\w|\d)", r" $\\times$ ", text))


def caption_text(caption: str) -> str:
    """A caption as LaTeX: a :class:`Tex` as it is, any other text escaped (:func:`escape_latex`)."""
    return caption if isinstance(caption, Tex) else escape_latex(caption)


#: What a ``\label`` keeps of a label; any other character becomes ``-``.
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9:._/+-]")


def label_text(label: str) -> str:
    """``label`` with only letters, digits and ``: . _ / + -`` (a brace or ``\\`` from data never reaches LaTeX)."""
    return _LABEL_UNSAFE.sub("-", label)


def in_prose(label: str) -> str:
    """A label inside a sentence: first letter lowercased unless the first word is an acronym (``HPL``)."""
    return label[:1].lower() + label[1:] if len(label) > 1 and not label[1].isupper() else label


def in_words(items: Sequence[str]) -> str:
    """Items as a caption says them: ``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    return " and ".join(items) if len(items) < 3 else ", ".join(items[:-1]) + " and " + items[-1]


#: Names of the code (metrics, factors, fields) a reader is given in words; any other name has its underscores read
#: as spaces (:func:`name_words`).
WORDS = {"rtt_avg": "mean round-trip time", "lat_mean": "mean latency", "bytes_per_op": "bytes per operation",
         "wire_bytes_per_op": "bytes on the wire per operation", "throughput_computed": "throughput (computed)",
         "required_n": "required sample size"}


def name_words(name: str, names: Mapping[str, str] | None = None) -> str:
    """A name of the code (``rtt_avg``, ``firewall_load``) in a reader's words: from ``names``, else :data:`WORDS`,
    else with its underscores read as spaces ("firewall load")."""
    return (names or {}).get(name) or WORDS.get(name) or name.replace("_", " ")


def level_words(label: str, names: Mapping[str, str] | None = None) -> str:
    """A level as the statistics label it (``parallel=1``, ``vm_bytes=32M``) in a reader's words: the factor's
    name from ``names`` (``{"vm_bytes": "working set"}`` gives "working set 32M"), else the factor with its
    underscores read as spaces ("vm bytes 32M"); a label without ``=`` keeps its text."""
    factor, sep, value = label.partition("=")
    if not sep:
        return label.replace("_", " ")
    return f"{name_words(factor, names)} {value}"


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
    """Format a p-value for LaTeX by the one rule of :func:`perflab.stats.format_p` (``0.042``, ``0.0499``,
    ``$<0.001$``), optionally with markers; ``digits`` and ``floor`` are kept for callers and ignored."""
    if p is None or math.isnan(p):
        return "--"
    text = stats_format_p(p)
    text = f"${text.replace(' ', '')}$" if text.startswith("<") else text
    return text + (significance_marker(p) if markers else "")


def p_phrase(p: float) -> str:
    """``$p = 0.011$`` or ``$p < 0.001$`` (``$p = --$`` when missing), for prose and notes: :func:`perflab.stats.p_text`
    in math mode."""
    return f"${p_text(p, missing='--')}$"


def plain_p_phrase(p: float) -> str:
    """``p < 0.001`` or ``p = 0.042`` (``p = --`` when missing), for prose outside math mode."""
    return p_text(p, missing="--")


def num(value: object, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits as siunitx ``\\num{...}`` (true minus sign, grouped digits);
    nan/None as an en dash, inf as ±∞."""
    text = format_number(value, digits)
    return text if text == "--" or "infty" in text else f"\\num{{{text}}}"


def ci_decimals(low: float, high: float, *, digits: int = 2) -> int | None:
    """Decimal places that show the half-width of the interval [low, high] with ``digits`` significant digits
    (negative: round to tens, hundreds); None when the interval is undefined or has no width."""
    if low is None or high is None or not all(math.isfinite(v) for v in (low, high)) or high <= low:
        return None
    return digits - 1 - math.floor(math.log10((high - low) / 2))


def fixed(value: float, decimals: int) -> str:
    """``value`` rounded to ``decimals`` places (negative: to tens, hundreds) in plain fixed notation."""
    if value is None or math.isnan(value):
        return "--"
    if math.isinf(value):
        return r"$\infty$" if value > 0 else r"$-\infty$"
    text = f"{round(value, decimals):.{max(decimals, 0)}f}"
    return text.lstrip("-") if float(text) == 0 else text


def percent_change(rel: float) -> str:
    """A relative change in percent, to three significant digits with its sign (``+0.0320 %``, never
    ``+0.0 %``), for a table cell or an inline value; nan as an en dash."""
    if rel is None or (isinstance(rel, float) and math.isnan(rel)):
        return "--"
    pct = 100 * float(rel)
    return f"\\num{{{'+' if pct > 0 else ''}{format_number(pct, 3)}}}\\,\\%"


def point_change(diff: float) -> str:
    """A difference of two shares in percentage points, to three significant digits with its sign
    (``\\num{+88.9}\\,pp``), for a table cell or an inline value; nan as an en dash."""
    if diff is None or (isinstance(diff, float) and math.isnan(diff)):
        return "--"
    return f"\\num{{{'+' if diff > 0 else ''}{format_number(float(diff), 3)}}}\\,pp"


def format_ci(low: float, high: float, *, digits: int = 3, percent: bool = False, decimals: int | None = None) -> str:
    """Format an interval as ``[\\num{low}, \\num{high}]`` (``decimals`` places, else ``digits`` significant
    digits); ``percent`` multiplies by 100 and adds ``\\,\\%`` (a thin space, as every percent); an undefined end is an
    en dash."""
    scale, unit = (100.0, r"\,\%") if percent else (1.0, "")
    ends = []
    for v in (low, high):
        end = None if v is None or (isinstance(v, float) and math.isnan(v)) else v * scale
        text = num(end, digits) if decimals is None or end is None else f"\\num{{{fixed(end, decimals)}}}"
        ends.append(text + (unit if end is not None else ""))
    return f"[{ends[0]}, {ends[1]}]"


def level_text(level: float) -> str:
    """A confidence level as LaTeX percent, to four significant digits: ``95\\,\\%`` for 0.95, ``99.17\\,\\%`` for
    0.991667 (a Bonferroni-adjusted level)."""
    return f"{100 * level:.4g}\\,\\%"


def level_range(levels: Iterable[float]) -> str:
    """The confidence levels of a column's intervals as its header says them: the one level (``97.5\\,\\%``), or
    the lowest and the highest (``97.5--99.17\\,\\%``) when the rows differ (a note then says which row has which)."""
    known = sorted({round(float(v), 6) for v in levels})
    if not known:
        return ""
    low, high = known[0], known[-1]
    return level_text(low) if low == high else f"{100 * low:.4g}--{level_text(high)}"


def significance_note(levels: Sequence[tuple[float, str]] = SIGNIFICANCE_LEVELS) -> str:
    """The legend of the markers, e.g. ``* p < 0.05, ** p < 0.01, *** p < 0.001``."""
    return ", ".join(f"{mark} $p < {bound:g}$" for bound, mark in reversed(levels))


def header(*lines: str) -> str:
    """A column header set on several lines (``\\plhead`` of ``perflab.sty``), to keep a table narrow."""
    # "{}" after the line break: a line starting with "[" is text, not the break's optional skip.
    return "\\plhead{" + "\\\\{}".join(lines) + "}" if len(lines) > 1 else lines[0]


def cell(*lines: str, align: str = "r") -> str:
    """A table cell set on several lines (``\\plcell`` of ``perflab.sty``), its first line on the row's
    baseline, e.g. a mean above its interval; ``align`` is ``r`` or ``l``; one line is returned as it is."""
    lines = tuple(line for line in lines if line)
    if len(lines) < 2:
        return lines[0] if lines else ""
    return f"\\plcell{'[l]' if align == 'l' else ''}{{" + "\\\\{}".join(lines) + "}"


def wrapped(text: str, width: int = 20, *, mark: str = "") -> str:
    """Plain ``text``, escaped, as a left-aligned :func:`cell` of lines of at most ``width`` characters
    (broken at spaces only), ``mark`` (LaTeX) after its last line: a long verdict or status that would
    make its table too wide to stand upright."""
    lines = [escape_latex(line) for line in textwrap.wrap(text, width, break_long_words=False,
                                                          break_on_hyphens=False)] or [""]
    lines[-1] += mark
    return cell(*lines, align="l")


_PLAIN_NUMBER = re.compile(r"^(-?)(\d*)(?:\.(\d+))?$")


def _is_number(text: str) -> bool:
    """Whether ``text`` reads as a finite number (e.g. ``1.5e+20``), which ``\\num`` can typeset."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def s_column(cells: Sequence[str]) -> str | None:
    """``S[table-format=...]`` for cells that are plain numbers (others, e.g. ``--``, are braced), or None."""
    parts = [_PLAIN_NUMBER.match(c) for c in cells]
    numbers = [m for m in parts if m and (m[2] or m[3])]
    if not numbers:
        return None
    sign = "-" if any(m[1] for m in numbers) else ""
    whole = max(len(m[2]) or 1 for m in numbers)
    frac = max(len(m[3] or "") for m in numbers)
    return f"S[table-format={sign}{whole}" + (f".{frac}]" if frac else "]")


def _columns(df: pd.DataFrame, *, escape: bool, align: Sequence[str]) -> tuple[list[str], list[str], list[list[str]]]:
    """The column specs, headers and rows of cells of ``df`` as :func:`tabular` sets them."""
    esc = escape_latex if escape else str
    specs, heads, columns = [], [], []
    for col in df.columns:
        values = df[col].tolist()
        numeric = pd.api.types.is_numeric_dtype(df[col]) and not pd.api.types.is_bool_dtype(df[col])
        texts = [format_number(v) if numeric else esc(str(v)) for v in values]
        spec = s_column(texts) if numeric or col in align else None
        if spec:
            texts = [t if _PLAIN_NUMBER.match(t) and t not in ("", "-") else
                     f"{{\\num{{{t}}}}}" if _is_number(t) else f"{{{t}}}" for t in texts]
        else:  # a plain number in a text column is set by \num as in an S column: a true minus, grouped digits
            texts = [f"\\num{{{t}}}" if _PLAIN_NUMBER.match(t) and t not in ("", "-") and _is_number(t) else t
                     for t in texts]
        specs.append(spec or ("r" if numeric else "l"))
        heads.append(f"{{{esc(str(col))}}}" if spec else esc(str(col)))
        columns.append(texts)
    return specs, heads, [[texts[i] for texts in columns] for i in range(len(df))]


def tabular(df: pd.DataFrame, *, column_format: str | None = None, escape: bool = True,
            align: Sequence[str] = ()) -> str:
    """A booktabs ``tabular`` of ``df`` (index not printed).

    Float columns are printed with three significant digits; columns of plain numbers (floats, integers,
    or text such as ``"-0.5"`` in the columns named by ``align``) become siunitx ``S`` columns aligned on
    the decimal marker; a plain number in another column is set by ``\\num`` (a true minus, digits grouped from
    five). With ``escape`` string cells and headers are LaTeX-escaped.
    """
    specs, heads, rows = _columns(df, escape=escape, align=align)
    lines = [f"\\begin{{tabular}}{{{column_format or ''.join(specs)}}}", "\\toprule", " & ".join(heads) + " \\\\",
             "\\midrule", *(" & ".join(row) + " \\\\" for row in rows), "\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines)


#: What the foot of a long table's page says when the table goes on (:func:`longtable`).
CONTINUED = "continued on the next page"


def longtable(df: pd.DataFrame, *, caption: str, label: str = "", column_format: str | None = None,
              escape: bool = True, align: Sequence[str] = (), colsep: str = "") -> str:
    """``df`` as one ``longtable`` (cells as :func:`tabular` sets them): broken across pages, its header repeated
    under the caption and "(continued)" on every page after the first, "continued on the next page" at the foot
    of every page but the last. ``caption`` is LaTeX (:func:`caption_text`); without ``label`` the table takes the
    number of the table before it (a column set of the same table, its caption said as continued)."""
    specs, heads, rows = _columns(df, escape=escape, align=align)
    head = ["\\toprule", " & ".join(heads) + " \\\\", "\\midrule"]
    first = f"\\caption{{{caption}}}\\label{{{label_text(label)}}}" if label else f"\\caption[]{{{caption} (continued)}}"
    again = "" if label else "\\addtocounter{table}{-1}"  # the longtable steps the counter: back to the table's number
    lines = [f"{colsep}{again}\\begin{{longtable}}{{{column_format or ''.join(specs)}}}", first + " \\\\", *head,
             "\\endfirsthead", f"\\caption[]{{{caption} (continued)}} \\\\", *head, "\\endhead",
             f"\\midrule\\multicolumn{{{len(heads)}}}{{r@{{}}}}{{\\footnotesize {CONTINUED}}} \\\\", "\\endfoot",
             "\\bottomrule", "\\endlastfoot", *(" & ".join(row) + " \\\\" for row in rows), "\\end{longtable}"]
    return "\n".join(lines)


def long_table(df: pd.DataFrame, *, caption: str, label: str, note: str = "", column_format: str | None = None,
               escape: bool = True, align: Sequence[str] = (), column_sets: Sequence[Sequence[str]] = (),
               colsep: str = "") -> str:
    """A table longer than a page as one :func:`longtable` (``\\pllong`` of ``paper/perflab.sty``): the whole
    when it fits the text width, else its ``column_sets`` one after another under one number (each a longtable,
    the later ones' captions said as continued); ``note`` (LaTeX) under it, works it names cited."""
    cap = caption_text(caption)
    sets = "\n".join(longtable(df[list(cols)], caption=cap, label=label if k == 0 else "", escape=escape,
                               align=align, colsep=colsep) for k, cols in enumerate(column_sets))
    whole = longtable(df, caption=cap, label=label, column_format=column_format, escape=escape, align=align,
                      colsep=colsep)
    note = f"\\plnote{{{cite_works(note)}}}" if note else ""
    return (f"\\begin{{lrbox}}{{\\pltabbox}}{colsep}{tabular(df, column_format=column_format, escape=escape, align=align)}"
            f"\\end{{lrbox}}%\n\\pllong{{{whole}}}\n{{{sets}}}\n{{{note}}}\n")


#: Rows a generated table holds as a float; a longer one is a :func:`long_table` (fewer rows when its rows stand on
#: several lines: :data:`LINES_PER_FLOAT` lines).
ROWS_PER_FLOAT = 24


#: Lines of rows a generated float holds when its rows stand on several lines (:func:`cell`): what fits an upright
#: page with its header and note (a float is never broken across pages).
LINES_PER_FLOAT = 40


def row_lines(df: pd.DataFrame) -> int:
    """The most lines a row of ``df`` stands on: 1, or the lines of its tallest :func:`cell`."""
    return 1 + max((str(v).count("\\\\{}") for v in df.to_numpy().ravel()), default=0)


def float_rows(df: pd.DataFrame) -> int:
    """The most rows of ``df`` a float holds (:data:`ROWS_PER_FLOAT`, fewer for rows of several lines)."""
    return min(ROWS_PER_FLOAT, max(1, LINES_PER_FLOAT // row_lines(df)))


#: Works generated text names (e.g. a test's reason) and their keys in ``paper/references.bib``.
WORKS = {"Delacre et al. 2017": "delacre2017"}


def cite_works(text: str) -> str:
    """``text`` with each work of :data:`WORKS` it names followed by its citation, e.g. ``Delacre et al.~\\cite{...}``."""
    for name, key in WORKS.items():
        author, year = name.rsplit(" ", 1)
        cited = f"{author}~\\cite{{{key}}}"  # a literal backslash, escaped again for re.sub's template
        text = re.sub(rf"{re.escape(author)},? {year}", cited.replace("\\", "\\\\"), text)
    return text


def float_table(body: str, *, caption: str, label: str, note: str = "", column_sets: Sequence[str] = ()) -> str:
    """A generated table around the tabular ``body`` (LaTeX as given, like ``note``) with ``caption`` (plain text,
    escaped, or :class:`Tex`: :func:`caption_text`) and ``label`` (:func:`label_text`).

    ``note`` is set under the tabular as a footnote-size paragraph (``\\plnote``). The
    tabular is set at its own size, never shrunk below the body font; ``\\plfloat``
    (``paper/perflab.sty``) puts it in a ``table`` when it fits the text width; else ``column_sets``
    (the same table split into narrower tabulars) stacked upright when each fits the text width;
    else in a ``sidewaystable`` (caption and note turned with it), the column sets stacked there
    only when it is wider than the page even sideways. Works the note names are cited
    (:func:`cite_works`).
    """
    sets = "\\par\\medskip\n".join(f"\\begin{{plfit}}{s}\\end{{plfit}}" for s in column_sets)
    note = f"\\plnote{{{cite_works(note)}}}" if note else ""
    return (f"\\begin{{lrbox}}{{\\pltabbox}}{body}\\end{{lrbox}}%\n"
            f"\\plfloat{{\\caption{{{caption_text(caption)}}}\\label{{{label_text(label)}}}}}\n"
            f"{{{note}}}\n{{{sets}}}\n")


#: A note of a table at least this long is said once for the tables that share it (:func:`note_text`).
SHARED_NOTE = 200


def note_text(notes: Sequence[str]) -> str:
    """A table's ``notes`` (LaTeX) as one paragraph, each note of at least :data:`SHARED_NOTE` characters set by
    ``\\plshared`` (``paper/perflab.sty``): in full under the first table that has it, "as in the note to Table N"
    under every later one (said once for several such notes in a row), so that a family of tables says its common
    notes once."""
    return " ".join(f"\\plshared{{{hashlib.sha1(n.encode()).hexdigest()[:12]}}}{{{n}}}" if len(n) >= SHARED_NOTE
                    else n for n in notes if n)


#: A table of at most this many rows and more than :data:`SHORT_COLUMNS` columns is set transposed
#: (a row per column), so that it fits upright instead of being turned sideways for a row or two.
SHORT_ROWS = 2
SHORT_COLUMNS = 4


def _transposed(df: pd.DataFrame, *, escape: bool) -> pd.DataFrame:
    """``df`` turned: its first column's values head the columns, each other column becomes a row (its name
    first); plain numbers are set by ``\\num`` (true minus), the rest as it was."""
    esc = escape_latex if escape else str
    first, rest = df.columns[0], list(df.columns[1:])
    heads = [esc(str(first))] + [esc(str(v)) for v in df[first]]
    rows = []
    for col in rest:
        cells = []
        for v in df[col]:
            text = format_number(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else esc(str(v))
            cells.append(f"\\num{{{text}}}" if _PLAIN_NUMBER.match(text) and text not in ("", "-") else text)
        rows.append([esc(str(col)), *cells])
    return pd.DataFrame(rows, columns=pd.Index(heads)).astype(str)


def _names_rows(df: pd.DataFrame) -> bool:
    """Whether ``df``'s first column can head the columns of its transposed table: a name in every row, no two
    alike (a group's name printed once, blank below it, would head a column with nothing)."""
    names = [str(v).strip() for v in df[df.columns[0]]]
    return all(names) and len(set(names)) == len(names)


#: A table of at most this many rows and more than :data:`SPLIT_COLUMNS` columns, given no column sets,
#: gets two (:func:`auto_column_sets`): used only when the whole is wider than the text, so that it
#: stays upright when each half fits (two halves of a longer table would not fit one page).
SPLIT_ROWS = 12
SPLIT_COLUMNS = 6


def auto_column_sets(df: pd.DataFrame, align: Sequence[str] = ()) -> list[list[str]]:
    """Two column sets of ``df``: its leading text columns (the row's names, at most three) with each half
    of the others; none when fewer than four columns are left to split."""
    keys = []
    for col in df.columns[:3]:
        texts = [str(v) for v in df[col]]
        if col in align or pd.api.types.is_numeric_dtype(df[col]) or all(_is_number(t) for t in texts if t):
            break
        keys.append(col)
    rest = [c for c in df.columns if c not in keys]
    if not keys or len(rest) < 4:
        return []
    half = (len(rest) + 1) // 2
    return [keys + rest[:half], keys + rest[half:]]


#: The space between two columns of a ``narrow`` table (LaTeX's default is 6pt on each side).
NARROW_COLSEP = "4pt"


def latex_table(df: pd.DataFrame, *, caption: str, label: str, notes: Sequence[str] = (),
                column_format: str | None = None, escape: bool = True, align: Sequence[str] = (),
                column_sets: Sequence[Sequence[str]] = (), narrow: bool = False, float_most: int | None = None) -> str:
    """Return a complete generated table for ``df`` (its index is not printed), see :func:`float_table`.

    A table of one or two rows and many columns but no column sets is set transposed
    (:func:`_transposed`), upright, when its first column names each row (:func:`_names_rows`).
    A table of more rows than a float holds (``float_most``, by default :func:`float_rows`) is one
    :func:`long_table`, broken across pages with its header repeated, never cut into numbered parts.
    A table wider than the text is set as its ``column_sets`` (the columns of narrower tabulars,
    stacked) when each of them fits the text width, else turned sideways whole (the sets stacked
    there only when it is wider than the page even sideways). Cells are formatted by :func:`tabular` (``align``
    names text columns of plain numbers to align on the decimal marker); ``narrow`` sets the columns
    :data:`NARROW_COLSEP` apart on each side, for a table of many columns to stand upright. With ``escape`` the
    string cells and headers are LaTeX-escaped; pass ``escape=False`` when they
    already hold LaTeX (math, ``\\%``). The caption is plain text whatever ``escape`` says, escaped by
    :func:`float_table` (a :class:`Tex` caption is set as it is). ``notes`` are LaTeX as given (e.g.
    :func:`significance_note`), set as one justified footnote-size paragraph under the
    tabular (``\\plnote``).
    """
    colsep = f"\\setlength{{\\tabcolsep}}{{{NARROW_COLSEP}}}" if narrow else ""
    if len(df) > (float_most or float_rows(df)):
        return long_table(df, caption=caption, label=label, note=note_text(notes), column_format=column_format,
                          escape=escape, align=align, column_sets=column_sets, colsep=colsep)
    if not column_sets and SHORT_ROWS < len(df) <= SPLIT_ROWS and len(df.columns) > SPLIT_COLUMNS:
        column_sets = auto_column_sets(df, align)
    if len(df) <= SHORT_ROWS and len(df.columns) > SHORT_COLUMNS and not column_sets and _names_rows(df):
        transposed = _transposed(df, escape=escape)
        return float_table(tabular(transposed, escape=False), caption=caption, label=label,
                           note=note_text(notes))
    sets = [colsep + tabular(df[list(cols)], escape=escape, align=align) for cols in column_sets]
    return float_table(colsep + tabular(df, column_format=column_format, escape=escape, align=align),
                       caption=caption, label=label, note=note_text(notes), column_sets=sets)
