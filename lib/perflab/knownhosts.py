"""known_hosts files as OpenSSH writes them, markers included: the keys a host may offer and the revoked ones.

Lines are ``names keytype base64 [comment]`` (names may be hashed, ``|1|salt|hash``, or
``[address]:port``). A line starting with ``@revoked`` lists a key that must never be
accepted, for any host; ``@cert-authority`` lines name a CA for host certificates, which
perflab does not use (they are skipped, so such a host's own key must be listed). A line
that is not a host key is an error naming the file and line, as OpenSSH would skip it
silently and leave the host unchecked.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from pathlib import Path

import paramiko
from paramiko.pkey import UnknownKeyType

from .errors import UserError


class KnownHostsError(UserError):
    """A known_hosts file cannot be read or holds a line that is not a host key."""


@dataclass
class KnownHosts:
    """The usable lines of a known_hosts file: (names, key) pairs, the revoked keys, CA lines skipped."""

    path: Path
    entries: list[tuple[list[str], paramiko.PKey]] = field(default_factory=list)
    revoked: list[paramiko.PKey] = field(default_factory=list)
    authorities: int = 0

    def is_revoked(self, key: paramiko.PKey) -> bool:
        """True when ``key`` is listed with ``@revoked``."""
        return any(key.get_name() == r.get_name() and key.asbytes() == r.asbytes() for r in self.revoked)

    def add_to(self, keys: paramiko.HostKeys) -> None:
        """Add every listed key that is not revoked to ``keys`` (a client's host keys)."""
        for names, key in self.entries:
            if not self.is_revoked(key):
                for name in names:
                    keys.add(name, key.get_name(), key)


def _key(path: Path, number: int, keytype: str, data: str) -> paramiko.PKey | None:
    """The key of one line; ``None`` for a key type paramiko does not know (OpenSSH would not offer it either)."""
    try:
        blob = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise KnownHostsError(f"{path}:{number}: the key of type {keytype} is not base64; remove the line or "
                              "replace it with `ssh-keyscan` output") from None
    try:
        return paramiko.PKey.from_type_string(keytype, blob)
    except UnknownKeyType:
        return None
    except (paramiko.SSHException, ValueError, TypeError, IndexError) as exc:
        raise KnownHostsError(f"{path}:{number}: not a valid {keytype} key ({exc}); remove the line or replace "
                              "it with `ssh-keyscan` output") from None


def load(path: str | Path) -> KnownHosts:
    """Read ``path`` (an absent file lists no key); :class:`KnownHostsError` names a line that is not a host key."""
    path = Path(path)
    out = KnownHosts(path)
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return out
    except OSError as exc:
        raise KnownHostsError(f"{path}: cannot read the known_hosts file: {exc.strerror}") from None
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        marker = fields.pop(0) if fields[0].startswith("@") else None
        if marker not in (None, "@revoked", "@cert-authority"):
            raise KnownHostsError(f"{path}:{number}: unknown marker {marker}; OpenSSH knows @revoked and "
                                  "@cert-authority")
        if len(fields) < 3:
            raise KnownHostsError(f"{path}:{number}: expected `[marker] names keytype key`, found "
                                  f"{len(fields) + (marker is not None)} field(s); remove or complete the line")
        names, keytype, data = fields[:3]
        if marker == "@cert-authority":
            out.authorities += 1
            continue
        key = _key(path, number, keytype, data)
        if key is None:
            continue
        if marker == "@revoked":
            out.revoked.append(key)
        else:
            out.entries.append((names.split(","), key))
    return out
