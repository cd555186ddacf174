"""An RO-Crate's metadata (``ro-crate-metadata.json``, JSON-LD of RO-Crate 1.1), as ``perflab export`` writes
it and ``perflab import`` reads it back; the crate's version is its ``conformsTo``
(:mod:`perflab.crate` checks it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .versions import FormatError, parse_json


def read(path: str | Path) -> dict[str, Any]:
    """The metadata at ``path`` as its JSON object."""
    doc = parse_json(Path(path).read_text(encoding="utf-8"), path, "RO-Crate metadata")
    if not isinstance(doc, dict):
        raise FormatError(f"RO-Crate metadata is a JSON object; found {type(doc).__name__}", file=path)
    return doc


def dumps(doc: dict[str, Any]) -> str:
    """The metadata's text (UTF-8 as it is, one trailing newline)."""
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
