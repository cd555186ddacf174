"""Lineage sidecars: every figure, table and macro file says what it was made from.

``<output>.lineage.json`` lists the output files with their SHA-256; the inputs with
theirs (and, for a tidy table, the tidy stage's own record naming the raw manifest);
the generating notebook and its SHA-256; the notebook's parameters (the defaults cell
and the values papermill injected, or what :func:`parameters` was given); the campaigns and the host fingerprints behind the inputs; the
project's git commit; and the versions of Python, perflab and the numeric packages. A
reviewer walks from a PDF page back to raw bytes and hosts with ``perflab lineage FILE``
(:func:`chain`). The sidecar's format, its history, reader and writer: :mod:`perflab.formats.lineage`.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import __version__, store
from ..files import atomic_write
from ..formats import fingerprints, lineage as lineage_format
from ..formats.versions import FormatError
from ..store import sha256_file

FORMAT = lineage_format.FORMAT
#: Packages whose versions can change a number or a figure.
PACKAGES = ("numpy", "pandas", "scipy", "statsmodels", "scikit-posthocs", "pymannkendall", "matplotlib",
            "seaborn", "pyarrow", "papermill", "nbconvert")
_PARAMETERS: dict[str, Any] = {}


def parameters(**values: Any) -> None:
    """Record the running notebook's parameters in every sidecar this process writes from now on.

    A notebook calls it once after its parameters cell, e.g.
    ``lineage.parameters(campaign=campaign, metric=metric, factor=factor)``.
    """
    _PARAMETERS.clear()
    _PARAMETERS.update(values)


def _papermill_parameters() -> dict[str, Any]:
    """In a kernel papermill runs: the parameters cell's values, overridden by the injected ones."""
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    history = list(shell.user_ns.get("In", [])) if shell is not None else []
    injected = [i for i, src in enumerate(history) if isinstance(src, str) and src.startswith("# Parameters")]
    if not injected:
        return {}
    i = injected[-1]
    return {**_literals(history[i - 1] if i > 0 else ""), **_literals(history[i])}


def _literals(source: str) -> dict[str, Any]:
    """``name = <literal>`` assignments of a cell's source."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return out


def fingerprint_id(fp: Mapping[str, Any]) -> str:
    """A host fingerprint's identity: host name and the first 12 hex digits of its facts' SHA-256."""
    facts = json.dumps(fp.get("facts", {}), sort_keys=True, default=str).encode()
    return f"{fp.get('host', 'unknown')}-{hashlib.sha256(facts).hexdigest()[:12]}"


def hosts(raw_dir: str | Path) -> dict[str, list[str]]:
    """Fingerprint id -> fingerprint files (relative to ``raw_dir``'s parent) of a raw campaign."""
    raw_dir = Path(raw_dir)
    out: dict[str, list[str]] = {}
    for path in sorted(raw_dir.glob("blocks/*/fingerprint-*.json")):
        try:
            ident = fingerprint_id(fingerprints.read(path))
        except FormatError:
            ident = f"unreadable-{path.name}"
        out.setdefault(ident, []).append(path.as_posix())
    return out


@functools.lru_cache(maxsize=8)
def git_state(cwd: str = ".") -> dict[str, Any] | None:
    """The project's git commit and whether its tracked files had uncommitted changes (None outside git).

    Cached per directory and process: a notebook's outputs all record the state it started with.
    """
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def packages() -> dict[str, str]:
    """Versions of Python, perflab and :data:`PACKAGES` (those installed)."""
    out = {"python": platform.python_version(), "perflab": __version__}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _input_record(path: Path) -> dict[str, Any]:
    record: dict[str, Any] = {"path": path.as_posix(), "sha256": sha256_file(path)}
    upstream = path.with_name(f"{path.stem}.lineage.json")
    if upstream.exists() and upstream != path:
        record["lineage"] = lineage_format.read(upstream)
    return record


def _raw_dirs(inputs: Sequence[Mapping[str, Any]]) -> list[Path]:
    """Raw directories behind the inputs: a tidy table's raw campaign, or the raw directory holding an input."""
    found = []
    for record in inputs:
        tidy_inputs = record.get("lineage", {}).get("inputs")
        raw = tidy_inputs.get("raw_dir") if isinstance(tidy_inputs, dict) else None
        if raw:
            found.append(Path(raw))
            continue
        for parent in Path(record["path"]).parents:
            if (parent / store.MANIFEST).exists():
                found.append(parent)
                break
    return list(dict.fromkeys(found))


def write(outputs: Sequence[str | Path], inputs: Sequence[str | Path], *, generator: str,
          details: Mapping[str, Any] | None = None) -> Path:
    """Write the sidecar of ``outputs[0]`` (covering all ``outputs``) and return its path.

    ``generator`` is the notebook (a path relative to the project root) or function that
    made the outputs; a notebook's SHA-256 is recorded so that a changed notebook shows.
    """
    outs = [Path(p) for p in outputs]
    ins = [_input_record(Path(p)) for p in inputs]
    raw_dirs = _raw_dirs(ins)
    record = {
        "format": FORMAT,
        "outputs": [{"path": p.as_posix(), "sha256": sha256_file(p)} for p in outs],
        "inputs": ins,
        "generator": generator,
        **({"notebook": {"path": generator, "sha256": sha256_file(Path(generator))}}
           if Path(generator).suffix == ".ipynb" and Path(generator).is_file() else {}),
        "parameters": dict(_PARAMETERS) or _papermill_parameters(),
        "campaigns": [{"raw_dir": d.as_posix(), "manifest_sha256": sha256_file(d / store.MANIFEST)
                       if (d / store.MANIFEST).exists() else None} for d in raw_dirs],
        "hosts": {k: v for d in raw_dirs for k, v in hosts(d).items()},
        "git": git_state(os.getcwd()),
        "packages": packages(),
        "perflab": __version__,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **({"details": dict(details)} if details else {}),
    }
    return lineage_format.write(sidecar_of(outs[0]), record)


def sidecar_of(path: str | Path) -> Path:
    """The lineage sidecar of an output file (itself, when given a sidecar)."""
    path = Path(path)
    return path if path.name.endswith(".lineage.json") else path.with_name(f"{path.stem}.lineage.json")


def _inside(path: Path, root: Path) -> bool:
    """Whether ``path`` (relative to ``root``, or absolute) resolves inside the project ``root``: a sidecar's path
    that does not is named in the chain, never opened."""
    return (root / path).resolve().is_relative_to(root.resolve())


def _status(path: Path, digest: str | None, root: Path) -> str:
    full = root / path
    if not _inside(path, root):
        return "OUTSIDE the project, not read"
    if not full.exists():
        return "MISSING"
    if digest is None:
        return "present"
    return "matches" if sha256_file(full) == digest else "CHANGED since recorded"


def chain(path: str | Path, root: str | Path = ".") -> list[str]:
    """The lines ``perflab lineage`` prints: ``path`` back through its inputs to raw files and hosts."""
    root, path = Path(root), Path(path)
    sidecar = sidecar_of(path)
    if not (root / sidecar).exists():
        raise FileNotFoundError(f"{path}: no lineage sidecar {sidecar.name} next to it; lineage is recorded for "
                                "figures, tables and macros under paper/ and tables under data/processed/")
    return _chain(lineage_format.read(root / sidecar), sidecar, root, 0)


def _chain(record: Mapping[str, Any], sidecar: Path, root: Path, depth: int) -> list[str]:
    pad = "  " * depth
    lines = []
    if "outputs" in record:
        for out in record["outputs"]:
            lines.append(f"{pad}{out['path']}  sha256 {out['sha256'][:12]} "
                         f"({_status(Path(out['path']), out['sha256'], root)})")
    else:
        lines.append(f"{pad}{', '.join(record.get('output', []))} (in {sidecar.parent.as_posix()})")
    nb = record.get("notebook")
    made = f"{pad}  made by {record.get('generator', '?')}"
    if nb:
        made += f" (sha256 {nb['sha256'][:12]}, {_status(Path(nb['path']), nb['sha256'], root)})"
    lines.append(made + f" on {record.get('created_utc', '?')}")
    if record.get("parameters"):
        lines.append(f"{pad}  parameters: " + ", ".join(f"{k}={v!r}" for k, v in record["parameters"].items()))
    git = record.get("git")
    pk = record.get("packages") or {"perflab": record.get("perflab", "?")}
    lines.append(f"{pad}  code: " + (f"git {git['commit'][:12]}{' with uncommitted changes' if git['dirty'] else ''}"
                                     if git else "git commit not recorded") + "; "
                 + ", ".join(f"{k} {v}" for k, v in pk.items()))
    inputs = record.get("inputs", [])
    if isinstance(inputs, dict):  # a tidy table's record: the raw campaign it was parsed from
        raw = Path(inputs["raw_dir"])
        status = _status(raw / store.MANIFEST, inputs.get("manifest_sha256"), root)
        lines.append(f"{pad}  from raw campaign {raw.as_posix()}: {inputs.get('samples', '?')} samples, "
                     f"{inputs.get('quarantined', 0)} quarantined; {store.MANIFEST} sha256 "
                     f"{str(inputs.get('manifest_sha256'))[:12]} ({status})")
        lines += _raw_lines(raw, root, pad + "    ")
        return lines
    for entry in inputs:
        p = Path(entry["path"])
        lines.append(f"{pad}  input {p.as_posix()}  sha256 {entry['sha256'][:12]} "
                     f"({_status(p, entry['sha256'], root)})")
        if not _inside(p, root):
            continue
        upstream = entry.get("lineage")
        if upstream is None and (root / sidecar_of(p)).exists() and sidecar_of(p) != p:
            upstream = lineage_format.read(root / sidecar_of(p))
        if upstream:
            lines += _chain(upstream, sidecar_of(p), root, depth + 2)
        elif any((parent / store.MANIFEST).exists() for parent in (root / p).parents):
            raw = next(parent for parent in p.parents if (root / parent / store.MANIFEST).exists())
            listed = store.read_manifest(root / raw).get(p.relative_to(raw).as_posix())
            lines.append(f"{pad}    raw file in {raw.as_posix()}: "
                         + ("listed in its manifest" if listed else f"NOT listed in {store.MANIFEST}")
                         + (" and " + _status(p, listed, root) if listed else ""))
    return lines


def _raw_lines(raw: Path, root: Path, pad: str) -> list[str]:
    if not _inside(raw, root):
        return [f"{pad}raw directory OUTSIDE the project, not read"]
    if not (root / raw).is_dir():
        return [f"{pad}raw directory MISSING"]
    problems = store.verify(root / raw)
    lines = [f"{pad}raw files: {len(store.read_manifest(root / raw))} in the manifest; "
             + ("all match" if not problems else f"{len(problems)} do not match (run `perflab verify {raw}`)")]
    for ident, files in hosts(root / raw).items():
        first = Path(files[0]).relative_to(root).as_posix() if Path(files[0]).is_relative_to(root) else files[0]
        lines.append(f"{pad}host {ident}: {len(files)} fingerprint(s), e.g. {first}")
    return lines


def atomic_text(path: str | Path, text: str) -> Path:
    """Write a generated text file (table, macros) atomically and return its path."""
    return atomic_write(path, text)
