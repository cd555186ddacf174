"""Lineage sidecars: every figure, table and macro file says what it was made from.

``<output>.lineage.json`` lists the output files with their SHA-256, the inputs with theirs
(and, for a tidy table, the raw manifest it came from), the generator and the perflab
version, so a reviewer can walk from a PDF page back to raw bytes.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import __version__
from ..store import sha256_file


def _input_record(path: Path) -> dict[str, Any]:
    record: dict[str, Any] = {"path": path.as_posix(), "sha256": sha256_file(path)}
    upstream = path.with_name(f"{path.stem}.lineage.json")
    if upstream.exists() and upstream != path:
        record["lineage"] = json.loads(upstream.read_text())
    return record


def write(outputs: Sequence[str | Path], inputs: Sequence[str | Path], *, generator: str,
          details: Mapping[str, Any] | None = None) -> Path:
    """Write the sidecar of ``outputs[0]`` (covering all ``outputs``) and return its path."""
    outs = [Path(p) for p in outputs]
    record = {
        "outputs": [{"path": p.as_posix(), "sha256": sha256_file(p)} for p in outs],
        "inputs": [_input_record(Path(p)) for p in inputs],
        "generator": generator, "perflab": __version__,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **({"details": dict(details)} if details else {}),
    }
    sidecar = outs[0].with_name(f"{outs[0].stem}.lineage.json")
    tmp = sidecar.with_name(f".{sidecar.name}.tmp")
    tmp.write_text(json.dumps(record, indent=1, default=str) + "\n")
    os.replace(tmp, sidecar)
    return sidecar


def atomic_text(path: str | Path, text: str) -> Path:
    """Write a generated text file (table, macros) atomically and return its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path
