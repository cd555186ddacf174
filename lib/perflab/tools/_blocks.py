"""One run per output: parsers refuse two runs' outputs concatenated.

A sample's raw file must hold one run of the tool. Two runs' outputs written one after the
other (a rerun appended to the same file, a wrapper that retried) would otherwise parse as
one, keeping the first run or the last; a second run's banner or result block after the
first is refused instead. Each parser names the markers its tool prints once per run.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .base import ParseError, extract_json

_DECODER = json.JSONDecoder()
#: A line after a JSON document that belongs to another JSON document (a brace, a bracket or a quoted key).
_JSON_LINE = re.compile(r"^\s*(?:[{}\[\]]|\"[^\"\n]*\"\s*:)", re.M)


def once(text: str, *markers: str | re.Pattern[str], source: str) -> None:
    """Raise :class:`ParseError` when a marker (text, or a compiled pattern) occurs more than once in ``text``."""
    for marker in markers:
        n = text.count(marker) if isinstance(marker, str) else sum(1 for _ in marker.finditer(text))
        if n > 1:
            shown = marker if isinstance(marker, str) else marker.pattern
            raise ParseError(source, f"one run's output ({shown!r} once)",
                             f"{n} times: two runs' outputs concatenated, or a second run's result after the first")


def one_json(text: str, *markers: str | re.Pattern[str], source: str) -> Any:
    """The JSON document in ``text`` (as :func:`extract_json`), refusing a second document or a part of one after it.

    ``markers`` are keys the tool writes once per document (checked with :func:`once`).
    """
    once(text, *markers, source=source)
    start = text.find("{")
    try:
        doc, end = _DECODER.raw_decode(text, start) if start >= 0 else (None, -1)
    except json.JSONDecodeError:  # bare nan and the like, or no complete object: extract_json says which
        return extract_json(text, source=source)
    rest = _JSON_LINE.search(text, end)
    if rest:
        line = text[rest.start():].lstrip().splitlines()[0][:60]
        raise ParseError(source, "one JSON document (one run's output)",
                         f"more JSON after it ({line!r}): two runs' outputs concatenated?")
    return doc
