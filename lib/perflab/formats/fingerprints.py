"""Host fingerprints on disk (``blocks/<n>/fingerprint-<when>-<host>.json``): their ``format`` and checked reader.

Format history (formats 1 to 3 carried their version under ``schema``, format 4 under ``format``):

- 1: ``host``, ``address``, ``collected_at``, ``collect_seconds``, ``facts``, ``state``, ``versions``.
- 2: ``digest`` in every fingerprint and, in one that reused an earlier one's facts, ``facts_from``.
- 3: ``probe_from`` in a fingerprint that is another stored fingerprint's probe (the file of that
  probe, whose fields it carries unchanged).
- 4: the version key is named ``format`` like every other file's (``schema`` is gone). Formats 1
  to 3 are still read: their ``schema`` is read as ``format``.

What the fields mean and how they are collected: :mod:`perflab.hosts.fingerprint`.

A block's differences (``blocks/<n>/differences*.json``, written by the runner after each
block: ``block``, ``changed``, ``since_previous_block``, ``between_hosts_before``,
``between_hosts_after``, each a list of differences) carry no ``format`` key yet; they are
read as they are (:func:`read_differences`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from .versions import FormatError, migrate, parse_json

#: The format this perflab writes.
FORMAT = 4
KIND = "host fingerprint"


def _rename_schema(doc: dict[str, Any]) -> dict[str, Any]:
    doc.pop("schema", None)
    return doc


#: Format n -> n + 1 (formats 1 and 2 add only optional fields; 3 -> 4 renames the version key).
MIGRATIONS = {1: lambda d: d, 2: lambda d: d, 3: _rename_schema}
#: The formats read.
READS = (1, 2, 3, 4)


def version(fp: Mapping[str, Any]) -> Any:
    """A fingerprint's format: its ``format``, or for formats 1 to 3 its ``schema``."""
    return fp.get("format", fp.get("schema"))


def check(fp: Any, where: object) -> dict[str, Any]:
    """``fp`` checked to be a fingerprint of a format read, with a ``facts`` mapping, as format :data:`FORMAT`."""
    if not isinstance(fp, Mapping) or not isinstance(fp.get("facts"), Mapping):
        found = type(fp).__name__ if not isinstance(fp, Mapping) else "no 'facts' mapping"
        raise FormatError(f"{where}: expected a {KIND} with a 'facts' mapping; found {found}. "
                          "Collect it again with perflab.hosts.fingerprint.collect")
    return migrate({**fp, "format": version(fp)}, where, KIND, FORMAT, MIGRATIONS)


def read(path: str | Path) -> dict[str, Any]:
    """Read and check the fingerprint at ``path`` (as format :data:`FORMAT`)."""
    return check(parse_json(Path(path).read_text(encoding="utf-8"), path, KIND), path)


def read_differences(path: str | Path) -> dict[str, Any]:
    """Read a block's differences record (a JSON object)."""
    doc = parse_json(Path(path).read_text(encoding="utf-8"), path, "differences record")
    if not isinstance(doc, dict):
        raise FormatError(f"a differences record is a JSON object; found {type(doc).__name__}", file=path)
    return doc


def differences_text(record: Mapping[str, Any]) -> str:
    """A block's differences record as the text stored for it."""
    return json.dumps(record, indent=1, default=str) + "\n"


def dumps(fp: Mapping[str, Any]) -> str:
    """A fingerprint as the text stored for it (sorted keys, one trailing newline)."""
    return json.dumps(fp, indent=1, sort_keys=True) + "\n"
