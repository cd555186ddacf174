"""Studies: each one declared once, in ``studies/<id>/study.yaml``; everything else discovers it.

A study names its title and source document, its campaigns (files in its own folder), its
published data (under ``data/raw/published/``), its analyses (notebook templates under
``notebooks/`` with their parameters) and its chapter. The Snakefile, the paper's list of
chapters and inline values, the review report and the tests read these declarations; no
shared list names a study. The declaration format is documented in ``docs/studies.md``.

An analysis template says in its notebook metadata (``metadata.perflab``) how its default
name is formed and which files it writes, as patterns over ``{name}``, ``{study}``,
``{campaign}`` and its parameters, e.g.::

    "perflab": {"name": "{campaign}-{metric}",
                "outputs": {"notebook": "reports/notebooks/{name}.ipynb",
                            "macros": "paper/macros/{name}.tex"}}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Callable, Collection

from . import campaign as campaign_mod, datasource, templates
from .errors import FileError
from .files import slug
from .formats import declarations, notebooks
from .formats.versions import FormatError
from .yamlfile import SpecError, YamlFileError, load as load_yaml

SCHEMA = declarations.STUDY.schema()
#: Versions of the study declaration format this perflab reads (the ``format`` key).
FORMATS = declarations.STUDY.formats
STUDIES_DIR = "studies"
NOTEBOOKS_DIR = "notebooks"
#: Where every study's published data lives (raw data stays under data/raw/).
PUBLISHED_DIR = "data/raw/published"
#: The fewest samples per cell a question may plan and a study's evidence campaign holds (the schema's minimum
#: of a question's ``n``; asked for by this project's users: hypothesis tests on 40-sample runs).
MIN_N: int = SCHEMA["properties"]["questions"]["items"]["properties"]["n"]["minimum"]
#: The share of an evidence campaign's cells that must hold :data:`MIN_N` samples (the rest may have lost some).
MIN_FULL_CELLS = 0.9


class StudyError(FileError, ValueError):
    """A study declaration is invalid; ``str()`` lists ``file:line: field: problem`` lines."""


@dataclass(frozen=True)
class CampaignRef:
    """A campaign a study runs: its id (from the campaign file), file and inventory (None: the pipeline's)."""

    id: str
    file: str
    inventory: str | None = None
    #: For a real-hosts campaign whose committed data the analyses read: the lab campaign it stands for.
    counterpart_of: str | None = None
    #: Declared before its data (``planned: true``): the pipeline measures it only when asked by name.
    planned: bool = False
    #: ``pilot`` or ``calibration`` (the schema's ``role``): decides no question; None: evidence (40 samples per cell).
    role: str | None = None

    def pending(self, root: str | Path = ".") -> bool:
        """A planned campaign whose complete run is not in ``data/raw`` yet: the pipeline leaves it out."""
        return self.planned and not (Path(root) / self.raw_record).is_file()

    @property
    def raw_record(self) -> str:
        """The raw file the tidy stage waits for: the executed experiment notebook, or the manifest of
        real-hosts data measured with ``perflab run``."""
        return f"data/raw/{self.id}/" + ("MANIFEST.sha256" if self.counterpart_of else "experiment.ipynb")


@dataclass(frozen=True)
class Analysis:
    """One run of an analysis template: its name, notebook, parameters and the files it writes."""

    name: str
    study: str
    notebook: str
    campaign: str | None
    parameters: dict[str, Any]
    outputs: dict[str, str]
    #: The campaigns whose tidy tables it reads: ``campaign`` and every campaign of the study
    #: named by a string anywhere in its parameters (e.g. a list of benchmarks).
    reads: tuple[str, ...] = ()
    #: Reads what exists of ``reads`` (the verdicts template: a question whose campaign has no data yet is
    #: "not yet measured"), so a planned campaign without data does not hold it back.
    partial: bool = False

    def inputs(self, pending: Collection[str]) -> tuple[str, ...] | None:
        """The campaigns whose tidy tables the pipeline gives it while the ``pending`` ones (planned, no data
        yet) are left out: ``reads`` without them for a ``partial`` analysis; None (it waits with them) for
        any other that reads one of them."""
        if self.partial:
            return tuple(c for c in self.reads if c not in pending)
        return None if any(c in pending for c in self.reads) else self.reads

    def papermill_parameters(self) -> dict[str, Any]:
        """What the pipeline passes to the notebook: study, campaign and the declared parameters (plain data,
        checked when the study was loaded and again by :func:`perflab.templates.papermill_yaml`)."""
        base = {"study": self.study, "name": self.name}
        if self.campaign:
            base["campaign"] = self.campaign
        return {**base, **self.parameters}


@dataclass(frozen=True)
class Study:
    """A study's declaration, with every path relative to the project root."""

    id: str
    title: str
    folder: str
    source: str | None = None
    cite: str | None = None
    order: int = 50
    part: str = "main"
    demo: bool = False
    chapter: str | None = None
    published: tuple[str, ...] = ()
    campaigns: tuple[CampaignRef, ...] = ()
    analyses: tuple[Analysis, ...] = field(default_factory=tuple)
    #: Lab campaigns with a declared real-hosts counterpart, and which one the analyses read (docs/real-hosts.md).
    sources: tuple[datasource.Source, ...] = ()

    @property
    def declaration(self) -> str:
        """The study's ``study.yaml``."""
        return f"{self.folder}/study.yaml"

    def macro_files(self) -> list[str]:
        """The inline-value files the paper inputs for this study: planned values, then analysis results."""
        return [f"paper/macros/{c.id}-plan.tex" for c in self.campaigns] + [
            a.outputs["macros"] for a in self.analyses if "macros" in a.outputs]


@cache
@dataclass(frozen=True)
class Declared:
    """The study that declares a campaign file: its id, its folder, whether it is a demonstration (``demo: true``)
    and the campaign's ``role`` there (``pilot``, ``calibration``; None: evidence)."""

    study: str
    folder: Path
    demo: bool = False
    role: str | None = None


def declaring_study(source: str | Path) -> Declared | None:
    """The study whose ``studies/<id>/study.yaml`` declares the campaign file ``source`` under ``campaigns``, or
    None (also when that declaration cannot be read: whoever loads the study says why)."""
    src = Path(source).resolve()
    for folder in src.parents:
        decl = folder / "study.yaml"
        if folder.parent.name != STUDIES_DIR or not decl.is_file():
            continue
        try:
            doc = load_yaml(decl, "study")[0]
        except YamlFileError:
            return None
        if not isinstance(doc, dict):
            return None
        refs = {(folder / c["file"]).resolve(): c for c in doc.get("campaigns") or []
                if isinstance(c, dict) and "file" in c}
        if src not in refs:
            return None
        return Declared(str(doc.get("study", folder.name)), folder, bool(doc.get("demo")), refs[src].get("role"))
    return None


def template(notebook: str, root: str = ".") -> dict[str, Any]:
    """The ``metadata.perflab`` block of ``notebooks/<notebook>.ipynb`` (name pattern and outputs)."""
    path = Path(root) / NOTEBOOKS_DIR / f"{notebook}.ipynb"
    meta = notebooks.perflab_metadata(path)
    if not isinstance(meta, dict) or not isinstance(meta.get("outputs"), dict):
        raise StudyError(path, [f"{path}: notebook metadata lacks perflab.outputs; an analysis template declares the "
                         "files it writes (see docs/studies.md)"])
    return meta


def _read(root: Path, path: str) -> tuple[dict[str, Any], Callable[..., str]]:
    """The checked declaration ``root/path`` and where a field of it is (``file:line: field``)."""
    try:
        doc, lines = declarations.STUDY.read(root / path)
    except YamlFileError as exc:
        raise StudyError(path, [p.replace(str(root / path), path) for p in exc.problems]) from None

    def at(*where: object) -> str:
        key = tuple(where)
        while key and key not in lines:
            key = key[:-1]
        return f"{path}:{lines.get(key, 1)}: {'.'.join(map(str, where)) or '(top level)'}"

    return doc, at


def _analysis(root: Path, analysis: dict[str, Any], at: Callable[..., str]) -> tuple[dict[str, Any], list[str]]:
    """An analysis's template metadata and the problems of its parameters against the template's declaration
    (:func:`perflab.templates.problems`); ``at(*field)`` locates a field of the analysis."""
    try:
        meta = template(analysis["notebook"], str(root))
    except (OSError, FormatError):
        return {}, [f"{at('notebook')}: no template {NOTEBOOKS_DIR}/{analysis['notebook']}.ipynb"]
    except StudyError as exc:
        return {}, [f"{at('notebook')}: {exc}"]
    return meta, templates.problems(analysis["notebook"], meta, dict(analysis.get("parameters", {})),
                                    lambda *where: at("parameters", *(w for w in where if w != "")))


def check_analyses(folder: str | Path) -> None:
    """Check the analyses of the study in ``folder`` (``<root>/studies/<id>``) against their templates' declared
    parameters, as :func:`load` does (``perflab plan`` asks it of the study declaring its campaign); raises
    :class:`StudyError` with one ``file:line: field: problem`` line per problem."""
    folder = Path(folder)
    root, path = folder.parent.parent, f"{STUDIES_DIR}/{folder.name}/study.yaml"
    doc, at = _read(root, path)
    problems = [p for i, a in enumerate(doc.get("analyses", []))
                for p in _analysis(root, a, lambda *where, i=i: at("analyses", i, *where))[1]]
    if problems:
        raise StudyError(path, problems)


def load(folder: str | Path, root: str | Path = ".") -> Study:
    """Load and check ``<folder>/study.yaml`` (``folder`` relative to ``root``)."""
    root = Path(root)
    folder = Path(folder)
    rel = folder.relative_to(root).as_posix() if folder.is_absolute() else folder.as_posix()
    path = f"{rel}/study.yaml"
    doc, at = _read(root, path)
    problems = []
    if doc["study"] != Path(rel).name:
        problems.append(f"{at('study')}: {doc['study']!r} differs from the folder name {Path(rel).name!r}; "
                        "rename one of them")
    chapter = f"{rel}/{doc['chapter']}" if doc.get("chapter") else None
    if chapter and not (root / chapter).is_file():
        problems.append(f"{at('chapter')}: {chapter} does not exist")
    for i, pub in enumerate(doc.get("published", [])):
        if not pub.startswith(PUBLISHED_DIR + "/"):
            problems.append(f"{at('published', i)}: {pub} is not under {PUBLISHED_DIR}/ (published data is raw data)")
        elif not (root / pub).is_file():
            problems.append(f"{at('published', i)}: {pub} does not exist")
    campaigns: list[CampaignRef] = []
    lab_ids: list[str | None] = []
    for i, ref in enumerate(doc.get("campaigns", [])):
        file = f"{rel}/{ref['file']}"
        lab_ids.append(None)
        try:
            camp = campaign_mod.load(root / file)
        except SpecError as exc:
            problems += [f"{at('campaigns', i, 'file')}: {p}" for p in exc.problems]
            continue
        lab_ids[-1] = camp.name
        declared = camp.doc.get("study")
        if declared is not None and declared != doc["study"]:
            problems.append(f"{at('campaigns', i, 'file')}: {file} says study {declared!r}; this is {doc['study']!r}")
        if ref.get("planned") and not camp.monitors:
            # the runner refuses it (perflab.hosts.monitors.study_policy); say so when it is declared, not when it is
            # measured
            problems.append(f"{at('campaigns', i, 'file')}: {file}: monitors: false: a study's campaign runs with "
                            "its monitors on, and this planned one would be refused when measured; remove "
                            "`monitors: false`")
        campaigns.append(CampaignRef(camp.name, file, ref.get("inventory"), planned=bool(ref.get("planned", False)),
                                     role=ref.get("role")))
    ids = {c.id for c in campaigns}
    analyses = []
    for i, a in enumerate(doc.get("analyses", [])):
        if a.get("campaign") is not None and a["campaign"] not in ids:
            problems.append(f"{at('analyses', i, 'campaign')}: {a['campaign']!r} is not a campaign of this study "
                            f"(it has {', '.join(sorted(ids)) or 'none'})")
            continue
        meta, contract = _analysis(root, a, lambda *where, i=i: at("analyses", i, *where))
        if contract:
            problems += contract
            continue
        params = dict(a.get("parameters", {}))
        fields_ = {"study": doc["study"], "campaign": a.get("campaign") or "", **params}
        try:
            name = a.get("name") or slug(meta.get("name", "{study}-{notebook}").format(notebook=a["notebook"], **fields_))
            outputs = {k: v.format(name=name, **fields_) for k, v in meta["outputs"].items()}
        except KeyError as exc:
            problems.append(f"{at('analyses', i)}: template {a['notebook']} needs parameter {exc.args[0]!r}")
            continue
        named = [v for v in _strings(params) if v in ids]
        reads = tuple(dict.fromkeys([c for c in [a.get("campaign"), *named] if c]))
        analyses.append(Analysis(name, doc["study"], f"{NOTEBOOKS_DIR}/{a['notebook']}.ipynb", a.get("campaign"),
                                 params, outputs, reads, partial=a["notebook"] == "verdicts"))
        if a["notebook"] == "verdicts":
            asked = dict.fromkeys(str(q["campaign"]) for q in doc.get("questions", []) if q.get("campaign") in ids)
            unread = [c for c in asked if c not in reads]
            if unread:
                problems.append(f"{at('analyses', i, 'parameters', 'campaigns')}: the study's questions ask about {', '.join(unread)}, which "
                                "this verdicts analysis does not read (they would stay 'not yet measured'); add "
                                f"{'it' if len(unread) == 1 else 'them'} to `campaigns`")
    sources, found = datasource.counterparts(root, doc["study"], rel, doc.get("campaigns", []), lab_ids)
    problems += found
    campaigns += [CampaignRef(s.real, s.real_file, None, s.lab) for s in sources if s.used == s.real]
    analyses = [datasource.reading(a, sources) for a in analyses]
    names = [a.name for a in analyses]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"{at('analyses')}: two analyses named {dup!r}; give one a `name:`")
    if problems:
        raise StudyError(path, problems)
    return Study(id=doc["study"], title=doc["title"], folder=rel, source=doc.get("source"), cite=doc.get("cite"),
                 order=doc.get("order", 50), part=doc.get("part", "main"), demo=doc.get("demo", False),
                 chapter=chapter, published=tuple(doc.get("published", [])), campaigns=tuple(campaigns),
                 analyses=tuple(analyses), sources=tuple(sources))


def _strings(value: Any) -> list[str]:
    """Every string in a nested structure of dicts and lists."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def discover(root: str | Path = ".", *, demos: bool = True) -> list[Study]:
    """Every study under ``<root>/studies/``, in paper order (main part, then appendix; by ``order``, id).

    Checks across studies too: campaign ids and output files are unique. ``demos=False``
    leaves out studies marked ``demo: true``.
    """
    root = Path(root)
    found = [load(d.relative_to(root), root) for d in sorted((root / STUDIES_DIR).iterdir())
             if (d / "study.yaml").is_file()] if (root / STUDIES_DIR).is_dir() else []
    problems = []
    owner: dict[str, str] = {}
    for s in found:
        for c in s.campaigns:
            if c.id in owner:
                problems.append(f"{s.declaration}: campaign {c.id!r} is already declared by {owner[c.id]}")
            owner[c.id] = s.declaration
        for a in s.analyses:
            for out in a.outputs.values():
                if out in owner:
                    problems.append(f"{s.declaration}: analysis {a.name} writes {out}, as does {owner[out]}")
                owner[out] = s.declaration
    if problems:
        raise StudyError(root / STUDIES_DIR, problems)
    found = [s for s in found if demos or not s.demo]
    return sorted(found, key=lambda s: (s.part != "main", s.order, s.id))


def paper_index(studies: list[Study], paper_dir: str = "paper") -> dict[str, str]:
    """The two generated LaTeX files the paper inputs: every study's inline values, and its chapters in order.

    Paths in the texts are relative to ``paper_dir``, where LaTeX runs. A macro file the
    pipeline has not made yet is skipped (``\\plv`` then marks each missing value).
    """
    def rel(path: str) -> str:
        prefix = paper_dir.rstrip("/") + "/"
        return path[len(prefix):] if path.startswith(prefix) else f"../{path}"

    head = "% Generated by perflab from studies/*/study.yaml; do not edit.\n"
    macros = head + "".join(f"\\IfFileExists{{{rel(m)}}}{{\\input{{{rel(m)}}}}}{{}}\n"
                            for s in studies for m in s.macro_files())
    chapters, appendix = [head], False
    for s in studies:
        if s.chapter is None:
            continue
        if s.part == "appendix" and not appendix:
            chapters.append("\\appendix\n")
            appendix = True
        chapters.append(f"% {s.id}: {s.title}\n\\input{{{rel(s.chapter)}}}\n")
    return {"studies-macros.tex": macros, "studies-chapters.tex": "".join(chapters)}
