"""Inventories: the hosts a campaign can name, as a small YAML file.

An inventory maps host names to how to reach them::

    hosts:
      h1: {address: 198.18.0.11, user: root, port: 22, key: .../id_ed25519, known_hosts: .../known_hosts}
      h2: {address: 198.18.0.12, ...}

Host keys are checked strictly against ``known_hosts`` (default: ``~/.ssh/known_hosts``);
``accept_new_host_keys: true`` appends unknown keys instead of refusing them (recorded).
``local: true`` marks a host reached without SSH (Fabric's local runner), as in the
built-in ``localhost`` inventory used when the lab cannot be brought up.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping

import yaml


class InventoryError(ValueError):
    """An inventory file is missing, malformed or lacks a host a campaign names."""


@dataclass(frozen=True)
class HostEntry:
    """How to reach one host."""

    name: str
    address: str
    user: str = "root"
    port: int = 22
    key: str | None = None
    known_hosts: str | None = None
    local: bool = False
    #: Opt-in (recorded with each sample) to append a host key that known_hosts lacks, as
    #: OpenSSH's ``StrictHostKeyChecking=accept-new``; a changed key is refused regardless.
    accept_new_host_keys: bool = False


def localhost(names: tuple[str, ...] = ("h1", "h2", "h3", "h4")) -> dict[str, HostEntry]:
    """The fallback inventory: every name is this machine, reached without SSH."""
    return {n: HostEntry(n, "127.0.0.1", local=True) for n in names}


def load(path: str | Path) -> dict[str, HostEntry]:
    """Read an inventory file; errors name the file, the host and the field."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise InventoryError(f"{path}: no such inventory file; bring the lab up with `perflab lab up` "
                             "or pass --inventory localhost") from None
    except yaml.YAMLError as exc:
        raise InventoryError(f"{path}: not valid YAML: {exc}") from None
    hosts = (doc or {}).get("hosts") if isinstance(doc, dict) else None
    if not isinstance(hosts, dict) or not hosts:
        raise InventoryError(f"{path}: expected a mapping 'hosts:' of host name -> {{address: ...}}; found {hosts!r}")
    out = {}
    allowed = set(HostEntry.__dataclass_fields__) - {"name"}
    for name, spec in hosts.items():
        if not isinstance(spec, dict) or "address" not in spec:
            raise InventoryError(f"{path}: host {name!r}: expected a mapping with at least 'address'; found {spec!r}")
        unknown = set(spec) - allowed
        if unknown:
            raise InventoryError(f"{path}: host {name!r}: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
        for flag in ("accept_new_host_keys", "local"):
            if not isinstance(spec.get(flag, False), bool):
                raise InventoryError(f"{path}: host {name!r}: {flag}: expected true or false; found {spec[flag]!r}")
        out[str(name)] = HostEntry(name=str(name), **spec)
    return out


def dump(entries: Mapping[str, HostEntry], path: str | Path, *, comment: str = "") -> None:
    """Write an inventory file (used by the lab)."""
    hosts = {n: {k: v for k, v in asdict(e).items() if k != "name" and v not in (None, False)} for n, e in entries.items()}
    text = (f"# {comment}\n" if comment else "") + yaml.safe_dump({"hosts": hosts}, sort_keys=False)
    Path(path).write_text(text)
