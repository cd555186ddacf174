"""Standalone scripts of this project that an adapter runs on a host: their path there, and the service
command that puts them in place (each script travels as a base64 argument, so nothing is pasted into a shell)."""

from __future__ import annotations

import base64
import hashlib


def host_path(name: str, source: bytes) -> str:
    """Where a host keeps script ``name``: relative to its login directory, named by the script's digest, so a
    command names the exact version of the script it ran."""
    return f".perflab/{name}-{hashlib.sha256(source).hexdigest()[:16]}.py"


def install(label: str, *files: tuple[str, bytes]) -> tuple[str, ...]:
    """A service command writing each (path, source) of ``files`` (each atomically), then idling until stopped.

    One service for all of a tool's scripts: the tool's ``ready`` test can then wait for all of them."""
    args = [a for path, source in files for a in (path, base64.b64encode(source).decode())]
    return ("sh", "-c", 'while [ $# -gt 1 ]; do mkdir -p "${1%/*}" && printf %s "$2" | base64 -d > "$1.$$" && '
            'mv -f "$1.$$" "$1" || exit 1; shift 2; done; exec sleep infinity', label, *args)
