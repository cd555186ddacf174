"""The paper's frame: what the title page, the abstract, the conclusion and the cross-study summary take from the
pipeline.

:func:`write` writes ``paper/macros/frame.tex`` (the author, institution and degree of ``config/config.yaml``, as
``\\plset{frame/author}``, ``\\plset{frame/institution}`` and ``\\plset{frame/degree}``, and the findings of
:func:`findings`) and
``paper/macros/verdicts-pending.tex``, the text the summary chapter shows while no
generated verdict table (``paper/tables/verdicts-summary.tex``) exists: the summary is
never typed by hand. :func:`undefined_citations` reads a finished LaTeX log, so that the
paper's build fails on a citation without a bibliography entry, and :func:`check` also on
template text in the finished PDF (:mod:`perflab.report.leftovers`).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..formats import config as project_config
from . import leftovers
from .latex import escape_latex, times
from .lineage import atomic_text

#: The generated table of every study's verdicts the summary chapter inputs when it exists.
VERDICTS = "tables/verdicts-summary.tex"
#: What the title page shows for a field the configuration leaves empty: a placeholder no reader can mistake.
PLACEHOLDERS = {"author": "[Author: set author in config/config.yaml]",
                "institution": "[Institution: set institution in config/config.yaml]",
                "degree": "[Degree: set degree in config/config.yaml]"}


def findings(root: str | Path = ".") -> dict[str, str]:
    """The findings the abstract and the conclusion state, as macro bodies built from the studies' generated verdict
    macros (``\\plv{<study>/verdicts/<word>}``, ``\\plv{<study>/verdict/<id>}``), never typed here:
    ``frame/findings``, the number of pre-registered questions of all studies and of each verdict (summed by TeX
    from the studies' counts) with each study's counts; ``frame/per-study``, a paragraph per study with each
    question in words, its claim, verdict and change. Before the studies' macros exist, each says the verdicts are not
    generated yet."""
    from .. import questions, study
    from ..stats.verdict import VERDICTS
    from .verdicts import word_key

    declared = []
    for s in study.discover(root, demos=False):
        qs, _ = questions.load(Path(root) / s.folder, root)
        if qs:
            declared.append((s, qs))
    if not declared:
        return {"frame/findings": "", "frame/per-study": ""}
    ready = "".join(f"\\ifcsname plv@{s.id}/verdicts/questions\\endcsname" for s, _ in declared)
    pending = "the verdicts are not generated yet (\\texttt{make reproduce} writes them)"
    closing = "\\else " + pending + "\\fi" * len(declared)

    def total(word: str) -> str:
        return "\\the\\numexpr" + "+".join(f"\\plvor{{{s.id}/verdicts/{word}}}{{0}}" for s, _ in declared) + "\\relax{}"

    counts = ", ".join(f"{total(word_key(w))} {w}" for w in VERDICTS) + f" and {total('pending')} not yet measured"
    per = "; ".join(f"{escape_latex(s.title)} (\\plv{{{s.id}/verdicts/counts}})" for s, _ in declared)
    summary = (f"{ready} Over the {len(declared)} studies, {total('questions')} questions were declared before their "
               f"data; the pipeline's verdicts are {counts}. Per study: {per}.{closing}")
    paragraphs = []
    for s, qs in declared:
        items = "\n".join(f"\\item {times(escape_latex(q.text or 'Claim ' + q.claim))} (question {escape_latex(q.id)}, claim "
                          f"{escape_latex(q.claim)}): \\plv{{{s.id}/verdict/{q.id}}}"
                          f"\\plunlesspending{{{s.id}/verdict/{q.id}}}{{, change \\plv{{{s.id}/verdict/{q.id}/change}} "
                          f"\\plv{{{s.id}/verdict/{q.id}/ci}}}}." for q in qs)
        paragraphs.append(f"\\paragraph{{{escape_latex(s.title)}.}} Its \\plv{{{s.id}/verdicts/questions}} "
                          f"questions:\n\\begin{{itemize}}\n{items}\n\\end{{itemize}}")
    per_study = (f"{ready} " + "\n\n".join(paragraphs) + f"{closing}")
    return {"frame/findings": summary, "frame/per-study": per_study}


def summary_table(root: str | Path = ".") -> str:
    """The cross-study verdict table: a row per pre-registered question of every study with its claim, expected
    outcome, change with its adjusted interval and that interval's level (each row's own: the families differ),
    SESOI, data (``rerun <campaign>`` or ``published``), testability, power at the SESOI and verdict, the numbers and the verdict printed by the study's generated
    macros (``\\plv{<study>/verdict/<id>}``), never typed here; before it, each study with questions and its
    counts of each verdict (``\\plv{<study>/verdicts/<word>}``). Set sideways, one line per question, so that
    its ten columns fit; each question's metric and contrast are in its chapter's verdict table."""
    from .. import questions, study
    from ..stats.verdict import VERDICTS
    from .verdicts import READING, sesoi_cell, word_key

    rows, counts = [], []
    for s in study.discover(root, demos=False):
        declared, _ = questions.load(Path(root) / s.folder, root)
        if declared:
            counts.append(f"\\item {escape_latex(s.title)}: \\plv{{{s.id}/verdicts/questions}} questions, "
                          + ", ".join(f"\\plv{{{s.id}/verdicts/{word_key(word)}}} {word}" for word in VERDICTS) + ".")
        for i, q in enumerate(declared):  # the study named on its first row only, so that the table fits the page
            stem = f"{s.id}/verdict/{q.id}"
            rows.append(f"{escape_latex(s.id) if i == 0 else ''} & {escape_latex(q.id)} & {escape_latex(q.claim)} & "
                        f"{escape_latex(q.expected)} & \\plv{{{stem}/change}} \\plv{{{stem}/ci}} \\plv{{{stem}/level}} & "
                        f"{sesoi_cell(q.sesoi)} & {escape_latex(q.data)} & {q.testability} & "
                        f"\\plv{{{stem}/power}} & \\plv{{{stem}}}\\\\")
    listed = ("Per study, from its verdict tables:\n\\begin{itemize}\n" + "\n".join(counts) + "\n\\end{itemize}\n"
              if counts else "")
    return ("% Generated by perflab.report.frame from the studies' questions; the verdicts are the studies' macros.\n"
            + listed + "\\begin{sidewaystable}\n\\centering\\scriptsize\\setlength{\\tabcolsep}{3pt}\n"
            "\\caption{Every pre-registered question of the five studies, the data that decide it and the verdict "
            "they give}\\label{tab:verdicts-summary}\n"
            "\\begin{tabular}{@{}llllllllll@{}}\n"
            "\\toprule\n"
            "Study & Question & Claim & Expected & Change {[}CI{]} (its level) & SESOI & Data & Testable "
            "& Power at SESOI & Verdict\\\\\n\\midrule\n"
            + "\n".join(rows) + "\n\\bottomrule\n\\end{tabular}\n"
            "\\par\\smallskip\\parbox{\\linewidth}{\\scriptsize " + READING + "}\n\\end{sidewaystable}\n")


def write(paper_dir: str | Path = "paper", config: str | Path = "config/config.yaml",
          root: str | Path = ".") -> list[Path]:
    """Write the frame's generated inputs under ``paper_dir/macros/`` (and the cross-study verdict table under
    ``paper_dir/tables/``); return their paths."""
    doc = project_config.read(config)
    fields = {key: escape_latex(str(doc.get(key) or placeholder)) for key, placeholder in PLACEHOLDERS.items()}
    fields.update(findings(root))
    macros = Path(paper_dir) / "macros"
    head = f"% Generated by perflab.report.frame from {Path(config).as_posix()} and the studies; do not edit.\n"
    return [
        atomic_text(macros / "frame.tex", head + "".join(f"\\plset{{{key if '/' in key else 'frame/' + key}}}"
                                                          f"{{{value}}}\n" for key, value in fields.items())),
        atomic_text(macros / "verdicts-pending.tex", head + "The verdicts of the studies' pre-registered questions "
                    f"are not generated yet: the pipeline writes them into \\texttt{{paper/{VERDICTS}}} from each "
                    "study's declared questions and its data (\\texttt{make reproduce}). No verdict is stated "
                    "here by hand.\n"),
        atomic_text(Path(paper_dir) / VERDICTS, summary_table(root)),
    ]


_UNDEFINED = re.compile(r"(?:LaTeX|Package biblatex) Warning: Citation '([^']+)' (?:on page \S+ )?undefined")


def undefined_citations(log: str | Path) -> list[str]:
    """The citation keys a finished LaTeX run reports as undefined (from its ``.log``), in order."""
    text = Path(log).read_text(errors="replace").replace("\n", "")  # the log wraps long lines at 79 columns
    return list(dict.fromkeys(_UNDEFINED.findall(text)))


def check(log: str | Path = "paper/main.log", pdf: str | Path | None = None) -> None:
    """The build's last step: exit with one line naming the undefined citations of the finished paper, if any, else
    with a line per template leftover in its PDF's text (``pdf``, by default the one beside ``log``, when it
    exists), with its page (:func:`perflab.report.leftovers.check`)."""
    keys = undefined_citations(log)
    if keys:
        raise SystemExit(f"{log}: {len(keys)} citation(s) without a bibliography entry: {', '.join(keys)}; "
                         "add them to paper/references.bib")
    pdf = Path(log).with_suffix(".pdf") if pdf is None else Path(pdf)
    found = leftovers.check(pdf) if pdf.exists() else []
    if found:
        raise SystemExit(f"{pdf}: {len(found)} line(s) of template text or code names reach the paper; say them in "
                         "words at their source (a chapter, a generator):\n" + "\n".join(found))
