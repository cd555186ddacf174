"""The questions record (``data/raw/<campaign>/questions.json``): a campaign's pre-registered questions, frozen.

Written once with the campaign's first sample and never edited (:mod:`perflab.questions`
says what its questions mean and how its digest is taken).

Format history:

- 1: ``format``, ``kind`` (``questions record``), ``study``, ``campaign``, ``digest`` (SHA-256
  of the questions as canonical JSON) and ``questions`` (each as declared), keys sorted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .versions import FormatError, migrate, parse_json

#: The format this perflab writes.
FORMAT = 1
KIND = "questions record"
#: The record's file name in a raw campaign directory.
NAME = "questions.json"


def dumps(study: str, campaign: str, digest: str, questions: list[dict[str, Any]]) -> str:
    """The record's text: the questions of ``campaign`` as declared, with their ``digest``."""
    return json.dumps({"format": FORMAT, "kind": KIND, "study": study, "campaign": campaign, "digest": digest,
                       "questions": questions}, indent=1, sort_keys=True) + "\n"


def parse(text: str, where: object) -> dict[str, Any]:
    """A record's ``text`` (from ``where``) checked to be a questions record of a format read."""
    doc = parse_json(text, where, KIND)
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        found = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
        raise FormatError(f"{where}: expected a {KIND}; found kind {found!r}: the file is not perflab's or was "
                          "replaced; restore it from a backup")
    return migrate(doc, where, KIND, FORMAT)


def read(path: str | Path) -> dict[str, Any]:
    """Read and check a ``questions.json``."""
    return parse(Path(path).read_text(encoding="utf-8"), path)
