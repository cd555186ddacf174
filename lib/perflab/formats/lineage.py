"""Lineage sidecars (``<output>.lineage.json``): what a figure, table, macro file or tidy table was made from.

What the fields mean and how a chain is walked: :mod:`perflab.report.lineage`.

Format history (the ``format`` key):

- 1: ``outputs``, ``inputs``, ``generator``, ``perflab``, ``created_utc``, ``details``.
- 2: adds ``notebook``, ``parameters``, ``campaigns``, ``hosts``, ``git`` and ``packages``.
  Format 1 is read as it is (its readers take the fields of format 2 as absent).

A tidy table's record (``data/processed/<campaign>.lineage.json``, written by
:func:`perflab.tidy.write`) is a sidecar of its own layout without a ``format`` key:
``output`` (file names), ``generator``, ``inputs`` (the raw campaign: ``raw_dir``,
``manifest_sha256``, ``samples``, ``quarantined``). It is read as it is.

A sidecar is embedded, as read, in the sidecars of what was made from its output, so a
reader never changes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .versions import check, parse_json, write_json

#: The format this perflab writes.
FORMAT = 2
KIND = "lineage sidecar"
#: The formats read.
READS = (1, 2)


def parse(text: str, where: object) -> dict[str, Any]:
    """A sidecar's ``text`` (from ``where``) checked: a JSON object of a format read, or a tidy table's record."""
    doc = parse_json(text, where, KIND)
    if isinstance(doc, dict) and "format" not in doc and "output" in doc:
        return doc
    return check(doc, where, KIND, READS)


def read(path: str | Path) -> dict[str, Any]:
    """Read and check the sidecar at ``path`` (:func:`parse`)."""
    return parse(Path(path).read_text(encoding="utf-8"), path)


def write(path: str | Path, record: Mapping[str, Any]) -> Path:
    """Write ``record`` to the sidecar ``path`` atomically."""
    return write_json(path, record)
