"""Pre-registered questions: declared in a study before its data, frozen with the first sample.

A study's ``study.yaml`` lists ``questions:`` (what each campaign is to decide: the seed's
claim, one primary metric, the contrast and expected direction, the SESOI and its source,
whether the lab has the mechanism the claim rests on (``testable``), alpha, family, test and
the planned n) and ``deviations:`` (a field changed after data exist, with the reason;
``question: '*'`` for every question of the study). :func:`load` reads and checks them (one
line per problem, naming file, line and field), and refuses a claim looked at in two
families unless the later look is declared an independent ``replication``. :func:`freeze` is the record the runner writes once, as
``questions.json`` beside ``campaign.json``, when a campaign's first sample is stored; it
holds the digest and the questions as declared then. :func:`changes` compares that record
with today's declaration: every changed field not declared as a deviation is a problem,
which ``perflab verify`` reports. A field a record predates reads as its default, so only a
new field with a value of its own (a testability declared after the data) needs a deviation. Deciding the questions is :mod:`perflab.stats.verdict`;
``docs/studies.md`` documents the fields.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import study, yamlfile
from .errors import UserError
from .formats import questions as record_format
from .formats.published import read_claims, read_table

#: File name of the frozen record in a campaign's raw directory (its format: :mod:`perflab.formats.questions`).
RECORD = record_format.NAME


class QuestionError(UserError, ValueError):
    """A question or deviation is declared wrongly; ``str()`` lists ``file:line: field: problem`` lines."""


@dataclass(frozen=True)
class Testability:
    """Whether this lab has the mechanism a question's claim rests on: ``yes``, ``partly`` or ``no``, the
    mechanism, and the reason (what the lab's stand-in emulates, and how)."""

    value: str
    mechanism: str
    reason: str


@dataclass(frozen=True)
class Question:
    """One pre-registered question of a study (fields as in ``docs/studies.md``)."""

    id: str
    study: str
    claim: str
    campaign: str
    metric: str
    factor: str
    baseline: str
    versus: str
    expected: str
    sesoi: float
    sesoi_source: str
    sesoi_reason: str
    n: int
    alpha: float = 0.05
    family: str = ""
    correction: str = "bonferroni"
    test: str = "blocked"
    select: dict[str, Any] = field(default_factory=dict)
    within: dict[str, str] = field(default_factory=dict)
    per_run: str | None = None
    secondary: tuple[str, ...] = ()
    planning: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    #: Instead of a campaign: a published summaries table of the study and the row (``name``) it is about.
    published: str = ""
    item: str = ""
    #: Required in a study.yaml (the schema); None only for a question built without one, which reads as ``yes``.
    testable: Testability | None = None
    #: Why this look at a claim is an independent replication with its own data (its own family), or "".
    replication: str = ""

    def declared(self) -> dict[str, Any]:
        """The question as declared (what is frozen and compared), without the study id (and without the
        published-table fields when it names a campaign)."""
        out = asdict(self)
        out.pop("study")
        out["secondary"] = list(self.secondary)
        for key in ("published", "item", "testable", "replication"):
            if not out[key]:
                out.pop(key)
        return out

    @property
    def testability(self) -> str:
        """``yes``, ``partly`` or ``no`` (``yes`` when undeclared, as questions were before testability existed)."""
        return self.testable.value if self.testable else "yes"

    @property
    def source(self) -> str:
        """What decides the question: its campaign, or ``<published table>: <item>``."""
        return self.campaign or f"{self.published}: {self.item}"

    @property
    def data(self) -> str:
        """Where the verdict's data come from, as the tables print it: ``rerun <campaign>`` or ``published``."""
        return f"rerun {self.campaign}" if self.campaign else "published"


@dataclass(frozen=True)
class Deviation:
    """A declared change of one field of one question after its data existed."""

    question: str
    field: str
    reason: str


def _claims(root: Path, doc: dict[str, Any]) -> set[str] | None:
    """Claim ids of the study's claims file (a published file ending in ``-claims.csv``), or None."""
    files = [p for p in doc.get("published", []) if p.endswith("-claims.csv")]
    if not files:
        return None
    return set(read_claims(root / files[0])["claim"])


def published_rows(root: Path, published: str, item: str) -> dict[str, dict[str, str]]:
    """The rows of a published summaries table whose ``name`` is ``item``, by ``group``."""
    rows = read_table(root / published).to_dict("records")
    return {str(row["group"]): {str(k): v for k, v in row.items()} for row in rows if row.get("name") == item}


def _published_problems(root: Path, doc: dict[str, Any], published: str, item: str, q: dict[str, Any]) -> list[str]:
    """What is wrong with a question's published table and row (nothing: an empty list)."""
    if published not in doc.get("published", []):
        return [f"{published!r} is not one of the study's published files; list it under published:"]
    if str(q.get("test", "welch")) != "welch":
        return ["a published table has no blocks: use test: welch"]
    rows = published_rows(root, published, item)
    missing = [g for g in (str(q["baseline"]), str(q["versus"])) if g not in rows]
    if missing:
        return [f"no row with name {item!r} and group {', '.join(map(repr, missing))} in {published}"]
    return []


def load(study_dir: str | Path, root: str | Path = ".") -> tuple[list[Question], list[Deviation]]:
    """The questions and deviations of ``<study_dir>/study.yaml`` (relative to ``root``), checked.

    The study schema checks each field's form (``lib/perflab/schemas/study.schema.json``);
    this checks what refers elsewhere: the claim, the campaign, unique ids, the question a
    deviation names. Raises :class:`QuestionError` with one ``file:line: field: problem``
    line per problem.
    """
    root = Path(root)
    folder = Path(study_dir)
    rel = folder.relative_to(root).as_posix() if folder.is_absolute() else folder.as_posix()
    declared = study.load(rel, root)
    doc, lines = yamlfile.read_yaml(root / declared.declaration, study.SCHEMA, "study")
    where = declared.declaration

    def at(*path: Any) -> str:
        key = tuple(path)
        while key and key not in lines:
            key = key[:-1]
        return f"{where}:{lines.get(key, 1)}: {'.'.join(map(str, path))}"

    problems: list[str] = []
    claims = _claims(root, doc)
    campaigns = {c.id for c in declared.campaigns}
    roles = {c.id: c.role for c in declared.campaigns if c.role}
    out: list[Question] = []
    seen: set[str] = set()
    for i, q in enumerate(doc.get("questions") or []):
        qid = str(q["id"])
        if qid in seen:
            problems.append(f"{at('questions', i, 'id')}: {qid!r} is declared twice; give each question its own id")
        seen.add(qid)
        claim = str(q["claim"])
        quoted = claim.startswith("seed:") and claim[5:].isdigit() and bool(q.get("quote"))
        if claims is not None and claim not in claims and not quoted:
            problems.append(f"{at('questions', i, 'claim')}: {claim!r} is not a claim of the study's claims file; "
                            f"use one of {', '.join(sorted(claims)[:6])}..., or 'seed:<line>' with a `quote:` for "
                            "a statement the claims file does not hold")
        if claims is None and not quoted:
            problems.append(f"{at('questions', i, 'claim')}: expected 'seed:<line>' with a `quote:` (the study has "
                            f"no claims file); found {claim!r}")
        campaign, published = str(q.get("campaign", "")), str(q.get("published", ""))
        if campaign and campaigns and campaign not in campaigns:
            problems.append(f"{at('questions', i, 'campaign')}: {campaign!r} is not a campaign of this study "
                            f"({', '.join(sorted(campaigns))})")
        elif campaign in roles:
            problems.append(f"{at('questions', i, 'campaign')}: {campaign!r} is declared `role: {roles[campaign]}`, "
                            "which decides no question; name a campaign measured as evidence (40 per cell)")
        if published:
            problems += [f"{at('questions', i, 'published')}: {text}"
                         for text in _published_problems(root, doc, published, str(q["item"]), q)]
        sesoi, alpha = q["sesoi"], q.get("alpha", 0.05)
        out.append(Question(
            id=qid, study=declared.id, claim=claim, campaign=campaign,
            metric=str(q["metric"]), factor=str(q["factor"]), baseline=str(q["baseline"]), versus=str(q["versus"]),
            expected=str(q["expected"]), sesoi=float(sesoi["value"]), sesoi_source=str(sesoi["source"]),
            sesoi_reason=str(sesoi["reason"]), n=int(q["n"]),
            alpha=float(alpha), family=str(q.get("family", campaign or Path(published).stem)),
            correction=str(q.get("correction", "bonferroni")),
            test=str(q.get("test", "welch" if published else "blocked")),
            select=dict(q.get("select") or {}), within={str(k): str(v) for k, v in (q.get("within") or {}).items()},
            per_run=q.get("per_run"), secondary=tuple(q.get("secondary") or ()), planning=dict(q.get("planning") or {}),
            text=str(q.get("text", "")), published=published, item=str(q.get("item", "")),
            testable=Testability(**{k: str(v) for k, v in q["testable"].items()}) if q.get("testable") else None,
            replication=str(q.get("replication", ""))))
    problems += [f"{at('questions', next(i for i, q in enumerate(out) if q.id == qid), 'family')}: {text}"
                 for qid, text in _split_claims(out)]
    deviations = []
    for i, d in enumerate(doc.get("deviations") or []):
        if str(d["question"]) not in seen | {"*"}:
            problems.append(f"{at('deviations', i, 'question')}: no question {d['question']!r} in this study")
        deviations.append(Deviation(str(d["question"]), str(d["field"]), str(d["reason"])))
    declared_n = {d.question for d in deviations if d.field == "n"}
    for i, q in enumerate(out):
        required = q.planning.get("required_n")
        if isinstance(required, int) and required > q.n and q.id not in declared_n and not q.planning.get("underpowered"):
            problems.append(f"{at('questions', i, 'n')}: {q.n} is below the planning's required_n {required}; raise n, "
                            "redesign the question (a less noisy metric, longer samples), or declare it underpowered "
                            "(planning: underpowered: <what is done instead>; after its data: a deviation of field n)")
    if problems:
        raise QuestionError("\n".join(problems))
    return out, deviations


def _split_claims(questions: list[Question]) -> list[tuple[str, str]]:
    """(question id, problem) for every claim whose looks (its questions not declared a ``replication``) lie in
    more than one family: one claim, one family, its alpha spent across the looks."""
    out = []
    for claim in dict.fromkeys(q.claim for q in questions):
        looks = [q for q in questions if q.claim == claim and not q.replication]
        families = list(dict.fromkeys(q.family for q in looks))
        if len(families) > 1:
            later = next(q for q in looks if q.family != looks[0].family)
            out.append((later.id, f"{later.family!r} separates this look at claim {claim} from "
                                   f"{', '.join(q.id for q in looks if q.family == looks[0].family)} (family "
                                   f"{looks[0].family!r}); put every look at one claim in one family, or declare "
                                   "`replication:` with why this one is independent"))
    return out


def family_size(questions: list[Question], q: Question) -> int:
    """How many questions share ``q``'s family (1 when its correction is ``none``)."""
    return 1 if q.correction == "none" else sum(1 for o in questions if o.family == q.family)


def digest(questions: list[Question]) -> str:
    """SHA-256 of the questions as declared (canonical JSON, sorted keys)."""
    return _digest([q.declared() for q in questions])


def _digest(declared: list[dict[str, Any]]) -> str:
    """SHA-256 of declared questions (:meth:`Question.declared`, or as a frozen record holds them) as canonical JSON."""
    return hashlib.sha256(json.dumps(declared, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def record_problem(record: dict[str, Any]) -> str | None:
    """What is wrong when a frozen record's ``digest`` is not that of the questions it holds (None: it is):
    its questions were edited after they were frozen."""
    found = _digest(record.get("questions", []))
    if record.get("digest") == found:
        return None
    return (f"its digest {str(record.get('digest'))[:12]} is not that of the questions it holds ({found[:12]}): "
            "the frozen questions were edited after their data existed; restore the record from a backup "
            "(changes belong under deviations: in study.yaml)")


def freeze(study: str, campaign: str, questions: list[Question]) -> str:
    """The ``questions.json`` record of ``campaign``'s questions (JSON text), written once with its first sample."""
    own = [q for q in questions if q.campaign == campaign]
    return record_format.dumps(study, campaign, digest(own), [q.declared() for q in own])


def for_campaign_file(campaign_file: str | Path, campaign: str) -> str | None:
    """The frozen record for a campaign file a study declares (:func:`perflab.study.declaring_study`); None for
    another file or when no question of the study names ``campaign``."""
    declared = study.declaring_study(campaign_file)
    if declared is None:
        return None
    root = declared.folder.parent.parent
    questions, _ = load(declared.folder.relative_to(root), root)
    if not any(q.campaign == campaign for q in questions):
        return None
    return freeze(declared.folder.name, campaign, questions)


def read_record(path: str | Path) -> dict[str, Any]:
    """Read a ``questions.json`` and check its kind and version (:mod:`perflab.formats.questions`)."""
    return record_format.read(path)


def changes(record: dict[str, Any], questions: list[Question], deviations: list[Deviation]) -> list[str]:
    """Fields of the frozen questions that differ from today's declaration and are not declared deviations.

    One sentence per change, naming the campaign, the question and the field; a frozen
    question that is no longer declared is a change of every field.
    """
    allowed = {(d.question, d.field) for d in deviations}
    allowed |= {(q.id, d.field) for d in deviations if d.question == "*" for q in questions}
    now = {q.id: q.declared() for q in questions}
    out = []
    for frozen in record["questions"]:
        qid = frozen["id"]
        current = now.get(qid)
        if current is None:
            if (qid, "*") not in allowed:
                out.append(f"campaign {record['campaign']}: question {qid} was removed after its data existed; "
                           f"declare it under deviations: with field '*' and a reason")
            continue
        for key in sorted(set(frozen) | set(current)):  # a key either side lacks is one it holds at its default
            if frozen.get(key) != current.get(key) and (qid, key) not in allowed:
                out.append(f"campaign {record['campaign']}: question {qid} field {key} changed after its data existed "
                           f"({frozen.get(key)!r} -> {current.get(key)!r}); declare it under deviations: "
                           "with a reason, or restore it")
    return out


def deviation_rows(deviations: list[Deviation]) -> list[dict[str, str]]:
    """The deviations as plain rows for a chapter's table."""
    return [{"question": d.question, "field": d.field, "reason": d.reason} for d in deviations]


def frozen_problems(root: str | Path = ".") -> list[tuple[str, str]]:
    """(raw directory's record, problem) for every frozen question changed without a declared deviation.

    Reads ``data/raw/<campaign>/questions.json`` of every campaign a study under ``root``
    declares; a study whose questions cannot be loaded (a claim split across families among
    them) is one problem.
    """
    root = Path(root)
    out: list[tuple[str, str]] = []
    try:
        studies = study.discover(root)
    except study.StudyError as exc:
        return [("studies", str(exc).splitlines()[0])]
    for s in studies:
        records = [(c.id, root / "data/raw" / c.id / RECORD) for c in s.campaigns]
        records = [(c, p) for c, p in records if p.is_file()]
        try:  # every study is loaded: a claim split across families is refused with or without records
            declared, deviations = load(s.folder, root)
        except QuestionError as exc:
            out.append((s.declaration, str(exc).splitlines()[0]))
            continue
        for _, path in records:
            out += [(path.relative_to(root).as_posix(), text) for text in changes(read_record(path), declared, deviations)]
    return out
