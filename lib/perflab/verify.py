"""Reviewer's check of a whole repository: raw bytes, published data, processed tables, outputs.

:func:`repository` checks, without trusting the authors' outputs:

- every raw campaign ``data/raw/<campaign>/`` against its ``MANIFEST.sha256``
  (:func:`perflab.store.verify`), and that the manifest exists and lists files;
- the digitized published data ``data/raw/published/`` against its own manifest
  (written once by ``perflab seal data/raw/published``);
- every processed table ``data/processed/<campaign>.parquet`` and ``.csv`` against the
  table re-derived from the raw bytes by :func:`perflab.tidy.frame`. The comparison is
  exact: the parsers read the same bytes, so every value, float bits included, must be
  equal; a different parser version shows as a difference (the table is stale);
- every lineage sidecar (``*.lineage.json``) of the paper's figures, tables and macros:
  its outputs must still have the recorded SHA-256, and so must its inputs and the
  notebook that generated them;
- on request (:func:`rebuild`, ``perflab verify --rebuild``), every generating notebook is
  run again with its recorded parameters into a scratch directory and each output is
  compared byte for byte with the one in ``paper/``: tables and macros exactly; figures
  too, since they are saved without a timestamp (the same data and package versions give
  the same bytes; the sidecar records the versions, so a difference names them).

Each campaign's records must also agree with what follows from them (:func:`record_problems`:
the schedule from the seed, the frozen questions' digest), and its ledger's hash chain must
hold (:func:`perflab.ledger.chain`); the report carries each chain's head (:func:`head`).

Each problem is a :class:`Finding` naming the file and what differs. The report also carries
each campaign's measurement evidence (:mod:`perflab.evidence`: window, samples overlapping
another campaign's, contention, monitors), which ``perflab verify`` prints and checks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from . import campaign as campaign_mod, evidence, ledger, questions, store, tidy
from .campaign import design
from .formats import lineage as lineage_format, records, tables
from .formats.findings import Finding
from .formats.versions import FormatError
from .errors import UserError

#: Where the digitized published results live, relative to the project root.
PUBLISHED = Path("data/raw/published")
#: Directories of generated outputs that carry lineage sidecars, relative to the project root.
OUTPUT_DIRS = ("paper/figures", "paper/tables", "paper/macros", "paper/sections")


class VerifyError(UserError, ValueError):
    """What was asked to be verified does not exist or holds nothing to check."""


@dataclass
class Report:
    """What :func:`repository` checked (counts per kind) and the problems it found."""

    checked: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: How each campaign was measured (:func:`perflab.evidence.collect`).
    evidence: list[evidence.CampaignEvidence] = field(default_factory=list)
    #: Each campaign's ledger chain head, described (:func:`head`).
    heads: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every checked file verified."""
        return not self.findings

    def count(self, kind: str, n: int = 1) -> None:
        """Add ``n`` checked items of ``kind``."""
        self.checked[kind] = self.checked.get(kind, 0) + n


def raw_directory(directory: str | Path) -> list[Finding]:
    """Check one raw directory (a campaign or the published data) against its manifest.

    A missing directory, a missing manifest or an empty one is an error: nothing could be checked.
    """
    d = Path(directory)
    if not d.is_dir():
        raise VerifyError("no such directory; give a raw campaign directory such as data/raw/<campaign> "
                          "(or no argument to check the whole repository)", file=d)
    if not (d / store.MANIFEST).exists():
        files = [p for p in d.rglob("*") if p.is_file() and not p.name.startswith(".")]
        raise VerifyError(f"no {store.MANIFEST} ({len(files)} files unprotected); "
                          f"run `perflab seal {d}` once, right after the data was written", file=d)
    if not store.read_manifest(d):
        raise VerifyError("lists no file; nothing can be verified", file=f"{d}/{store.MANIFEST}")
    return [f.under(d.as_posix()) for f in store.findings(d)] + record_problems(d)


def head(campaign_dir: str | Path) -> str:
    """The head of a campaign's ledger hash chain in one line (:meth:`perflab.ledger.Chain.describe`): what the
    paper and the review site print, so that a consistent rewrite of the raw data changes a published digest."""
    found = ledger.chain(Path(campaign_dir) / store.LEDGER)
    return found.describe() if found else f"no {store.LEDGER}"


def record_problems(campaign_dir: str | Path) -> list[Finding]:
    """The records of a campaign directory against what must follow from them.

    ``campaign.json``'s stored schedule must be the one its seed gives (:func:`perflab.campaign.design.planned`)
    and its ``design_digest`` the digest of its spec; a frozen ``questions.json``'s ``digest`` must be
    that of the questions it holds (:func:`perflab.questions.record_problem`). The manifest cannot
    tell such an edit when its line was rewritten too.
    """
    d = Path(campaign_dir)
    out = []
    path = d / "campaign.json"
    if path.is_file():
        try:
            record = records.read_campaign(path)
            planned = design.planned(record.spec, record.source) if record.spec.get("seed") is not None else None
            digest = campaign_mod.from_doc(record.spec, record.source).digest()
        except (UserError, KeyError, TypeError, ValueError) as exc:
            out.append(Finding(path.as_posix(), f"its spec cannot be read back ({str(exc).splitlines()[0][:160]})"))
        else:
            if planned is not None and planned != record.schedule:
                at = next((i for i, (a, b) in enumerate(zip(planned, record.schedule)) if a != b),
                          min(len(planned), len(record.schedule)))
                out.append(Finding(path.as_posix(), f"its schedule does not follow from its seed "
                                   f"{record.spec['seed']} ({len(record.schedule)} runs stored, {len(planned)} planned "
                                   f"by the seed; first difference at run {at + 1}): the seed or the schedule was "
                                   "altered"))
            if digest != record.design_digest:
                out.append(Finding(path.as_posix(), f"its design_digest {record.design_digest[:12]} is not the digest "
                                   f"of its spec ({digest[:12]}): the spec was altered"))
    frozen = d / questions.RECORD
    if frozen.is_file():
        try:
            problem = questions.record_problem(questions.read_record(frozen))
        except (UserError, ValueError) as exc:
            problem = str(exc).splitlines()[0]
        if problem:
            out.append(Finding(frozen.as_posix(), problem))
    return out


def _frame_difference(expected: pd.DataFrame, found: pd.DataFrame) -> str | None:
    """How ``found`` differs from ``expected`` (columns, types, shape, values), or None when equal."""
    if list(expected.columns) != list(found.columns):
        missing = [c for c in expected.columns if c not in found.columns]
        extra = [c for c in found.columns if c not in expected.columns]
        return f"columns differ (missing {missing}, extra {extra}, or in another order)"
    if len(expected) != len(found):
        return f"{len(found)} rows; re-derived from raw: {len(expected)}"
    for col in expected.columns:
        if str(expected[col].dtype) != str(found[col].dtype):
            return f"column {col!r} has type {found[col].dtype}; re-derived: {expected[col].dtype}"
        a, b = expected[col].reset_index(drop=True), found[col].reset_index(drop=True)
        same = (a == b).fillna(False) | (a.isna() & b.isna())
        if not bool(same.all()):
            row = int((~same).to_numpy().nonzero()[0][0])
            return (f"column {col!r} differs in {int((~same).sum())} row(s), first row {row}: "
                    f"{b[row]!r}; re-derived from raw: {a[row]!r}")
    return None


def processed(raw_dir: str | Path, processed_dir: str | Path) -> tuple[list[Finding], int]:
    """Re-derive a campaign's tidy table from raw and compare the stored Parquet and CSV exactly.

    Returns the findings and how many stored tables were compared (0 when none was made yet).
    """
    raw_dir, processed_dir = Path(raw_dir), Path(processed_dir)
    name = raw_dir.name
    parquet, csv = processed_dir / f"{name}.parquet", processed_dir / f"{name}.csv"
    if not parquet.exists() and not csv.exists():
        return [], 0
    expected, _ = tidy.frame(raw_dir, verify=False)
    findings = []
    if parquet.exists():
        diff = _frame_difference(expected, tidy.load(parquet))
        if diff:
            findings.append(Finding(parquet.as_posix(), diff))
    if csv.exists():
        text = tidy.csv_bytes(expected)
        if csv.read_bytes() != text:
            stored = tables.load_csv(csv)
            rerendered = tables.load_csv(text)
            diff = _frame_difference(rerendered, stored) or "text differs from the table re-derived from raw"
            findings.append(Finding(csv.as_posix(), diff))
    return findings, int(parquet.exists()) + int(csv.exists())


def lineage_record(sidecar: str | Path, root: str | Path = ".") -> list[Finding]:
    """Check a report lineage sidecar: its outputs, inputs and generator notebook still have the recorded hashes."""
    sidecar, root = Path(sidecar), Path(root)
    try:
        record = lineage_format.read(sidecar)
    except FormatError as exc:
        return [Finding(sidecar.as_posix(), exc.message)]
    findings = []
    entries = [("output", o) for o in record.get("outputs", [])] + [("input", i) for i in record.get("inputs", [])]
    notebook = record.get("notebook")
    if isinstance(notebook, dict) and "sha256" in notebook:
        entries.append(("generating notebook", notebook))
    for kind, entry in entries:
        if not isinstance(entry, dict) or "sha256" not in entry:
            continue
        path = root / entry["path"]
        if not path.exists():
            findings.append(Finding(entry["path"], f"{kind} named by {sidecar.as_posix()} is missing"))
        elif store.sha256_file(path) != entry["sha256"]:
            findings.append(Finding(entry["path"], f"{kind} changed since {sidecar.as_posix()} was written "
                                                   f"(SHA-256 differs)"))
    return findings


def campaigns(raw_root: str | Path) -> list[Path]:
    """The campaign directories under ``raw_root`` (those with a ``campaign.json``)."""
    raw_root = Path(raw_root)
    return sorted(p for p in raw_root.iterdir() if p.is_dir() and (p / "campaign.json").exists()) \
        if raw_root.is_dir() else []


def repository(root: str | Path = ".", *, progress: Callable[[str], None] | None = None) -> Report:
    """Check the whole repository under ``root``: raw campaigns, published data, processed tables, outputs.

    ``progress`` is called with a short line before each step (``perflab verify`` prints them).
    """
    step = progress or (lambda _line: None)
    root = Path(root)
    raw_root, processed_dir = root / "data/raw", root / "data/processed"
    if not raw_root.is_dir():
        raise VerifyError(f"{raw_root}: no such directory; run from the project root (or pass --root)")
    report = Report()
    others = [p for p in raw_root.iterdir() if p.is_dir() and not p.name.startswith(".")
              and p.name != PUBLISHED.name and not (p / "campaign.json").exists()]
    for p in others:
        report.findings.append(Finding(p.as_posix(), "a directory under data/raw/ with no campaign.json: "
                                                     "not a campaign; move it out of data/raw/"))
    found = campaigns(raw_root)
    published = root / PUBLISHED
    if not found and not published.is_dir():
        raise VerifyError(f"{raw_root}: holds no campaign and no published data; nothing to verify")
    for i, cdir in enumerate(found, 1):
        step(f"[{i}/{len(found)}] raw {cdir.as_posix()}")
        try:
            report.findings += raw_directory(cdir)
        except VerifyError as exc:
            report.findings.append(Finding(cdir.as_posix(), exc.message))
            continue
        report.count("raw campaigns")
        report.count("raw files", len(store.read_manifest(cdir)))
        report.heads[cdir.name] = head(cdir)
    if published.is_dir():
        try:
            report.findings += raw_directory(published)
            report.count("published files", len(store.read_manifest(published)))
        except VerifyError as exc:
            report.findings.append(Finding(published.as_posix(), exc.message))
    intact = {c.name for c in found} - {Path(f.path).relative_to(raw_root).parts[0] for f in report.findings
                                         if Path(f.path).is_relative_to(raw_root)}
    for i, cdir in enumerate(found, 1):
        step(f"[{i}/{len(found)}] processed table of {cdir.name}")
        if cdir.name not in intact:
            if (processed_dir / f"{cdir.name}.parquet").exists():
                report.notes.append(f"{processed_dir / cdir.name}.parquet: not re-derived (its raw data does not verify)")
            continue
        findings, n = processed(cdir, processed_dir)
        report.findings += findings
        report.count("processed tables", n)
    names = {c.name for c in found}
    for table in sorted(processed_dir.glob("*.parquet")) if processed_dir.is_dir() else []:
        if table.stem not in names:
            report.findings.append(Finding(table.as_posix(), f"no raw campaign data/raw/{table.stem}/ to re-derive "
                                                             "it from"))
    sidecars = sorted(s for d in OUTPUT_DIRS for s in (root / d).glob("*.lineage.json"))
    step(f"{len(sidecars)} lineage records of the generated outputs")
    for sidecar in sidecars:
        report.findings += lineage_record(sidecar, root)
        report.count("lineage records")
    report.findings += [Finding(where, problem) for where, problem in questions.frozen_problems(root)]
    report.evidence = evidence.collect(raw_root, root)
    return report


def _first_difference(a: Path, b: Path) -> str:
    """Where two generated files first differ (a line for text, else the sizes)."""
    if a.suffix in (".tex", ".csv", ".json"):
        for n, (la, lb) in enumerate(zip(a.read_text().splitlines(), b.read_text().splitlines()), 1):
            if la != lb:
                return f"line {n}: {la[:60]!r}; rebuilt: {lb[:60]!r}"
        return "one is a prefix of the other"
    return f"{a.stat().st_size} bytes; rebuilt: {b.stat().st_size} bytes"


def rebuild(root: str | Path, scratch: str | Path, *, kernel: str = "perflab") -> tuple[list[Finding], list[str], int]:
    """Re-run each generating notebook of the paper's outputs into ``scratch`` and compare the outputs.

    The notebooks and parameters come from the lineage sidecars; ``paper_dir`` and
    ``processed_root`` are pointed into ``scratch`` so that nothing in the project is
    written. Returns the findings, notes (what could not be rebuilt) and how many
    outputs were compared.
    """
    import papermill

    root, scratch = Path(root).resolve(), Path(scratch).resolve()
    runs: dict[tuple[str, str], list[str]] = {}
    parameters: dict[tuple[str, str], dict] = {}
    notes = []
    for sidecar in sorted(s for d in OUTPUT_DIRS for s in (root / d).glob("*.lineage.json")):
        record = lineage_format.read(sidecar)
        nb, params = record.get("notebook"), record.get("parameters") or {}
        if not nb:
            continue
        if "paper_dir" not in params:
            notes.append(f"{sidecar.relative_to(root)}: no recorded paper_dir parameter; its outputs were not rebuilt "
                         "(rerun the pipeline to record the parameters)")
            continue
        key = (nb["path"], json.dumps(params, sort_keys=True))
        runs.setdefault(key, []).extend(o["path"] for o in record.get("outputs", []))
        parameters[key] = params
    findings, compared = [], 0
    for i, ((notebook, params_json), outputs) in enumerate(sorted(runs.items())):
        params = parameters[notebook, params_json]
        redirected = {**params, "paper_dir": str(scratch / "paper")}
        if "processed_root" in params:
            redirected["processed_root"] = str(scratch / "processed")
            raw = root / params.get("raw_root", "data/raw") / str(params.get("campaign", ""))
            if params.get("campaign") and (raw / "campaign.json").exists():
                tidy.write(raw, scratch / "processed")  # the tidy table the notebook reads, re-derived from raw
        executed = scratch / "notebooks" / f"{i:02d}-{Path(notebook).stem}.ipynb"
        executed.parent.mkdir(parents=True, exist_ok=True)
        try:
            papermill.execute_notebook(str(root / notebook), str(executed), parameters=redirected, kernel_name=kernel,
                                       cwd=str(root), progress_bar=False)
        except Exception as exc:  # noqa: BLE001 - any failure of the notebook is the finding
            findings.append(Finding(notebook, f"could not be rerun with {params}: {str(exc).splitlines()[0][:200]} "
                                              f"(see {executed})"))
            continue
        for out in dict.fromkeys(outputs):
            original = root / out
            copy = scratch / "paper" / Path(out).relative_to(params["paper_dir"])
            compared += 1
            if not copy.exists():
                findings.append(Finding(out, f"not produced when {notebook} was rerun into {scratch}"))
            elif original.exists() and original.read_bytes() != copy.read_bytes():
                findings.append(Finding(out, f"differs from the copy {notebook} rebuilt from raw data "
                                             f"({_first_difference(original, copy)}; rebuilt copy: {copy})"))
    return findings, notes, compared
