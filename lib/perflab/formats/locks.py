"""Lock files: who holds a lock (a campaign directory's ``.lock``, the machine's measurement lock), as one line
of JSON.

A lock file's holder is read while another process may be writing it, so a reader takes
what does not parse as no holder at all. The measurement lock's holder carries ``format``
(:data:`perflab.hosts.measurelock.FORMAT`); a campaign directory's lock holds ``pid``, ``host``,
``command`` and ``started_utc`` (older runs wrote a bare pid).
"""

from __future__ import annotations

import json
from typing import Any, Mapping


def parse(text: str) -> Any:
    """The JSON value a lock file holds (None when it holds none that parses)."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def dumps(holder: Mapping[str, Any]) -> bytes:
    """A holder as the bytes written to its lock file (one line)."""
    return (json.dumps(holder) + "\n").encode()
