"""The user's ``~/.ssh/config`` is not followed: perflab connects where the inventory says, and says so.

OpenSSH (and Fabric by default) apply a ``Host`` entry's ``HostName``, ``Port`` and ``User`` to
any connection whose name matches: an alias meant for another machine then receives the
commands of a campaign's host. perflab turns that loading off (:data:`FABRIC_OVERRIDES`) and
:func:`redirect` names what an entry would have changed, so the runner logs one warning line
per host instead of silently going elsewhere.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import paramiko

from ..inventory import HostEntry

log = logging.getLogger(__name__)

#: Fabric configuration overrides: never read ``~/.ssh/config`` or ``/etc/ssh/ssh_config``.
FABRIC_OVERRIDES = {"load_ssh_configs": False}


def user_config() -> Path:
    """The user's OpenSSH client configuration file (``$HOME/.ssh/config``)."""
    return Path(os.environ.get("HOME", str(Path.home()))) / ".ssh" / "config"


def redirect(entry: HostEntry, path: Path | None = None) -> str | None:
    """What an entry of ``path`` (default :func:`user_config`) would change for ``entry``, as a sentence, else None."""
    path = path or user_config()
    if entry.local or not path.is_file():
        return None
    try:
        found = paramiko.SSHConfig.from_path(str(path)).lookup(entry.address)
    except (OSError, ValueError, paramiko.SSHException):
        return None
    wanted = {"hostname": entry.address, "port": str(entry.port), "user": entry.user}
    changed = [f"{key} {found[key]}" for key in ("hostname", "port", "user")
               if key in found and str(found[key]) != wanted[key]]
    if not changed:
        return None
    return (f"host {entry.name}: {path} would send {entry.address} to {', '.join(changed)}; perflab connects to "
            f"the inventory's {entry.user}@{entry.address}:{entry.port} (edit the inventory to go elsewhere)")


def warn(entry: HostEntry) -> None:
    """Log :func:`redirect`'s warning for ``entry`` when the user's ssh configuration would redirect it."""
    said = redirect(entry)
    if said:
        log.warning(said)
