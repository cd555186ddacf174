"""Export and import a campaign or a published study as an RO-Crate 1.1 (https://w3id.org/ro/crate/1.1).

An export is a directory holding ``ro-crate-metadata.json`` and the files at their
project paths: for a campaign, its raw directory (samples, manifest, fingerprints, the
executed experiment notebook), the campaign file, the processed tables, the executed
analysis notebook and the paper outputs with their lineage; for a study, its digitized
published tables, their manifest and the re-check outputs. ``environment.lock.txt``
lists the Python packages (name==version) of the environment that exported it.

Every file is a ``File`` entity with its size and SHA-256 (the schema.org ``sha256``
term). :func:`check` verifies a crate against its metadata and each raw directory
against its own manifest; :func:`import_crate` then copies the raw data into the
project's ``data/raw/``, where the pipeline picks it up. Raw data already present is
never overwritten: identical data is accepted, different data refused.
"""

from __future__ import annotations

import functools
import platform
import shutil
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from . import __version__, store
from .errors import UserError
from .files import atomic_write
from .formats import crate as crate_format, records
from .formats.versions import FormatError

METADATA = "ro-crate-metadata.json"
CONTEXT = ["https://w3id.org/ro/crate/1.1/context", {"sha256": "http://schema.org/sha256"}]
SPEC = "https://w3id.org/ro/crate/1.1"
LOCK = "environment.lock.txt"
_FORMATS = {".json": "application/json", ".csv": "text/csv", ".md": "text/markdown", ".tex": "application/x-tex",
            ".pdf": "application/pdf", ".png": "image/png", ".ipynb": "application/x-ipynb+json",
            ".parquet": "application/vnd.apache.parquet", ".yaml": "application/yaml", ".txt": "text/plain",
            ".jsonl": "application/jsonl", ".sha256": "text/plain"}


class CrateError(UserError, ValueError):
    """A crate cannot be written, or does not check (a file missing, altered or in conflict)."""


def _parts(root: Path, name: str) -> tuple[str, list[Path]]:
    """What to export for ``name``: ("campaign" or "study", project-relative paths of its files)."""
    raw = root / "data/raw" / name
    published = root / "data/raw/published"
    if (raw / "campaign.json").exists():
        files = sorted(p.relative_to(root) for p in raw.rglob("*") if p.is_file() and not p.name.startswith("."))
        source = records.read_campaign(raw / "campaign.json").source
        if source and (root / source).is_file() and not Path(source).is_absolute():
            files.append(Path(source))
        kind = "campaign"
    elif sorted(published.glob(f"{name}-*.csv")):
        files = [p.relative_to(root) for p in sorted(published.glob(f"{name}-*"))]
        files += [p.relative_to(root) for p in (published / store.MANIFEST, published / "ORIGIN.md") if p.exists()]
        kind = "study"
    else:
        raise CrateError(f"{name}: neither a campaign (no data/raw/{name}/campaign.json) nor a published study "
                         f"(no data/raw/published/{name}-*.csv) under {root}")
    patterns = [f"data/processed/{name}.*", f"reports/notebooks/{name}-*.ipynb",
                *(f"paper/{d}/{name}-*" for d in ("figures", "tables", "macros", "sections"))]
    files += sorted(p.relative_to(root) for pat in patterns for p in root.glob(pat) if p.is_file())
    return kind, list(dict.fromkeys(files))


def _lock() -> str:
    dists = sorted({(d.metadata["Name"], d.version) for d in metadata.distributions() if d.metadata["Name"]},
                   key=lambda nv: nv[0].lower())
    return (f"# Python {platform.python_version()} on {platform.machine()}; perflab {__version__}\n"
            + "".join(f"{n}=={v}\n" for n, v in dists))


def export(name: str, out_dir: str | Path, *, root: str | Path = ".") -> Path:
    """Write the RO-Crate of campaign or study ``name`` to ``out_dir/<name>/``; return that directory.

    The raw data is verified against its manifest first; altered data is not exported.
    """
    root = Path(root)
    kind, files = _parts(root, name)
    for raw in sorted({root / Path(*f.parts[:3]) for f in files if f.parts[:2] == ("data", "raw")}):
        problems = store.verify(raw)
        if problems:
            raise CrateError(f"{raw}: raw data does not match its manifest ({problems[0]}; {len(problems)} in all); "
                             "not exported")
    crate = Path(out_dir) / name
    if crate.exists():
        raise CrateError(f"{crate}: exists; choose another output directory (an export is written once)")
    for rel in files:
        (crate / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, crate / rel)
    (crate / LOCK).write_text(_lock())
    files.append(Path(LOCK))
    entities = [{"@id": rel.as_posix(), "@type": "File", "name": rel.name, "contentSize": (crate / rel).stat().st_size,
                 "sha256": store.sha256_file(crate / rel),
                 **({"encodingFormat": _FORMATS[rel.suffix]} if rel.suffix in _FORMATS else {})} for rel in files]
    what = (f"raw data of campaign {name} (samples, manifest, host fingerprints, executed experiment notebook), "
            "its processed tables, executed analysis notebook and paper outputs" if kind == "campaign" else
            f"digitized published results of study {name}, their manifest and re-check outputs")
    graph: list[dict[str, Any]] = [
        {"@id": METADATA, "@type": "CreativeWork", "conformsTo": {"@id": SPEC}, "about": {"@id": "./"}},
        {"@id": "./", "@type": "Dataset", "name": f"perflab {kind} {name}", "description": f"The {what}.",
         "identifier": name, "additionalType": kind,
         "datePublished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
         "license": {"@id": "https://spdx.org/licenses/CC-BY-4.0"},
         "publisher": {"@id": "#perflab"}, "hasPart": [{"@id": e["@id"]} for e in entities]},
        {"@id": "https://spdx.org/licenses/CC-BY-4.0", "@type": "CreativeWork", "name": "CC BY 4.0"},
        {"@id": "#perflab", "@type": "SoftwareApplication", "name": "perflab", "version": __version__},
        *entities,
    ]
    (crate / METADATA).write_text(crate_format.dumps({"@context": CONTEXT, "@graph": graph}))
    return crate


def _metadata(crate: Path) -> tuple[dict, list[dict]]:
    """The root dataset and the File entities of a crate's metadata, after checking its shape."""
    path = crate / METADATA
    if not path.is_file():
        raise CrateError(f"{crate}: no {METADATA}; is this an RO-Crate written by `perflab export`?")
    try:
        doc = crate_format.read(path)
    except FormatError as exc:
        raise CrateError(str(exc)) from None
    graph = {e.get("@id"): e for e in doc.get("@graph", [])}
    descriptor = graph.get(METADATA, {})
    if descriptor.get("conformsTo", {}).get("@id") != SPEC or descriptor.get("about", {}).get("@id") != "./":
        raise CrateError(f"{path}: the metadata descriptor does not declare conformsTo {SPEC} about ./")
    dataset = graph.get("./")
    if not dataset or dataset.get("@type") != "Dataset":
        raise CrateError(f"{path}: no root data entity ./ of type Dataset")
    files = [graph.get(part["@id"], {"@id": part["@id"]}) for part in dataset.get("hasPart", [])]
    return dataset, files


def check(crate: str | Path) -> list[str]:
    """Problems of a crate: files missing, altered or not described, raw data not matching its manifest."""
    crate = Path(crate)
    _, files = _metadata(crate)
    problems = []
    described = set()
    for entity in files:
        rel = Path(entity["@id"])
        described.add(rel.as_posix())
        if rel.is_absolute() or ".." in rel.parts:
            problems.append(f"{rel}: a path outside the crate")
            continue
        path = crate / rel
        if not path.is_file():
            problems.append(f"{rel}: described in {METADATA} but missing")
        elif entity.get("sha256") != store.sha256_file(path):
            problems.append(f"{rel}: SHA-256 differs from {METADATA} (the file was altered)")
    for path in sorted(crate.rglob("*")):
        name = path.relative_to(crate).as_posix()
        if path.is_file() and name != METADATA and name not in described:
            problems.append(f"{name}: in the crate but not described in {METADATA}")
    for raw in sorted({Path(*Path(f).parts[:3]) for f in described if Path(f).parts[:2] == ("data", "raw")}):
        if (crate / raw / "campaign.json").exists():  # a whole campaign: every listed file must be there
            problems += [f"{raw.as_posix()}/{p}" for p in store.verify(crate / raw)]
            continue
        listed = store.read_manifest(crate / raw)  # part of the published data: the files exported must match
        for f in sorted(f for f in described if Path(f).parent == raw and Path(f).name != store.MANIFEST):
            if Path(f).name not in listed:
                problems.append(f"{f}: not in {raw.as_posix()}/{store.MANIFEST}")
            elif (crate / f).is_file() and listed[Path(f).name] != store.sha256_file(crate / f):
                problems.append(f"{f}: checksum differs from {raw.as_posix()}/{store.MANIFEST}")
    return problems


def import_crate(crate: str | Path, *, root: str | Path = ".") -> list[str]:
    """Check ``crate`` and copy its raw data (and campaign file) into the project at ``root``; return notes.

    Raw files already present must be identical; nothing in ``data/raw/`` is overwritten.
    """
    crate, root = Path(crate), Path(root)
    problems = check(crate)
    if problems:
        raise CrateError(f"{crate}: does not check; nothing imported:\n  " + "\n  ".join(problems[:20]))
    dataset, files = _metadata(crate)
    wanted = [Path(e["@id"]) for e in files
              if Path(e["@id"]).parts[:2] == ("data", "raw") or Path(e["@id"]).parts[:1] == ("campaigns",)]
    conflicts = [rel for rel in wanted if (root / rel).exists()
                 and store.sha256_file(root / rel) != store.sha256_file(crate / rel)
                 and rel.name != store.MANIFEST]
    if conflicts:
        raise CrateError(f"{root}: already holds different versions of {len(conflicts)} file(s), e.g. "
                         f"{conflicts[0]}; raw data is never overwritten: move the old data away first")
    copied = 0
    for rel in wanted:
        target = root / rel
        if target.exists() and rel.name != store.MANIFEST:
            continue
        if rel.name == store.MANIFEST and target.exists():
            _merge_manifest(crate / rel, target)
            continue
        atomic_write(target, functools.partial(shutil.copy2, crate / rel))
        copied += 1
    notes = [f"{dataset.get('name')}: checked {len(files)} files; copied {copied} raw and campaign files into "
             f"{root} ({len(wanted) - copied} already present and identical)"]
    name = dataset.get("identifier")
    config = root / "config/config.yaml"
    if dataset.get("additionalType") == "campaign" and config.exists() and f"{name}:" not in config.read_text():
        notes.append(f"to analyse it, add campaign {name} to {config} (its campaign file and analysis); "
                     "the experiment is not rerun because its raw data is present")
    return notes


def _merge_manifest(source: Path, target: Path) -> None:
    """Add to ``target`` the manifest lines of ``source`` it lacks; refuse lines that contradict it."""
    have = store.read_manifest(target.parent)
    new = store.read_manifest(source.parent)
    clash = [n for n in new if n in have and have[n] != new[n]]
    if clash:
        raise CrateError(f"{target}: lists {clash[0]} with another SHA-256 than the crate; not imported")
    extra = "".join(f"{d}  {n}\n" for n, d in new.items() if n not in have)
    if extra:
        with open(target, "a") as fh:
            fh.write(extra)
