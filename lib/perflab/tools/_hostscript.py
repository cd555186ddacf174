"""Standalone scripts of this project that an adapter runs on a host: their path there, and the service
command that puts them in place (the script travels as a base64 argument, so nothing is pasted into a shell)."""

from __future__ import annotations

import base64
import hashlib


def host_path(name: str, source: bytes) -> str:
    """Where a host keeps script ``name``: relative to its login directory, named by the script's digest, so a
    command names the exact version of the script it ran."""
    return f".perflab/{name}-{hashlib.sha256(source).hexdigest()[:16]}.py"


def install(path: str, source: bytes, label: str) -> tuple[str, ...]:
    """A service command writing ``source`` to ``path`` (atomically) and then idling until it is stopped."""
    return ("sh", "-c", 'mkdir -p "${1%/*}" && printf %s "$2" | base64 -d > "$1.$$" && mv -f "$1.$$" "$1" '
            "&& exec sleep infinity", label, path, base64.b64encode(source).decode())
