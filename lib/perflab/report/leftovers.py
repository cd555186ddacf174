"""Template text that must never reach the built paper, found in its PDF's text page by page.

A placeholder left in a phrase ("p < x", "n = x"), a doubled preposition, an optional plural
("item(s)"), a name of the code in running text (a word with an underscore, a ``key=value``
pair), a declaration file and key cited as ``(study.yaml, questions:)``, a missing value
printed as "nan" or "None", an interval's header that does not say its level ("adj. CI"). A name the sources set in typewriter type (``\\texttt{...}``,
a file, an option, a flag) is code on purpose and is not a leftover. :func:`check` is the
paper build's last step (``rules/paper.smk``, through :func:`perflab.report.frame.check`).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Iterable

#: Each leftover's name and pattern, matched line by line on the PDF's text.
PATTERNS = {
    "placeholder p-value": re.compile(r"\bp\s*[<=>]\s*x\b"),
    "placeholder sample size": re.compile(r"\bn\s*=\s*x\b"),
    "placeholder numbers": re.compile(r"\[x per\b"),
    "doubled preposition": re.compile(r"\b(?:versus|vs\.?) against\b"),
    "optional plural": re.compile(r"\w\(s\)"),
    "code identifier": re.compile(r"\b[A-Za-z]+_[A-Za-z_]+\b"),
    "parameter as key=value": re.compile(r"\b[a-z]+=[\w.]+"),
    "declaration file": re.compile(r"study\.yaml|\(\S+\.ya?ml, \w+:\)"),
    "missing value": re.compile(r"\b(?:nan|NaN)\b|\bNone\b(?! of\b)"),
    "interval without its level": re.compile(r"\badj\. CI\b"),
}

#: ``\texttt{...}`` in a LaTeX source, its text (no nested braces).
_TYPEWRITER = re.compile(r"\\texttt\{([^{}]*)\}")


def typewriter(sources: Iterable[str | Path]) -> set[str]:
    """The words the LaTeX ``sources`` set in typewriter type (``\\texttt{rbd\\_cache}`` gives ``rbd_cache``)."""
    words: set[str] = set()
    for path in sources:
        for text in _TYPEWRITER.findall(Path(path).read_text(errors="replace")):
            words.update(text.replace("\\_", "_").replace("\\", "").split())
    return words


def find(text: str, allowed: Iterable[str] = ()) -> list[str]:
    """Each leftover of :data:`PATTERNS` in ``text`` (a PDF's text), named with the line it is on; a match that is
    part of a word of ``allowed`` (code set in typewriter type) is not one."""
    allowed = set(allowed)
    found = []
    for line in text.splitlines():
        for name, pattern in PATTERNS.items():
            if any(not any(m[0] in word for word in allowed) for m in pattern.finditer(line)):
                found.append(f"{name}: {line.strip()[:120]}")
    return found


def pages(pdf: str | Path) -> list[str]:
    """The text of each page of ``pdf`` (``pdftotext -layout``; pages end in a form feed)."""
    run = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True)
    return run.stdout.split("\f")


def in_pdf(pdf: str | Path, sources: Iterable[str | Path] = ()) -> list[str]:
    """The leftovers of ``pdf``, each as ``page N: name: line`` (N the page of the PDF, from 1); the words the
    ``sources`` set in typewriter type are code on purpose (:func:`typewriter`)."""
    allowed = typewriter(sources)
    return [f"page {k}: {item}" for k, text in enumerate(pages(pdf), start=1) for item in find(text, allowed)]


def paper_sources(paper_dir: str | Path) -> list[Path]:
    """The LaTeX a paper is built from: every ``.tex`` under ``paper_dir`` and the studies' chapters beside it."""
    paper = Path(paper_dir)
    return sorted(paper.rglob("*.tex")) + sorted(paper.parent.glob("studies/*/chapter.tex"))


def check(pdf: str | Path = "paper/main.pdf") -> list[str]:
    """The leftovers of the built paper ``pdf`` (:func:`in_pdf` with :func:`paper_sources` of its folder)."""
    return in_pdf(pdf, paper_sources(Path(pdf).parent))
