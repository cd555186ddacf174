"""Generated LaTeX tables as HTML, for the review site: a reviewer reads the table, not its source.

Understands what :mod:`perflab.report.latex` writes (booktabs tabulars in ``\\pltabbox``,
``\\plfloat`` captions, ``\\plnote`` notes, ``\\plhead`` headers and ``\\plcell`` cells on several
lines, siunitx ``\\num``/``\\SI``/``\\qty``/``\\percent``, ``\\multicolumn``) and the inline LaTeX of
cells (math, ``\\textbf``, ``\\texttt``, escaped specials). A macro it does not know keeps its arguments' text.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

#: Macros without arguments and the text they stand for.
_SYMBOLS = {"%": "%", "&": "&", "_": "_", "#": "#", "$": "$", "{": "{", "}": "}", ",": "\u2009", ";": "\u2005",
            ":": "\u2005", "!": "", " ": " ", "\\": "\n", "textless": "<", "textgreater": ">", "times": "×",
            "textasciitilde": "~", "textasciicircum": "^", "textbackslash": "\\", "pm": "±", "le": "≤",
            "leq": "≤", "ge": "≥", "geq": "≥", "infty": "∞", "delta": "δ", "alpha": "α", "mu": "µ", "sigma": "σ",
            "chi": "χ", "eta": "η", "rho": "ρ", "approx": "≈", "cdot": "·", "dots": "…", "ldots": "…",
            "percent": "%", "degree": "°", "micro": "µ", "second": "s", "milli": "m", "bit": "bit", "byte": "B",
            "per": "/", "quad": "\u2003", "qquad": "\u2003\u2003", "neq": "≠", "to": "→", "textendash": "–",
            "textemdash": "—", "textpm": "±", "texttimes": "×", "textmu": "µ", "ensuremath": ""}
#: Macros whose arguments are dropped with them (layout only).
_DROP = {"label": 1, "cmidrule": 1, "addlinespace": 0, "toprule": 0, "midrule": 0, "bottomrule": 0,
         "centering": 0, "small": 0, "footnotesize": 0, "scriptsize": 0, "noalign": 1, "hspace": 1, "vspace": 1,
         "rule": 2, "phantom": 1, "hphantom": 1, "relax": 0, "strut": 0, "sisetup": 1, "setlength": 2,
         "FloatBarrier": 0, "allowbreak": 0, "linebreak": 0, "newline": 0, "smallskip": 0, "medskip": 0}
#: Macros wrapping their last argument in an HTML element.
_TAGS = {"textbf": "b", "mathbf": "b", "bfseries": "b", "emph": "em", "textit": "i", "mathit": "i",
         "texttt": "code", "textsuperscript": "sup", "textsubscript": "sub"}


def _group(tex: str, i: int) -> tuple[str, int]:
    """The brace group starting at ``tex[i]`` (without braces) and the index after it; a lone token otherwise."""
    while i < len(tex) and tex[i] == " ":
        i += 1
    if i >= len(tex):
        return "", i
    if tex[i] != "{":
        m = re.match(r"\\[A-Za-z]+|\\.|.", tex[i:], re.S)
        assert m is not None  # "." with DOTALL matches any character
        return m.group(0), i + m.end()
    depth = 0
    for j in range(i, len(tex)):
        if tex[j] == "\\":
            continue
        if tex[j] == "{" and (j == 0 or tex[j - 1] != "\\"):
            depth += 1
        elif tex[j] == "}" and tex[j - 1] != "\\":
            depth -= 1
            if depth == 0:
                return tex[i + 1:j], j + 1
    return tex[i + 1:], len(tex)


def _optional(tex: str, i: int) -> int:
    """Skip an optional ``[...]`` argument at ``tex[i]``."""
    if i < len(tex) and tex[i] == "[":
        end = tex.find("]", i)
        return end + 1 if end >= 0 else len(tex)
    return i


def _number(text: str) -> str:
    """A siunitx number as text: true minus, ``e`` notation as ``× 10^``."""
    text = text.strip().replace("-", "−")
    m = re.fullmatch(r"([−+]?[\d.]+)e([−+]?)0*(\d+)", text)
    if m:
        return f"{m[1]} × 10<sup>{'−' if m[2] == '−' else ''}{m[3]}</sup>"
    return html.escape(text)


def inline(tex: str, *, code: bool = False) -> str:
    """HTML for a piece of inline LaTeX (a cell, a caption, a note); ``code`` (in ``\\texttt``) keeps ``--``
    as typed."""
    out, i = [], 0
    while i < len(tex):
        c = tex[i]
        if c == "\\":
            m = re.match(r"\\([A-Za-z]+)\*?|\\(.)", tex[i:], re.S)
            assert m is not None  # a backslash and any character
            name, i = m.group(1) or m.group(2), i + m.end()
            if name in ("num", "qty", "SI", "unit", "si"):
                i = _optional(tex, i)
                args = []
                for _ in range(1 if name in ("num", "unit", "si") else 2):
                    arg, i = _group(tex, i)
                    args.append(arg)
                if name in ("unit", "si"):
                    out.append(inline(args[0]))
                else:
                    unit = inline(args[1]) if len(args) > 1 else ""
                    out.append(_number(args[0]) + ("" if not unit or unit == "%" else "\u202f") + unit)
            elif name in ("plhead", "plcell"):
                i = _optional(tex, i)
                arg, i = _group(tex, i)
                out.append("<br>".join(inline(part) for part in re.split(r"\\\\(?:\{\})?", arg)))
            elif name == "plshared":  # a note a family of tables shares: each page of the site shows it whole
                _, i = _group(tex, i)
                arg, i = _group(tex, i)
                out.append(inline(arg))
            elif name == "multicolumn":
                _, i = _group(tex, i)
                _, i = _group(tex, i)
                arg, i = _group(tex, i)
                out.append(inline(arg))
            elif name in _TAGS:
                arg, i = _group(tex, i)
                out.append(f"<{_TAGS[name]}>{inline(arg, code=code or name == 'texttt')}</{_TAGS[name]}>")
            elif name in _DROP:
                i = _optional(tex, i)
                for _ in range(_DROP[name]):
                    _, i = _group(tex, i)
            elif name in _SYMBOLS:
                out.append(html.escape(_SYMBOLS[name]))
                if name.isalpha() and tex[i:i + 2] == "{}":
                    i += 2
            elif name in ("mathrm", "text", "textrm", "operatorname", "makecell", "mbox", "textnormal", "url"):
                arg, i = _group(tex, i)
                out.append(inline(arg))
            # any other macro: its name is dropped, its argument (a following group) is kept as text
        elif c in "{}$":
            i += 1
        elif c in "_^":
            arg, i = _group(tex, i + 1)
            if re.fullmatch(r"\\[A-Za-z]+", arg):  # a macro with its argument, e.g. _\mathrm{Holm}
                rest, i = _group(tex, i)
                arg += "{" + rest + "}"
            tag = "sub" if c == "_" else "sup"
            out.append(f"<{tag}>{inline(arg)}</{tag}>")
        elif c == "~":
            out.append("&nbsp;")
            i += 1
        elif code and c == "-":
            out.append("-")
            i += 1
        elif tex.startswith("---", i):
            out.append("—")
            i += 3
        elif tex.startswith("--", i):
            out.append("–")
            i += 2
        elif c == "-" and tex[i + 1:i + 2].isdigit() and not (i and (tex[i - 1].isalnum() or tex[i - 1] in ".-")):
            out.append("−")  # a negative number's true minus
            i += 1
        elif c == "%":  # a LaTeX comment runs to the end of the line
            end = tex.find("\n", i)
            i = len(tex) if end < 0 else end + 1
        else:
            out.append(html.escape(c))
            i += 1
    return "".join(out).strip()


def _split(tex: str, sep: str) -> list[str]:
    """``tex`` split at ``sep`` outside braces (``&`` cells, ``\\\\`` rows); escaped ``\\&`` is not a separator."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(tex):
        if tex.startswith(sep, i):
            if depth == 0:
                parts.append(tex[start:i])
                start = i + len(sep)
            i += len(sep)
            continue
        if tex[i] == "\\":  # an escaped character or a macro name: never a brace or a separator
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(tex[i], 0)
        i += 1
    parts.append(tex[start:])
    return parts


def _colspan(cell: str) -> int:
    m = re.match(r"\s*\\multicolumn\{(\d+)\}", cell)
    return int(m[1]) if m else 1


def tabular(tex: str) -> str:
    """The HTML ``<table>`` of one ``tabular`` environment's body (from ``\\toprule`` on): header rows are the
    rows before ``\\midrule``."""
    rows = []
    before_mid, body = (tex.split("\\midrule", 1) + [""])[:2] if "\\midrule" in tex else ("", tex)
    for part, is_head in ((before_mid, True), (body, False)):
        for row in _split(part, "\\\\"):
            row = re.sub(r"\\(toprule|bottomrule|addlinespace)(\[[^\]]*\])?|\\cmidrule(\([^)]*\))?\{[^}]*\}", "", row)
            if not row.strip():
                continue
            tag = "th" if is_head else "td"
            cells = "".join(f"<{tag}{f' colspan={_colspan(c)}' if _colspan(c) > 1 else ''}>{inline(c)}</{tag}>"
                            for c in _split(row, "&"))
            rows.append(f"<tr>{cells}</tr>")
    return "<table class=\"tex\">" + "".join(rows) + "</table>"


@dataclass(frozen=True)
class Table:
    """One generated table: its caption, the tabular as HTML and its note (HTML)."""

    caption: str
    table: str
    note: str


def _macro_arg(tex: str, name: str) -> str:
    at = tex.find("\\" + name + "{")
    return _group(tex, at + len(name) + 1)[0] if at >= 0 else ""


def tables(tex: str) -> list[Table]:
    """Every table of a generated table file (one per ``\\plfloat``, or per plain ``tabular``)."""
    found = []
    chunks = tex.split("\\begin{lrbox}{\\pltabbox}")[1:] or [tex]
    for chunk in chunks:
        m = re.search(r"\\begin\{tabular\}(\[[^\]]*\])?", chunk)
        if not m:
            continue
        start = _group(chunk, m.end())[1]
        end = chunk.find("\\end{tabular}", start)
        found.append(Table(caption=inline(_macro_arg(chunk, "caption")), table=tabular(chunk[start:end]),
                           note=inline(_macro_arg(chunk, "plnote"))))
    return found
