"""The quiet gate's record (``blocks/<b>/quiet[-g<group>].json``): how long the gate waited before a block and
whether the machine was quiet.

Formats 1 to 3 (the format of the contention record, whose history :mod:`perflab.hosts.contention`
gives) are read as they are: a field a format lacks is absent. Committed raw data holds
formats 1 and 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from .versions import check, parse_json

#: The format this perflab writes (of the gate record and of a sample's contention record).
FORMAT = 3
KIND = "quiet gate record"
#: The formats read.
READS = (1, 2, 3)


def read_gate(path: str | Path) -> dict[str, Any]:
    """Read and check a gate record."""
    return check(parse_json(Path(path).read_text(encoding="utf-8"), path, KIND), path, KIND, READS)


def gate_text(record: Mapping[str, Any]) -> str:
    """A gate record as the text stored for it."""
    return json.dumps(record, indent=1) + "\n"
