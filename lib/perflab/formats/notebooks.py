"""Notebooks (``notebooks/*.ipynb``, nbformat 4 JSON): the analysis templates, their ``metadata.perflab``
block (name pattern, outputs, declared parameters) and their cells."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .versions import FormatError, parse_json


def read(path: str | Path) -> dict[str, Any]:
    """The notebook at ``path`` as its JSON object."""
    doc = parse_json(Path(path).read_text(encoding="utf-8"), path, "notebook")
    if not isinstance(doc, dict):
        raise FormatError(f"a notebook is a JSON object; found {type(doc).__name__}", file=path)
    return doc


def perflab_metadata(path: str | Path) -> Any:
    """The notebook's ``metadata.perflab`` block (None when it has none)."""
    return read(path).get("metadata", {}).get("perflab")
