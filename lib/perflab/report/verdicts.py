"""A study's pre-registered questions decided and laid out the same way in every chapter.

For each question of :mod:`perflab.questions`, the rows of its campaign's tidy table are
selected (its primary metric, its ``select`` and ``within`` levels, one value per sample)
and :func:`perflab.stats.verdict.decide` decides it (a question on a published table:
:func:`perflab.stats.verdict.decide_summary`); this module writes the verdict table (what
each question asks: claim, contrast, expected outcome, testability and the data that decide
it; what the data answer: n, change with its adjusted interval, SESOI, p, TOST p, power at
the SESOI and the verdict), the deviations table and the macros a chapter's prose and the
cross-study summary use for every verdict word (``\\plv{<study>/verdict/<question>}``), so
no verdict is typed by hand.
"""

from __future__ import annotations

import re

from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

from .. import questions as qmod
from ..stats import StatsInputError
from ..stats.levels import select_rows
from ..stats.noise import Adjusted, steal_adjusted
from ..stats.verdict import VERDICTS, Decision, decide, decide_summary
from . import latex, lineage, macros

#: The verdict macro of a question whose campaign has no data yet (counted as ``pending``), and its note's start.
PENDING = "not yet measured"
NO_DATA = "no data of"
#: The verdict table's three column sets, the same in every chapter, each narrow enough to stand upright on
#: the text width: what each question asks, the data that decide it, then what they answer (the question's id
#: in each).
ASKED = ("Question", "Claim", "Contrast", "Expected")
DATA = ("Question", "Testable", "Data", "n", "SESOI", latex.header("Power", "at SESOI"))
ANSWERED = ("Question", latex.header("Change", "{[}CI{]}", "s: steal-adj."), latex.header("p", "(adj.)"),
            latex.header("TOST", "p"), "Verdict")
COLUMNS = ASKED + DATA[1:] + ANSWERED[1:]
#: How a verdict table reads its verdict words (minimum-effect semantics, ``docs/statistics.md``).
BRIEF = ("Verdicts (minimum-effect, family-adjusted): supported, the interval lies beyond the SESOI in the expected "
         "direction; direction only, beyond 0 but not the SESOI; contradicted, TOST inside $\\pm$SESOI or the interval on "
         "the other side (expected equivalent: outside $\\pm$SESOI); equivalent, TOST; otherwise inconclusive; not "
         "testable here, the lab lacks the claim's mechanism and the change is a finding about the lab. Power: at the "
         "SESOI for the n used.")
#: What the cross-study summary says about reading a verdict: :data:`BRIEF`, the power and the data.
READING = ("Change: relative difference of the means with its interval, Bonferroni-adjusted over the question's "
           "family, at the level in brackets. " + BRIEF + " It is the power of the question's test at the spread measured (directional: to show the change "
           "beyond the SESOI when it is twice it; equivalence: TOST at no change). Data: a rerun's campaign, or the "
           "seed's published summaries.")


def word_key(word: str) -> str:
    """The macro key of a verdict word's count (``direction only`` -> ``direction-only``)."""
    return word.replace(" ", "-")
#: The mark of a verdict whose word changes when the comparison is adjusted for the steal (:mod:`perflab.stats.noise`).
SENSITIVE = "sensitive to platform noise"


def question_rows(df: pd.DataFrame, q: qmod.Question) -> tuple[pd.DataFrame, str]:
    """One row per measured sample of ``q``'s primary metric at its ``within`` levels; the value column."""
    sel = select_rows(df, q.metric, q.select or None, per_run=q.per_run, source=q.campaign)
    data = sel.data
    for factor, level in q.within.items():
        data = data[data[factor].astype(str) == level]
    if data.empty:
        raise StatsInputError(f"{q.campaign}, question {q.id}", f"samples at {q.within}", "none",
                              "Check the question's within: levels against the campaign's factors.")
    return data, sel.value


def evaluate(study_dir: str | Path, root: str | Path, table: Callable[[str], pd.DataFrame | None]
             ) -> list[tuple[qmod.Question, Decision | None, str]]:
    """Decide every question of a study; ``table(campaign)`` gives a campaign's tidy table (None: no data yet);
    a question on a published table is decided from its summaries (:func:`perflab.stats.verdict.decide_summary`).

    A question without data, or whose data cannot be analysed, gets no decision and a note.
    """
    declared, _ = qmod.load(study_dir, root)
    out: list[tuple[qmod.Question, Decision | None, str]] = []
    for q in declared:
        if q.published:
            rows = qmod.published_rows(Path(root), q.published, q.item)
            a, b = ((float(rows[g]["mean"]), float(rows[g]["sd"]), int(rows[g]["n"])) for g in (q.baseline, q.versus))
            try:
                d = decide_summary(a, b, expected=q.expected, sesoi=q.sesoi, alpha=q.alpha,
                                   m=qmod.family_size(declared, q), testable=q.testability)
            except StatsInputError as exc:
                out.append((q, None, str(exc)))
                continue
            out.append((q, d, "; ".join(d.notes)))
            continue
        df = table(q.campaign)
        if df is None:
            out.append((q, None, f"{NO_DATA} {q.campaign} yet"))
            continue
        try:
            data, value = question_rows(df, q)
            d = decide(data, value=value, factor=q.factor, a=q.baseline, b=q.versus, expected=q.expected,
                       sesoi=q.sesoi, alpha=q.alpha, m=qmod.family_size(declared, q), test=q.test,
                       testable=q.testability)
        except StatsInputError as exc:
            out.append((q, None, str(exc)))
            continue
        out.append((q, d, "; ".join(d.notes)))
    return out


def sensitivity(results: list[tuple[qmod.Question, Decision | None, str]], table: Callable[[str], pd.DataFrame | None]
                ) -> dict[str, Adjusted]:
    """The pre-registered steal-adjusted comparison (:func:`perflab.stats.noise.steal_adjusted`) of every decided
    question whose campaign's samples carry their steal, by question id (the others are left out)."""
    out: dict[str, Adjusted] = {}
    for q, d, _ in results:
        df = None if d is None or q.published else table(q.campaign)
        if d is None or df is None:
            continue
        try:
            data, value = question_rows(df, q)
            adj = steal_adjusted(data, d, value=value, factor=q.factor, a=q.baseline, b=q.versus, expected=q.expected,
                                 alpha=q.alpha)
        except StatsInputError:
            continue
        if adj is not None:
            out[q.id] = adj
    return out


#: A number of a note (a p-value, an n); a number that is part of a name (``pfsense-confirm-64``, ``Q8``) is not one.
_NUMBER = re.compile(r"(?<![\w-])\d+(?:\.\d+)?(?![\w-])")


def _grouped(notes: list[tuple[str, str]]) -> str:
    """Notes per question, said once for the questions they share: ``Q1, Q2: text``; notes that differ only
    in their numbers (a p-value, an n) are one note, each number that differs said per question where it stands
    (``p = 0.002 in Q5 and 0.003 in Q7``, ``40 in Q6 and Q8 and 154 in Q10``)."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for qid, text in notes:
        groups.setdefault(_NUMBER.sub("#", text), []).append((qid, text))
    said = []
    for members in groups.values():
        ids = ", ".join(qid for qid, _ in members)
        numbers = [_NUMBER.findall(text) for _, text in members]
        words = []
        for at in zip(*numbers):
            where: dict[str, list[str]] = {}  # each value with the questions it is of, in order
            for n, (qid, _) in zip(at, members):
                where.setdefault(n, []).append(qid)
            words.append(at[0] if len(where) == 1 else
                         latex.in_words([f"{n} in {latex.in_words(ids)}" for n, ids in where.items()]))
        pieces = _NUMBER.split(members[0][1])  # the text around its numbers, a number's words between two pieces
        said.append(f"{ids}: " + "".join(p + (words[k] if k < len(words) else "") for k, p in enumerate(pieces)))
    return "; ".join(said)


#: Questions a verdict table holds as a float: its rows are two lines high and its three column sets stacked, so
#: more than this with the notes would run past the page; a longer one breaks across pages.
VERDICT_ROWS = 4


def table_tex(study: str, results: list[tuple[qmod.Question, Decision | None, str]], *, caption: str,
              label: str, adjusted: Mapping[str, Adjusted] | None = None) -> str:
    """The verdict table: one row per question, in declaration order; upright as its three column sets
    (:data:`ASKED`, :data:`DATA`, :data:`ANSWERED`) when the whole is wider than the text. More than :data:`VERDICT_ROWS`
    questions are one long table broken across pages (:func:`perflab.report.latex.long_table`). ``adjusted`` (by
    question id, :func:`sensitivity`) fills the steal-adjusted column and marks a verdict whose word changes under it."""
    adjusted = adjusted or {}
    rows = []
    for q, d, _ in results:
        where = ", ".join(f"{latex.name_words(k)} = {v}" for k, v in q.within.items())
        adj = adjusted.get(q.id)
        change = (latex.cell(latex.percent_change(d.rel_diff), latex.format_ci(d.ci_low, d.ci_high, percent=True),
                             f"s: {latex.percent_change(adj.rel_diff)}" if adj else "") if d else "--")
        word = latex.cell(f"\\plv{{{study}/verdict/{q.id}}}" + ("$^\\dagger$" if adj and adj.sensitive else ""),
                          f"({latex.escape_latex(adj.verdict)})" if adj and adj.sensitive else "", align="l")
        rows.append(dict(zip(COLUMNS, (
            latex.escape_latex(q.id), latex.escape_latex(q.claim),
            latex.cell(latex.escape_latex(f"{q.item or latex.name_words(q.metric)}: {latex.name_words(q.factor)} "
                                          f"{q.versus} vs {q.baseline}"),
                       latex.escape_latex(f"({where})") if where else "", align="l"),
            latex.escape_latex(q.expected),
            q.testability, latex.escape_latex(q.data), f"{d.n_a}/{d.n_b}" if d else "0", sesoi_cell(q.sesoi), power_cell(d),
            change, latex.format_p(d.p_adjusted) if d else "--", latex.format_p(d.tost_p) if d else "--",
            word))))
    body = pd.DataFrame(rows, columns=list(COLUMNS))
    notes = ["Each question was declared before its campaign's data, or after the seed study's published summaries "
             "it is decided from; a later change is in the deviations table. Change: relative difference of the means, "
             "the compared level against the baseline; the test is the "
             "blocked analysis (paired $t$ on block differences) unless noted; interval and $p$ are "
             "Bonferroni-adjusted over the question's family (every look at one claim); TOST: two one-sided tests "
             "within $\\pm$SESOI at $\\alpha$/m. " + BRIEF + " s: the change adjusted for steal, the pre-registered "
             "sensitivity analysis of every blocked question: the block differences regressed on the blocks' steal "
             "difference (OLS; the intercept, relative to the baseline's mean; its interval at the same adjusted level "
             f"is in the chapter's values); $^\\dagger$: {SENSITIVE}, the verdict word the adjustment gives in "
             "brackets; no s: not decided by the blocked analysis, or no steal recorded."]
    untestable = _grouped([(q.id, f"{q.testable.value}, {q.testable.reason}")
                           for q, _, _ in results if q.testable and q.testable.value != "yes"])
    if untestable:
        notes.append("Testability: " + latex.escape_latex(untestable) + ".")
    secondary = _grouped([(q.id, ", ".join(map(latex.name_words, q.secondary))) for q, _, _ in results if q.secondary])
    if secondary:
        notes.append("Secondary metrics (reported in the chapter's tables, not decided): "
                     + latex.escape_latex(secondary) + ".")
    extra = _grouped([(q.id, n) for q, _, n in results if n])
    if extra:
        notes.append(latex.escape_latex(extra) + ".")
    head, level_note = _change_head([(q.id, d) for q, d, _ in results if d is not None])
    if level_note:
        notes.insert(1, level_note)
    body = body.rename(columns={ANSWERED[1]: head})
    answered = [head if c == ANSWERED[1] else c for c in ANSWERED]
    return latex.latex_table(body, caption=caption, label=label, escape=False, column_format="llllllrrrrrrl",
                             notes=notes, column_sets=[list(ASKED), list(DATA), answered], float_most=VERDICT_ROWS)


def _change_head(decided: list[tuple[str, Decision]]) -> tuple[str, str]:
    """The change column's header, naming the level of its family-adjusted intervals: ``[99.5 % CI]`` when the
    table's questions share one; when they do not, their range (``[97.5--99.17 % CI]``) and a note naming each
    question's level ("" when they share one)."""
    by_level: dict[float, list[str]] = {}
    for qid, d in decided:
        by_level.setdefault(round(d.ci_level, 6), []).append(qid)
    if not by_level:
        return ANSWERED[1], ""
    head = latex.header("Change", f"{{[}}{latex.level_range(by_level)} CI{{]}}", "s: steal-adj.")
    if len(by_level) == 1:
        return head, ""
    return head, "Levels of the adjusted intervals (Bonferroni over each question's family): " + "; ".join(
        f"{', '.join(ids)}: {latex.level_text(at)}" for at, ids in by_level.items()) + "."


def sesoi_cell(sesoi: float) -> str:
    """A SESOI as the tables print it: ``±5 %``."""
    return f"$\\pm$\\num{{{100 * sesoi:g}}}\\,\\%"


def power_cell(d: Decision | None) -> str:
    """The power at the SESOI as the tables print it (two decimals), ``--`` without a decision or a spread."""
    return f"{d.power:.2f}" if d is not None and d.power == d.power else "--"


#: A name of the code in a declaration's free text (``required_n``), said in words in a table.
_CODE_NAME = re.compile(r"\b[a-z]+_[a-z_]+\b")


def deviations_tex(devs: list[qmod.Deviation], *, caption: str, label: str) -> str:
    """The deviations table: every change of a question after its data existed, with its reason (one row for the
    questions one change was made to; names of the code in words, :func:`perflab.report.latex.name_words`)."""
    said: dict[tuple[str, str], list[str]] = {}  # one row per change, naming every question it was made to
    for r in qmod.deviation_rows(devs) or [{"question": "--", "field": "--", "reason": "none declared"}]:
        said.setdefault((r["field"], r["reason"]), []).append(r["question"])
    body = pd.DataFrame([{"Question": latex.escape_latex(", ".join(ids)),
                          "Field": latex.escape_latex(latex.name_words(field)),
                          "Reason": latex.escape_latex(_CODE_NAME.sub(lambda m: latex.name_words(m[0]), reason))}
                         for (field, reason), ids in said.items()])
    return latex.latex_table(body, caption=caption, label=label, escape=False, column_format="llp{9cm}")


def noise_sentence(results: list[tuple[qmod.Question, Decision | None, str]], adjusted: Mapping[str, Adjusted]) -> str:
    """What the steal adjustment did to a study's verdicts, in one or two sentences for its chapter."""
    if not adjusted:
        return ("No question could be adjusted for the hypervisor's steal (its samples carry no steal, or it is "
                "not decided by the blocked analysis).")
    said = [f"{q.id} ({d.verdict}; adjusted {latex.percent_change(adjusted[q.id].rel_diff)}, "
            f"{adjusted[q.id].verdict})" for q, d, _ in results if d and q.id in adjusted and adjusted[q.id].sensitive]
    head = (f"Adjusted for the within-block difference of the hypervisor's steal (the pre-registered sensitivity "
            f"analysis of {len(adjusted)} blocked question{'s' if len(adjusted) != 1 else ''}), ")
    if not said:
        return head + "no verdict changes its word."
    return head + f"{len(said)} verdict{'s' if len(said) != 1 else ''} change{'' if len(said) != 1 else 's'} " \
        f"its word and {'are' if len(said) != 1 else 'is'} {SENSITIVE}: " + "; ".join(said) + "."


def values(study: str, results: list[tuple[qmod.Question, Decision | None, str]], *,
           adjusted: Mapping[str, Adjusted] | None = None) -> dict[str, str]:
    """Macros: ``<study>/verdict/<id>`` (the verdict word, or "not yet measured" before its campaign's data),
    ``.../change``, ``.../ci``, ``.../level`` (the interval's level in brackets, empty without data), ``.../p``, ``.../n``, ``.../power`` per question, ``<study>/verdicts/<word>``
    counts (:func:`word_key`; ``pending`` for the questions without data) and ``<study>/verdicts/counts``, the
    counts that are not 0 in words ("3 not testable here, 1 supported"), so that prose lists every verdict word. With ``adjusted`` (:func:`sensitivity`), per question
    ``.../adjusted``, ``.../adjusted/ci``, ``.../adjusted/verdict`` (-- where not adjusted) and
    ``.../sensitive`` (the mark or nothing), and ``<study>/verdicts/noise`` (:func:`noise_sentence`)."""
    adjusted = adjusted or {}
    out: dict[str, str] = {}
    counts = {w: 0 for w in (*VERDICTS, "pending")}
    for q, d, note in results:
        pending = d is None and note.startswith(NO_DATA)
        word = d.verdict if d else (PENDING if pending else "inconclusive")
        counts["pending" if pending else word] += 1
        stem = f"{study}/verdict/{q.id}"
        out[stem] = word
        out[f"{stem}/n"] = f"{min(d.n_a, d.n_b)}" if d else "0"
        out[f"{stem}/change"] = latex.percent_change(d.rel_diff) if d else "--"  # no data yet: the prose still compiles
        out[f"{stem}/ci"] = latex.format_ci(d.ci_low, d.ci_high, percent=True) if d else "--"
        out[f"{stem}/level"] = f"({latex.level_text(d.ci_level)})" if d else ""
        out[f"{stem}/p"] = latex.format_p(d.p_adjusted) if d else "--"
        out[f"{stem}/power"] = power_cell(d)
        adj = adjusted.get(q.id)
        out[f"{stem}/adjusted"] = latex.percent_change(adj.rel_diff) if adj else "--"
        out[f"{stem}/adjusted/ci"] = latex.format_ci(adj.ci_low, adj.ci_high, percent=True) if adj else "--"
        out[f"{stem}/adjusted/verdict"] = adj.verdict if adj else "--"
        out[f"{stem}/sensitive"] = SENSITIVE if adj and adj.sensitive else ""
    out.update({f"{study}/verdicts/{word_key(w)}": str(c) for w, c in counts.items()})
    out[f"{study}/verdicts/counts"] = ", ".join(f"{c} {PENDING if w == 'pending' else w}"
                                                for w, c in counts.items() if c) or "none"
    out[f"{study}/verdicts/questions"] = str(len(results))
    out[f"{study}/verdicts/noise"] = noise_sentence(results, adjusted)
    return out


def write(study_dir: str | Path, root: str | Path, *, paper_dir: str | Path, tables: Mapping[str, pd.DataFrame],
          inputs: list[str | Path], generator: str) -> dict[str, Path]:
    """Write ``<study>-verdicts.tex`` and ``<study>-deviations.tex`` (tables) and ``<study>-verdicts.tex`` (macros)."""
    root = Path(root)
    study = Path(study_dir).name
    results = evaluate(study_dir, root, lambda c: tables.get(c))
    adjusted = sensitivity(results, lambda c: tables.get(c))
    declared, devs = qmod.load(study_dir, root)
    inputs = [*inputs, *sorted({q.published for q in declared if q.published})]
    paper = Path(paper_dir)
    out = {"verdicts": lineage.atomic_text(paper / "tables" / f"{study}-verdicts.tex", table_tex(
               study, results, caption="Pre-registered questions and their verdicts.", label=f"tab:{study}-verdicts",
               adjusted=adjusted)),
           "deviations": lineage.atomic_text(paper / "tables" / f"{study}-deviations.tex", deviations_tex(
               devs, caption="Changes to the questions after their data existed.", label=f"tab:{study}-deviations"))}
    for path in out.values():
        lineage.write([path], inputs, generator=generator)
    out["macros"] = macros.write(paper / "macros" / f"{study}-verdicts.tex", values(study, results, adjusted=adjusted), inputs=inputs,
                                 generator=generator)
    return out
