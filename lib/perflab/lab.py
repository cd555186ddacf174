"""The embedded lab: hosts on this machine as network namespaces with their own sshd.

``up`` creates a bridge, one namespace per host (its own hostname through a UTS
namespace, address, MTU and optional tbf rate limit) and an sshd per host with keys made
for the lab; it writes a ``known_hosts`` (strict checking stays on) and an inventory.
``down`` removes exactly what ``up`` created, as recorded in the lab's state file. The lab
uses addresses from 198.18.0.0/15, the block RFC 2544 reserves for benchmarking, and
touches no other interface of the machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from . import inventory

STATE_ROOT = Path(os.environ.get("PERFLAB_LAB_DIR", "/run/perflab"))
NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,6}$")
#: MTU of the bridge and the switch-side veth ends: a jumbo-capable switch.
SWITCH_MTU = 9000
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


class LabError(RuntimeError):
    """The lab could not be brought up, inspected or down; the message says what to do."""


@dataclass(frozen=True)
class LabHost:
    """One lab host: its name, namespace, interfaces and address."""

    name: str
    netns: str
    veth: str
    address: str


@dataclass(frozen=True)
class Lab:
    """A lab's fixed layout, derived from its name and host count."""

    name: str
    hosts: tuple[LabHost, ...]
    bridge: str
    gateway: str
    prefix: int
    state_dir: Path

    @property
    def inventory_path(self) -> Path:
        """Where ``up`` writes the lab's inventory."""
        return self.state_dir / "inventory.yaml"

    @property
    def key(self) -> Path:
        """The lab's client private key."""
        return self.state_dir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        """The lab's known_hosts file, with the host keys made by ``up``."""
        return self.state_dir / "known_hosts"


def layout(name: str = "default", hosts: int = 2) -> Lab:
    """The lab called ``name`` with ``hosts`` hosts (h1..hN); nothing is created."""
    if not NAME_RE.match(name):
        raise LabError(f"lab name {name!r}: use 1-7 lowercase letters or digits, starting with a letter")
    if not 1 <= hosts <= 200:
        raise LabError(f"--hosts {hosts}: a lab has 1 to 200 hosts")
    octet = 0 if name == "default" else 1 + int(hashlib.sha256(name.encode()).hexdigest(), 16) % 254
    net = f"198.18.{octet}"
    members = tuple(LabHost(f"h{i}", f"perflab-{name}-h{i}", f"pl{name}h{i}", f"{net}.{10 + i}")
                    for i in range(1, hosts + 1))
    return Lab(name, members, f"plb-{name}", f"{net}.1", 24, STATE_ROOT / name)


def _sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise LabError(f"`{' '.join(argv)}` failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def _link_exists(dev: str) -> bool:
    return _sh("ip", "link", "show", "dev", dev, check=False).returncode == 0


def _netns_list() -> set[str]:
    out = _sh("ip", "-j", "netns", "list", check=False).stdout.strip()
    return {n["name"] for n in json.loads(out)} if out else set()


def require_root() -> None:
    """Raise :class:`LabError` unless running as root (the lab needs namespaces and sshd)."""
    if os.geteuid() != 0:
        raise LabError("the lab needs root (network namespaces, veth, sshd). Run as root, or use the "
                       "localhost inventory: `--inventory localhost` (Fabric's local runner, no SSH).")
    for tool in ("ip", "ssh-keygen", "unshare", "tc"):
        if not shutil.which(tool):
            raise LabError(f"`{tool}` not found; install the Debian packages with `make deps`")
    if not os.path.exists(SSHD):
        raise LabError(f"{SSHD} not found; install openssh-server (`make deps`)")


def _sshd_pid(lab: Lab, host: LabHost) -> int | None:
    pidfile = lab.state_dir / host.name / "sshd.pid"
    try:
        pid = int(pidfile.read_text().split()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    return pid


def _sshd_config(lab: Lab, host: LabHost) -> str:
    hdir = lab.state_dir / host.name
    return "\n".join([
        f"ListenAddress {host.address}", "Port 22",
        f"HostKey {hdir}/ssh_host_ed25519_key", f"PidFile {hdir}/sshd.pid",
        f"AuthorizedKeysFile {lab.state_dir}/authorized_keys",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", "UseDNS no",
        "PrintMotd no", "MaxSessions 64", "MaxStartups 200:30:400", "LogLevel ERROR",
        "Subsystem sftp internal-sftp", "",
    ])


def _keygen(path: Path, comment: str) -> None:
    if not path.exists():
        _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path))


def _wait_port(address: str, port: int = 22, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((address, port), timeout=1.0) as sock:
                if sock.recv(4).startswith(b"SSH"):
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise LabError(f"sshd at {address}:{port} did not answer within {timeout:.0f}s")
        time.sleep(0.05)


def up(name: str = "default", hosts: int = 2, *, mtu: int = 1500, rate: str | None = None) -> Lab:
    """Bring the lab up (idempotent) and return it; its inventory is at ``lab.inventory_path``.

    ``mtu`` is each host's interface MTU (the switch side is jumbo-capable); ``rate``
    (e.g. ``"1gbit"``) adds a tbf qdisc on every host's egress to emulate a slower link.
    """
    require_root()
    if not 68 <= mtu <= SWITCH_MTU:
        raise LabError(f"--mtu {mtu}: choose 68 to {SWITCH_MTU}")
    lab = layout(name, hosts)
    previous = status(name)
    if previous and len(previous["hosts"]) > hosts:
        hosts = len(previous["hosts"])
        lab = layout(name, hosts)
    lab.state_dir.mkdir(parents=True, exist_ok=True)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    _keygen(lab.key, f"perflab-lab-{name}")
    (lab.state_dir / "authorized_keys").write_text(Path(f"{lab.key}.pub").read_text())
    _save_state(lab, mtu, rate)
    if not _link_exists(lab.bridge):
        _sh("ip", "link", "add", lab.bridge, "type", "bridge")
    _sh("ip", "link", "set", lab.bridge, "mtu", str(SWITCH_MTU))
    if lab.gateway not in _sh("ip", "-o", "addr", "show", "dev", lab.bridge).stdout:
        _sh("ip", "addr", "add", f"{lab.gateway}/{lab.prefix}", "dev", lab.bridge)
    _sh("ip", "link", "set", lab.bridge, "up")
    existing = _netns_list()
    known = []
    for host in lab.hosts:
        _host_up(lab, host, host.netns in existing, mtu, rate)
        pub = (lab.state_dir / host.name / "ssh_host_ed25519_key.pub").read_text().split()
        known.append(f"{host.address} {pub[0]} {pub[1]}")
    lab.known_hosts.write_text("\n".join(known) + "\n")
    for host in lab.hosts:
        _wait_port(host.address)
    entries = {h.name: inventory.HostEntry(h.name, h.address, key=str(lab.key), known_hosts=str(lab.known_hosts))
               for h in lab.hosts}
    inventory.dump(entries, lab.inventory_path, comment=f"perflab lab {name!r}: written by `perflab lab up`")
    return lab


def _host_up(lab: Lab, host: LabHost, exists: bool, mtu: int, rate: str | None) -> None:
    ns = ("ip", "netns", "exec", host.netns)
    if not exists:
        _sh("ip", "netns", "add", host.netns)
    if not _link_exists(host.veth):
        _sh("ip", "link", "add", host.veth, "type", "veth", "peer", "name", f"{host.veth}p", "netns", host.netns)
        _sh(*ns, "ip", "link", "set", f"{host.veth}p", "name", "eth0")
    _sh("ip", "link", "set", host.veth, "mtu", str(SWITCH_MTU), "master", lab.bridge, "up")
    _sh(*ns, "ip", "link", "set", "lo", "up")
    _sh(*ns, "ip", "link", "set", "eth0", "mtu", str(mtu), "up")
    if host.address not in _sh(*ns, "ip", "-o", "addr", "show", "dev", "eth0").stdout:
        _sh(*ns, "ip", "addr", "add", f"{host.address}/{lab.prefix}", "dev", "eth0")
    if rate:
        _sh(*ns, "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", rate, "burst", "256kb",
            "latency", "50ms")
    else:
        _sh(*ns, "tc", "qdisc", "del", "dev", "eth0", "root", check=False)
    hdir = lab.state_dir / host.name
    hdir.mkdir(exist_ok=True)
    _keygen(hdir / "ssh_host_ed25519_key", f"perflab-{lab.name}-{host.name}")
    (hdir / "sshd_config").write_text(_sshd_config(lab, host))
    if _sshd_pid(lab, host) is None:
        _sh(SSHD, "-t", "-f", str(hdir / "sshd_config"))
        _sh(*ns, "unshare", "--uts", "sh", "-c", f"hostname {host.name} && exec {SSHD} -f {hdir}/sshd_config")


def _save_state(lab: Lab, mtu: int, rate: str | None) -> None:
    state = {"name": lab.name, "bridge": lab.bridge, "gateway": lab.gateway, "mtu": mtu, "rate": rate,
             "hosts": [h.__dict__ for h in lab.hosts]}
    tmp = lab.state_dir / "state.json.tmp"
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(lab.state_dir / "state.json")


def status(name: str = "default") -> dict | None:
    """The lab's recorded state with liveness per host, or ``None`` when it is not up."""
    try:
        state = json.loads((STATE_ROOT / name / "state.json").read_text())
    except (OSError, ValueError):
        return None
    lab = layout(name, len(state["hosts"]))
    namespaces = _netns_list()
    for h, host in zip(state["hosts"], lab.hosts):
        h["netns_present"] = host.netns in namespaces
        h["sshd_pid"] = _sshd_pid(lab, host)
    state["bridge_present"] = _link_exists(lab.bridge)
    state["inventory"] = str(lab.inventory_path)
    return state


def down(name: str = "default") -> list[str]:
    """Remove everything ``up`` created for lab ``name``; return what was removed."""
    require_root()
    state = status(name)
    removed: list[str] = []
    if state is None:
        return removed
    lab = layout(name, len(state["hosts"]))
    namespaces = _netns_list()
    for host in lab.hosts:
        if host.netns in namespaces:
            pids = _sh("ip", "netns", "pids", host.netns, check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            _wait_gone(pids)
            _sh("ip", "netns", "del", host.netns)
            removed.append(f"netns {host.netns} ({len(pids)} processes killed)")
        if _link_exists(host.veth) and _sh("ip", "link", "del", host.veth, check=False).returncode == 0:
            removed.append(f"link {host.veth}")
    if _link_exists(lab.bridge):
        _sh("ip", "link", "del", lab.bridge)
        removed.append(f"bridge {lab.bridge}")
    shutil.rmtree(lab.state_dir, ignore_errors=True)
    removed.append(f"state {lab.state_dir}")
    return removed


def _wait_gone(pids: list[str], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    for pid in pids:
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.01)


def resolve_inventory(spec: str, *, hosts: int = 2) -> dict[str, inventory.HostEntry]:
    """Inventory entries for ``spec``: a file path, ``localhost``, or ``lab``/``lab:NAME``.

    ``lab`` brings the embedded lab up when running as root and falls back to the
    localhost inventory (saying so) otherwise.
    """
    if spec == "localhost":
        return inventory.localhost()
    if spec == "lab" or spec.startswith("lab:"):
        name = spec.partition(":")[2] or "default"
        if os.geteuid() != 0:
            print("perflab: not root, so no namespace lab; using the localhost inventory (no SSH)")
            return inventory.localhost()
        return inventory.load(up(name, hosts).inventory_path)
    return inventory.load(spec)
