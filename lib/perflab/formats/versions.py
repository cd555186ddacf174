"""The version check every reader of ``formats`` shares: a file's ``format``, its migrations, its JSON.

A reader names the versions it reads; a version it does not know (a file a newer perflab
wrote) is refused with the file and what to do. An older version is brought up to the
current one by the reader's migrations, one step at a time (asv's ``update_json`` idea:
``migrations[n]`` turns a document of format ``n`` into one of format ``n + 1``), so the code
after the reader sees one shape. Files on disk are never rewritten by a migration.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Mapping

from ..errors import UserError
from ..files import atomic_write

#: A migration: a document of format n -> the same document in format n + 1.
Migration = Callable[[dict[str, Any]], dict[str, Any]]


class FormatError(UserError, ValueError):
    """A project file of a format this perflab does not read, or not of its kind; the message names the file."""


def refuse(where: object, kind: str, version: object, reads: tuple[int, ...] | set[int], *,
           error: type[FormatError] = FormatError) -> FormatError:
    """The one-line ``error`` for ``kind`` at ``where`` (its ``file``) of ``version``, naming the versions read
    and what to do."""
    return error(f"{kind} of format {version!r}; this perflab reads format {' or '.join(map(str, sorted(reads)))}. "
                 "Use the perflab version that wrote it (see its 'perflab' field), or upgrade perflab.", file=where)


def check(doc: Any, where: object, kind: str, reads: tuple[int, ...] | set[int]) -> dict[str, Any]:
    """``doc`` when it is a JSON object whose ``format`` is one of ``reads`` (read as it is: no migration)."""
    if not isinstance(doc, dict):
        raise FormatError(f"{kind} must be a JSON object; found {type(doc).__name__}", file=where)
    found = doc.get("format")
    if isinstance(found, bool) or found not in reads:
        raise refuse(where, kind, found, reads)
    return doc


def migrate(doc: dict[str, Any], where: object, kind: str, current: int,
            migrations: Mapping[int, Migration] | None = None, *, version: object = None) -> dict[str, Any]:
    """``doc`` (of format ``version``, by default its ``format``) brought to format ``current`` by ``migrations``
    (its ``format`` follows each step).

    Versions read are ``current`` and every older one with a migration chain up to it; any
    other is refused with :func:`refuse`."""
    migrations = migrations or {}
    reads = {current} | {n for n in migrations if all(m in migrations for m in range(n, current))}
    found = doc.get("format") if version is None else version
    if isinstance(found, bool) or not isinstance(found, int) or found not in reads:
        raise refuse(where, kind, found, reads)
    while found < current:
        doc = migrations[found](dict(doc))
        found += 1
        if "format" in doc:
            doc["format"] = found
    return doc


def parse_json(text: str | bytes, where: object, kind: str) -> Any:
    """The JSON value of ``text`` (``NaN`` read as a float); an unreadable file is a :class:`FormatError`."""
    try:
        return json.loads(text, parse_constant=lambda c: math.nan)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line = exc.lineno if isinstance(exc, json.JSONDecodeError) else None
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise FormatError(f"{kind} is not valid JSON ({reason}); restore or regenerate the file", file=where,
                          line=line) from None


def load_json(path: str | Path, kind: str, current: int, migrations: Mapping[int, Migration] | None = None, *,
              text: str | None = None) -> dict[str, Any]:
    """The JSON object at ``path`` (or its ``text``), checked to be ``kind`` of a format read and migrated to
    ``current``."""
    doc = parse_json(Path(path).read_text(encoding="utf-8") if text is None else text, path, kind)
    if not isinstance(doc, dict):
        raise FormatError(f"{kind} must be a JSON object; found {type(doc).__name__}", file=path)
    return migrate(doc, path, kind, current, migrations)


def write_json(path: str | Path, doc: Any, *, indent: int | None = 1, sort_keys: bool = False) -> Path:
    """Write ``doc`` as JSON (one trailing newline) to ``path`` atomically."""
    return atomic_write(path, json.dumps(doc, indent=indent, sort_keys=sort_keys, default=str) + "\n")
