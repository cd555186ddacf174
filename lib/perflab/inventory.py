"""Inventories: the hosts a campaign can name, as a small YAML file.

An inventory maps host names to how to reach them::

    hosts:
      h1: {address: 198.18.0.11, user: root, port: 22, key: .../id_ed25519, known_hosts: .../known_hosts}
      h2: {address: 198.18.0.12, ...}

Host keys are checked strictly against ``known_hosts`` (default: ``~/.ssh/known_hosts``);
``accept_new_host_keys: true`` appends unknown keys instead of refusing them (recorded).
Hosts of a lab also list ``addresses`` (link -> address), ``devices`` and ``cgroups`` (docs/lab.md).

``local: true`` marks a host reached without SSH (Fabric's local runner), as in the
built-in ``localhost`` inventory used when the lab cannot be brought up.

Ansible inventories (YAML or INI) are read as they are, see :func:`load_ansible`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from . import yamlfile
from .errors import UserError
from .files import atomic_write
from .formats import declarations
from .yamlfile import YamlFileError, YamlSyntaxError


#: Versions of perflab's inventory format this perflab reads (the ``format`` key; Ansible's have none).
FORMATS = declarations.INVENTORY.formats


class InventoryError(UserError, ValueError):
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
    #: Lab hosts: the host's address on each lab link (link -> address), to pick a path.
    addresses: dict[str, str] | None = None
    #: Lab hosts: scratch devices, name -> {device, and when formatted: mount, fs}.
    devices: dict[str, dict[str, str]] | None = None
    #: Virtual lab hosts: the QEMU configuration, with ``emulated: true`` under TCG.
    vm: dict | None = None
    #: Lab hosts: the host's cgroup directories on the controller (role -> directory), read
    #: around each monitored sample for the host's own CPU time (docs/lab.md).
    cgroups: dict[str, str] | None = None


def localhost(names: tuple[str, ...] = ("h1", "h2", "h3", "h4")) -> dict[str, HostEntry]:
    """The fallback inventory: every name is this machine, reached without SSH."""
    return {n: HostEntry(n, "127.0.0.1", local=True) for n in names}


def _yaml(path: Path, text: str | None = None) -> tuple[Any, dict[tuple, int]]:
    """The YAML document of an inventory file and its lines, read by the one loader; :class:`InventoryError` when
    it cannot be."""
    try:
        return yamlfile.load(path, "inventory", text=text)
    except YamlFileError as exc:
        raise InventoryError(exc.problems[0]) from exc


#: The names an inventory file may use (checked with the loader's schema check: a misspelled one is
#: reported at its line with the nearest name); its other rules are :func:`load`'s.
NAMES_SCHEMA = {"properties": {"format": {}, "hosts": {"additionalProperties": {
    "properties": dict.fromkeys([f for f in HostEntry.__dataclass_fields__ if f != "name"], {}),
    "additionalProperties": False}}}, "additionalProperties": False}


def require(entries: dict[str, HostEntry], names: Sequence[str], source: str) -> dict[str, HostEntry]:
    """``entries`` when they name every host in ``names``; else :class:`InventoryError` saying which are missing."""
    missing = [n for n in names if n not in entries]
    if missing:
        raise InventoryError(f"inventory {source} has no host {', '.join(map(repr, missing))} (it has "
                             f"{', '.join(entries) or 'none'}); the campaign puts its roles there: pass an inventory "
                             "that names them (its study's `inventory:`, `--inventory labfile:labs/NAME.yaml`, "
                             "or a file)")
    return entries


def load(path: str | Path) -> dict[str, HostEntry]:
    """Read an inventory file (perflab's or Ansible's); errors name the file, the host and the field."""
    path = Path(path)
    if ansible_format(path):
        return load_ansible(path)
    if not path.exists():
        raise InventoryError(f"{path}: no such inventory file; bring the lab up with `perflab lab up` "
                             "or pass --inventory localhost")
    doc, lines = _yaml(path)
    if isinstance(doc, dict) and (problem := yamlfile.format_problem(doc, lines, str(path), "inventory", FORMATS)):
        raise InventoryError(problem + ("" if "format" in doc else "; a lab's inventory is rewritten by bringing "
                                        "the lab up again (`perflab lab up`)"))
    if problems := yamlfile.schema_problems(doc, NAMES_SCHEMA, lines, str(path)):
        raise InventoryError(problems[0])
    hosts = (doc or {}).get("hosts") if isinstance(doc, dict) else None
    if not isinstance(hosts, dict) or not hosts:
        raise InventoryError(f"{path}: expected a mapping 'hosts:' of host name -> {{address: ...}}; found {hosts!r}")
    out = {}
    for name, spec in hosts.items():
        if not isinstance(spec, dict) or "address" not in spec:
            raise InventoryError(f"{path}: host {name!r}: expected a mapping with at least 'address'; found {spec!r}")
        for flag in ("accept_new_host_keys", "local"):
            if not isinstance(spec.get(flag, False), bool):
                raise InventoryError(f"{path}: host {name!r}: {flag}: expected true or false; found {spec[flag]!r}")
        out[str(name)] = HostEntry(name=str(name), **spec)
    return out


def dump(entries: Mapping[str, HostEntry], path: str | Path, *, comment: str = "") -> None:
    """Write an inventory file (used by the lab)."""
    hosts = {n: {k: v for k, v in asdict(e).items() if k != "name" and v not in (None, False)} for n, e in entries.items()}
    text = (f"# {comment}\n" if comment else "") + yaml.safe_dump({"format": max(FORMATS), "hosts": hosts},
                                                                  sort_keys=False)
    atomic_write(path, text)


#: Ansible's connection variables -> HostEntry fields (first found wins; older ``ansible_ssh_*`` names last).
ANSIBLE_VARS = {"address": ("ansible_host", "ansible_ssh_host"), "user": ("ansible_user", "ansible_ssh_user"),
                "port": ("ansible_port", "ansible_ssh_port"), "key": ("ansible_ssh_private_key_file",
                                                                 "ansible_private_key_file")}
_GROUP_KEYS = {"hosts", "children", "vars"}
_RANGE_RE = re.compile(r"\[(\d+):(\d+)\]")
_KNOWN_HOSTS_RE = re.compile(r"UserKnownHostsFile=(\S+)")


def ansible_format(path: Path) -> str | None:
    """``"yaml"`` or ``"ini"`` when ``path`` holds an Ansible inventory, None for perflab's format."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):  # load() says why
        return None
    try:
        doc = _yaml(path, text)[0]
    except InventoryError as exc:
        if not isinstance(exc.__cause__, YamlSyntaxError):
            raise
        doc = None  # perhaps INI
    if isinstance(doc, dict):
        if "hosts" in doc:
            return None
        groups = all(v is None or (isinstance(v, dict) and set(v) <= _GROUP_KEYS) for v in doc.values())
        return "yaml" if doc and groups else None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith(("#", ";"))]
    return "ini" if lines and (doc is None or isinstance(doc, str) or lines[0].startswith("[")) else None


def load_ansible(path: str | Path) -> dict[str, HostEntry]:
    """Hosts of an Ansible inventory, YAML or INI, with their connection variables.

    Groups (``children`` nested at any depth), group variables and host variables are
    merged as Ansible does: ``all``, then groups by depth (then name), then the host's own.
    ``ansible_host`` (default: the host's name), ``ansible_user`` (default ``root``),
    ``ansible_port`` and ``ansible_ssh_private_key_file`` give the address, user, port and
    key; ``ansible_connection=local`` runs without SSH; ``-o UserKnownHostsFile=FILE`` in
    ``ansible_ssh_common_args`` or ``ansible_ssh_extra_args`` names the known-hosts file.
    Other variables are ignored. Numeric ranges such as ``node[01:04]`` are expanded.
    """
    path = Path(path)
    kind = ansible_format(path)
    if kind is None:
        raise InventoryError(f"{path}: not an Ansible inventory (expected YAML groups with hosts/children/vars, "
                             "or INI with [group] sections)")
    groups = _ansible_yaml(path) if kind == "yaml" else _ansible_ini(path)
    depth = _depths(groups, path)
    out: dict[str, HostEntry] = {}
    for host in sorted({h for g in groups.values() for h in g["hosts"]}, key=_natural):
        member = [name for name in groups if name == "all" or host in _members(groups, name)]
        merged: dict[str, Any] = {}
        for name in sorted(member, key=lambda n: (depth[n], n)):
            merged |= groups[name]["vars"]
        for name in member:
            merged |= groups[name]["hosts"].get(host, {})
        out[host] = _entry(host, merged, path)
    if not out:
        raise InventoryError(f"{path}: the Ansible inventory names no host; add hosts under a group")
    return out


def _group() -> dict[str, Any]:
    return {"hosts": {}, "children": set(), "vars": {}}


def _ansible_yaml(path: Path) -> dict[str, dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}

    def visit(name: str, body: Any) -> None:
        if body is not None and not (isinstance(body, dict) and set(body) <= _GROUP_KEYS):
            raise InventoryError(f"{path}: group {name!r}: expected a mapping of hosts, children and vars; "
                                 f"found {body!r}")
        group = groups.setdefault(str(name), _group())
        body = body or {}
        for field in _GROUP_KEYS:
            if body.get(field) is not None and not isinstance(body[field], dict):
                raise InventoryError(f"{path}: group {name!r}: '{field}' must be a mapping; found {body[field]!r}")
        for pattern, host_vars in (body.get("hosts") or {}).items():
            if host_vars is not None and not isinstance(host_vars, dict):
                raise InventoryError(f"{path}: group {name!r}: host {pattern!r}: expected a mapping of variables; "
                                     f"found {host_vars!r}")
            for host in _expand(str(pattern), path):
                group["hosts"].setdefault(host, {}).update(host_vars or {})
        group["vars"].update(body.get("vars") or {})
        for child, child_body in (body.get("children") or {}).items():
            group["children"].add(str(child))
            visit(str(child), child_body)

    for name, body in _yaml(path)[0].items():
        visit(str(name), body)
    return groups


def _ansible_ini(path: Path) -> dict[str, dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {"ungrouped": _group()}
    name, kind = "ungrouped", "hosts"
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        where = f"{path}:{number}"
        if line.startswith("["):
            if not line.endswith("]"):
                raise InventoryError(f"{where}: expected a section header such as [web] or [web:vars]; found {line!r}")
            name, _, kind = line[1:-1].partition(":")
            kind = kind or "hosts"
            if kind not in ("hosts", "vars", "children"):
                raise InventoryError(f"{where}: section [{line[1:-1]}]: expected [group], [group:vars] or "
                                     "[group:children]")
            groups.setdefault(name, _group())
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise InventoryError(f"{where}: {exc} in {line!r}") from None
        if kind == "vars":
            key, sep, value = line.partition("=")
            if not sep:
                raise InventoryError(f"{where}: [{name}:vars]: expected key=value; found {line!r}")
            groups[name]["vars"][key.strip()] = value.strip().strip("'\"")
        elif kind == "children":
            groups[name]["children"].add(words[0])
            groups.setdefault(words[0], _group())
        else:
            host_vars = {}
            for word in words[1:]:
                key, sep, value = word.partition("=")
                if not sep:
                    raise InventoryError(f"{where}: host {words[0]!r}: expected key=value variables; found {word!r}")
                host_vars[key] = value
            pattern, _, port = words[0].rpartition(":") if re.search(r":\d+$", words[0]) else (words[0], "", "")
            if port:
                host_vars.setdefault("ansible_port", port)
            for host in _expand(pattern, path):
                groups[name]["hosts"].setdefault(host, {}).update(host_vars)
    return groups


def _expand(pattern: str, path: Path) -> list[str]:
    """``node[01:03]`` -> node01, node02, node03 (zero padding kept); other names as they are."""
    match = _RANGE_RE.search(pattern)
    if not match:
        return [pattern]
    low, high = match.group(1), match.group(2)
    if int(low) > int(high):
        raise InventoryError(f"{path}: host range {pattern!r}: the start is after the end")
    width = len(low) if low.startswith("0") else 0
    return [name for i in range(int(low), int(high) + 1)
            for name in _expand(pattern[:match.start()] + str(i).zfill(width) + pattern[match.end():], path)]


def _members(groups: Mapping[str, dict[str, Any]], name: str, seen: frozenset[str] = frozenset()) -> set[str]:
    """Hosts of group ``name`` and of its children, recursively."""
    if name in seen:
        return set()
    hosts = set(groups[name]["hosts"])
    for child in groups[name]["children"]:
        hosts |= _members(groups, child, seen | {name})
    return hosts


def _depths(groups: Mapping[str, dict[str, Any]], path: Path) -> dict[str, int]:
    """Each group's depth below ``all`` (its longest chain of parents); ``all`` is 0, a top-level group 1."""
    parents: dict[str, set[str]] = {name: set() for name in groups}
    for name, group in groups.items():
        for child in group["children"]:
            parents.setdefault(child, set()).add(name)

    def depth(name: str, chain: tuple[str, ...]) -> int:
        if name in chain:
            raise InventoryError(f"{path}: groups {' -> '.join(chain + (name,))} form a cycle")
        if name == "all":
            return 0
        return 1 + max((depth(p, chain + (name,)) for p in parents.get(name, ()) if p != "all"), default=0)

    return {name: depth(name, ()) for name in groups}


def _natural(name: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _entry(host: str, variables: Mapping[str, Any], path: Path) -> HostEntry:
    """The HostEntry of ``host`` from its merged Ansible variables."""
    def first(field: str) -> Any:
        return next((variables[k] for k in ANSIBLE_VARS[field] if variables.get(k) not in (None, "")), None)

    port = first("port")
    try:
        port = 22 if port is None else int(port)
    except (TypeError, ValueError):
        raise InventoryError(f"{path}: host {host!r}: ansible_port {port!r} is not a port number") from None
    ssh_args = " ".join(str(variables.get(k) or "") for k in ("ansible_ssh_common_args", "ansible_ssh_extra_args"))
    known = _KNOWN_HOSTS_RE.search(ssh_args)
    key = first("key")
    return HostEntry(name=host, address=str(first("address") or host), user=str(first("user") or "root"), port=port,
                     key=str(Path(str(key)).expanduser()) if key else None,
                     known_hosts=str(Path(known.group(1).strip("'\"")).expanduser()) if known else None,
                     local=variables.get("ansible_connection") == "local")
