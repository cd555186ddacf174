"""A lab's state file (``<state root>/<lab>/state.json``): every resource of a lab that is up, named before it
is made, so that ``perflab lab down`` removes exactly those.

Format history (the key was ``version`` in formats 1 and 2 as first written, ``format`` since; a
file without either is format 1): 1, the first layout (removed by its own teardown); 2, the
spec, the address slots and the resources per host. :func:`perflab.hosts.lab.state.read_state` refuses
another format than 2 with the way to remove the lab; ``lab down`` reads format 1 too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The format this perflab writes.
FORMAT = 2


def read(path: str | Path) -> dict[str, Any] | None:
    """The state file at ``path`` (None when it is missing or does not parse: the lab is not up)."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def version(state: dict[str, Any]) -> object:
    """The format of a state file: its ``format`` (``version`` before the key was renamed; none: format 1)."""
    return state.get("format", state.get("version", 1))


def dumps(state: dict[str, Any]) -> str:
    """A state file's text."""
    return json.dumps(state, indent=1)
