"""The embedded lab: hosts on this machine as namespaces with their own sshd, cgroup and disks.

A lab is described by a :class:`~perflab.labspec.LabSpec` (a YAML file, or the flat lab of
``perflab lab up --hosts N``). ``up`` makes one bridge per link, one network namespace per
host with an interface per link (its own hostname and mount namespace too), routes through
the router hosts with their nftables rules, a cgroup per host with its cpuset and memory
limit, loop devices over sparse files (formatted and mounted inside the host) and an sshd
per host with keys made for the lab; a virtual host is instead a QEMU guest on taps of its
links, booted from the machine's kernel and root file system. It writes a ``known_hosts``
(strict checking stays on) and an inventory. Every resource is named in the lab's state
file first, so ``down`` removes exactly what ``up`` created. Links use /24s of
198.18.0.0/15, the block RFC 2544 reserves for benchmarking, picked from the lab and link
names, never one that another lab or an interface of the machine already uses.
``docs/lab.md`` describes it all.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from . import cephlab, inventory, labspec
from .files import atomic_write
from .labspec import HostSpec, LabSpec, Vm

STATE_ROOT = Path(os.environ.get("PERFLAB_LAB_DIR", "/run/perflab"))
STATE_VERSION = 2
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
#: Debian packages the lab needs beyond the base ones (collected by the install script): router
#: rules, mkfs for scratch devices, and QEMU, a kernel and a static busybox for virtual hosts.
DEBIAN_PACKAGES: tuple[str, ...] = ("nftables", "e2fsprogs", "xfsprogs", "btrfs-progs", "qemu-system-x86",
                                    "linux-image-amd64", "busybox-static", "cpio", "kmod")
QEMU = "qemu-system-x86_64"
#: Modules the guest's initramfs loads to mount the machine's root file system over virtio 9p.
VM_ROOT_MODULES = ("kernel/fs/9p/9p.ko", "kernel/net/9p/9pnet_virtio.ko", "kernel/drivers/virtio/virtio_pci.ko")
#: How long a virtual host may take to boot to its sshd (TCG emulation on a busy machine is slow).
VM_BOOT_TIMEOUT = 300.0
#: The initramfs's /init: mount the machine's root over 9p read-only and run the guest's init from it.
VM_INITRAMFS_INIT = """#!/bin/busybox sh
/bin/busybox mkdir -p /proc /dev /newroot
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs dev /dev
for m in $(/bin/busybox cat /modules); do /bin/busybox insmod "/lib/$m"; done
/bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000 rootfs /newroot || /bin/busybox poweroff -f
/bin/busybox umount /proc
exec /bin/busybox switch_root /newroot /bin/sh "$@"
"""
#: Slots of 198.18.0.0/15: 512 /24s, slot s is 198.(18 + s // 256).(s % 256).0/24.
SLOTS = 512
#: Where each host's cgroup lives under a hierarchy's root: perflab/<lab>/<host>.
CGROUP_PARENT = "perflab"


class LabError(RuntimeError):
    """The lab could not be brought up, inspected or down; the message says what to do."""


@dataclass(frozen=True)
class Port:
    """One interface of a host: on ``link``, called ``ifname`` inside the host, ``veth`` outside."""

    link: str
    ifname: str
    veth: str
    address: str


@dataclass(frozen=True)
class LabHost:
    """One lab host: its name, namespace and interfaces (the first one's address is its SSH address)."""

    name: str
    netns: str
    ports: tuple[Port, ...]

    @property
    def address(self) -> str:
        """The address the controller reaches the host at (on its first link)."""
        return self.ports[0].address

    def port(self, link: str) -> Port:
        """The host's interface on ``link``."""
        return next(p for p in self.ports if p.link == link)


@dataclass(frozen=True)
class LabLink:
    """One link: its bridge, its /24 and the controller's address on it."""

    name: str
    bridge: str
    network: str
    gateway: str
    mtu: int
    rate: str | None


@dataclass(frozen=True)
class Lab:
    """A lab's fixed layout: its description with the names and addresses ``up`` gives it."""

    name: str
    spec: LabSpec
    links: tuple[LabLink, ...]
    hosts: tuple[LabHost, ...]
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

    def host(self, name: str) -> LabHost:
        """The host called ``name``; :class:`LabError` when there is none."""
        for h in self.hosts:
            if h.name == name:
                return h
        raise LabError(f"lab {self.name} has no host {name!r}; its hosts: {', '.join(h.name for h in self.hosts)}")

    def link(self, name: str) -> LabLink:
        """The link called ``name``."""
        return next(link for link in self.links if link.name == name)

    def described(self, name: str) -> HostSpec:
        """The description of host ``name``."""
        return next(h for h in self.spec.hosts if h.name == name)

    def device_file(self, host: str, device: str) -> Path:
        """The sparse file behind a host's scratch device."""
        return self.state_dir / host / f"disk-{device}.img"

    def mount_point(self, host: str, device: str) -> Path:
        """Where a host's scratch device is mounted, inside the host's own mount namespace."""
        return self.state_dir / host / "mnt" / device


def _layout(spec: LabSpec, slots: dict[str, int]) -> Lab:
    """Names and addresses of every part of the lab, from its description and its links' slots."""
    links = []
    for i, link in enumerate(spec.links, 1):
        slot = slots[link.name]
        net = f"198.{18 + slot // 256}.{slot % 256}"
        links.append(LabLink(link.name, f"p{spec.name}-b{i}", f"{net}.0/24", f"{net}.1", link.mtu, link.rate))
    index = {link.name: i for i, link in enumerate(spec.links, 1)}
    nets = {link.name: link.gateway.rsplit(".", 1)[0] for link in links}
    hosts = tuple(
        LabHost(h.name, f"perflab-{spec.name}-{h.name}",
                tuple(Port(link, f"eth{k}", f"p{spec.name}-{j}-{index[link]}", f"{nets[link]}.{10 + j}")
                      for k, link in enumerate(h.links)))
        for j, h in enumerate(spec.hosts, 1))
    return Lab(spec.name, spec, tuple(links), hosts, STATE_ROOT / spec.name)


def _sh(*argv: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, input=input)
    if check and proc.returncode != 0:
        raise LabError(f"`{' '.join(argv)}` failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def _link_exists(dev: str) -> bool:
    return _sh("ip", "link", "show", "dev", dev, check=False).returncode == 0


def _netns_list() -> set[str]:
    out = _sh("ip", "-j", "netns", "list", check=False).stdout.strip()
    return {n["name"] for n in json.loads(out)} if out else set()


def require_root(spec: LabSpec | None = None) -> None:
    """Raise :class:`LabError` unless running as root with the tools the lab (``spec``) needs."""
    if os.geteuid() != 0:
        raise LabError("the lab needs root (network namespaces, veth, sshd). Run as root, or use the "
                       "localhost inventory: `--inventory localhost` (Fabric's local runner, no SSH).")
    tools = ["ip", "ssh-keygen", "unshare", "nsenter", "tc", "losetup"]
    if spec is not None:
        tools += ["nft"] if any(h.router for h in spec.hosts) else []
        tools += sorted({f"mkfs.{d.fs}" for h in spec.hosts for d in h.devices if d.fs})
        tools += [QEMU, "cpio", "gzip", "modprobe"] if any(h.vm for h in spec.hosts) else []
    for tool in tools:
        if not shutil.which(tool):
            raise LabError(f"`{tool}` not found; install the Debian packages with `make deps`")
    if not os.path.exists(SSHD):
        raise LabError(f"{SSHD} not found; install openssh-server (`make deps`)")


# --- state --------------------------------------------------------------------------------


def _read_state(name: str) -> dict | None:
    try:
        state = json.loads((STATE_ROOT / name / "state.json").read_text())
    except (OSError, ValueError):
        return None
    if state.get("version") != STATE_VERSION:
        raise LabError(f"{STATE_ROOT / name}/state.json: lab {name} was brought up by another perflab version "
                       f"(state version {state.get('version', 1)}, this one reads {STATE_VERSION}); remove it with "
                       f"`perflab lab down --name {name}`" + ("" if "version" not in state else " of that version"))
    return state


def _write_state(lab_dir: Path, state: dict) -> None:
    atomic_write(lab_dir / "state.json", json.dumps(state, indent=1))


def _lab_of(state: dict) -> Lab:
    return _layout(LabSpec.from_json(state["spec"]), state["slots"])


def load(name: str = "default") -> Lab | None:
    """The layout of lab ``name`` as its state file records it, or ``None`` when it is not up."""
    state = _read_state(name)
    return None if state is None else _lab_of(state)


def _used_slots(own: str) -> set[int]:
    """Slots taken by other labs' state files or by any IPv4 address of this machine's root namespace."""
    used = set()
    for path in STATE_ROOT.glob("*/state.json"):
        if path.parent.name != own:
            try:
                used |= set(json.loads(path.read_text()).get("slots", {}).values())
            except (OSError, ValueError):
                continue
    for m in re.finditer(r"inet 198\.(18|19)\.(\d+)\.", _sh("ip", "-o", "-4", "addr", "show").stdout):
        used.add((int(m[1]) - 18) * 256 + int(m[2]))
    return used


def _allocate(spec: LabSpec, previous: dict[str, int]) -> dict[str, int]:
    """A slot per link: the one it had, else the first free one from a hash of lab and link name."""
    used = _used_slots(spec.name) - set(previous.values())
    slots = {}
    for link in spec.links:
        if link.name in previous:
            slots[link.name] = previous[link.name]
            continue
        slot = int(hashlib.sha256(f"{spec.name}/{link.name}".encode()).hexdigest(), 16) % SLOTS
        for _ in range(SLOTS):
            if slot not in used and slot not in slots.values():
                break
            slot = (slot + 1) % SLOTS
        else:
            raise LabError("every /24 of 198.18.0.0/15 is in use by other labs; bring one down with `perflab lab down`")
        slots[link.name] = slot
    return slots


# --- cgroups ------------------------------------------------------------------------------


def cgroup_hierarchies() -> dict[str, Path]:
    """The cgroup hierarchies the lab uses on this machine: role -> mount point.

    Roles are ``cpuset``, ``memory`` and ``cpuacct`` (cgroup v1 controllers, when all three
    are mounted) plus ``unified`` (the v2 hierarchy: CPU, memory and pressure accounting;
    with v1 it adds pressure only). Empty when no usable hierarchy is mounted.
    """
    v1: dict[str, Path] = {}
    v2 = None
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, where, kind, options = line.split()[:4]
        if kind == "cgroup":
            for opt in options.split(","):
                v1.setdefault(opt, Path(where))
        elif kind == "cgroup2":
            v2 = Path(where)
    roles = {k: v1[k] for k in ("cpuset", "memory", "cpuacct") if k in v1}
    if len(roles) == 3:
        return {**roles, **({"unified": v2} if v2 else {})}
    if v2 and {"cpuset", "memory", "cpu"} <= set((v2 / "cgroup.controllers").read_text().split()):
        return {"unified": v2}
    return {}


def _v2_only(hierarchies: dict[str, Path]) -> bool:
    return set(hierarchies) == {"unified"}


def _cgroup_dirs(lab: Lab, hierarchies: dict[str, Path]) -> dict[str, dict[str, str]]:
    """host -> role -> the host's cgroup directory in that hierarchy."""
    return {h.name: {role: str(root / CGROUP_PARENT / lab.name / h.name) for role, root in hierarchies.items()}
            for h in lab.hosts}


def _write(path: Path, value: str, what: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise LabError(f"{what}: cannot write {value!r} to {path}: {exc.strerror}") from None


def _cgroups_up(lab: Lab, hierarchies: dict[str, Path]) -> None:
    """Create each host's cgroups (parents first) with its cpuset and memory limit."""
    v2 = _v2_only(hierarchies)
    for role, root in hierarchies.items():
        parent = root
        for part in (CGROUP_PARENT, lab.name):
            child = parent / part
            if v2:
                _write(parent / "cgroup.subtree_control", "+cpuset +memory +cpu", f"cgroup {parent}")
            child.mkdir(exist_ok=True)
            if role == "cpuset":
                for f in ("cpuset.cpus", "cpuset.mems"):
                    if not (child / f).read_text().strip():
                        _write(child / f, (parent / f).read_text().strip(), f"cgroup {child}")
            parent = child
        if v2:
            _write(parent / "cgroup.subtree_control", "+cpuset +memory +cpu", f"cgroup {parent}")
    for host in lab.spec.hosts:
        what = f"lab {lab.name}: host {host.name}"
        for role, root in hierarchies.items():
            d = root / CGROUP_PARENT / lab.name / host.name
            d.mkdir(exist_ok=True)
            if role == "cpuset":
                _write(d / "cpuset.mems", (d.parent / "cpuset.mems").read_text().strip(), what)
                _write(d / "cpuset.cpus", host.cpuset or (d.parent / "cpuset.cpus").read_text().strip(),
                       f"{what}: cpuset (this machine's CPUs are {(root / 'cpuset.cpus').read_text().strip()})")
            elif role == "memory":
                _write(d / "memory.limit_in_bytes", str(host.memory or -1), f"{what}: memory")
            elif v2:
                if host.cpuset:
                    _write(d / "cpuset.cpus", host.cpuset, f"{what}: cpuset (this machine's CPUs are "
                           f"{(root / 'cpuset.cpus.effective').read_text().strip()})")
                _write(d / "memory.max", str(host.memory or "max"), f"{what}: memory")


@dataclass(frozen=True)
class HostUsage:
    """A lab host's cgroup counters: CPU time of everything it ran, memory now and at peak, its CPUs."""

    cpu_seconds: float
    user_seconds: float
    system_seconds: float
    memory_bytes: int
    memory_peak_bytes: int | None
    memory_limit_bytes: int | None
    cpus: str
    #: Share of the last 10 s some of the host's tasks waited for a CPU (cgroup v2 pressure), when known.
    cpu_pressure_avg10: float | None = None


def _keyed(path: Path) -> dict[str, float]:
    """A cgroup file of ``key value`` lines (cpu.stat, cpuacct.stat) as a dict."""
    return {key: float(value) for key, value in (line.split() for line in path.read_text().splitlines())}


def usage(name: str, host: str) -> HostUsage:
    """The cgroup counters of ``host`` in lab ``name`` (read on the controller, cumulative since ``up``)."""
    state = _read_state(name)
    if state is None:
        raise LabError(f"lab {name} is not up; bring it up with `perflab lab up`")
    _lab_of(state).host(host)
    if not state["cgroups"].get(host):
        raise LabError(f"lab {name}: host {host} has no cgroup (no usable cgroup hierarchy was mounted at `up`)")
    return _usage(state["cgroups"][host])


def _usage(cgroups: dict[str, str]) -> HostUsage:
    """The counters of one host's cgroups (role -> directory)."""
    dirs = {role: Path(d) for role, d in cgroups.items()}
    pressure = None
    if "unified" in dirs and (dirs["unified"] / "cpu.pressure").exists():
        pressure = float(re.search(r"some avg10=([0-9.]+)", (dirs["unified"] / "cpu.pressure").read_text())[1])
    if "cpuacct" in dirs:
        ticks = _keyed(dirs["cpuacct"] / "cpuacct.stat")
        hz = os.sysconf("SC_CLK_TCK")
        limit = int((dirs["memory"] / "memory.limit_in_bytes").read_text())
        return HostUsage(int((dirs["cpuacct"] / "cpuacct.usage").read_text()) / 1e9, ticks["user"] / hz,
                         ticks["system"] / hz, int((dirs["memory"] / "memory.usage_in_bytes").read_text()),
                         int((dirs["memory"] / "memory.max_usage_in_bytes").read_text()),
                         None if limit >= 1 << 62 else limit,
                         (dirs["cpuset"] / "cpuset.effective_cpus").read_text().strip(), pressure)
    d = dirs["unified"]
    cpu = _keyed(d / "cpu.stat")
    peak = d / "memory.peak"
    limit = (d / "memory.max").read_text().strip()
    return HostUsage(cpu["usage_usec"] / 1e6, cpu["user_usec"] / 1e6, cpu["system_usec"] / 1e6,
                     int((d / "memory.current").read_text()), int(peak.read_text()) if peak.exists() else None,
                     None if limit == "max" else int(limit), (d / "cpuset.cpus.effective").read_text().strip(),
                     pressure)


# --- routers ------------------------------------------------------------------------------


def _routes(lab: Lab) -> dict[str, list[tuple[str, str, str]]]:
    """host -> (network, via, ifname) for every link it is not on but reaches through routers."""
    routers = [h for h in lab.spec.hosts if h.router]
    out: dict[str, list[tuple[str, str, str]]] = {}
    for host in lab.spec.hosts:
        seen = set(host.links)
        queue = deque((link, None) for link in host.links)
        first: dict[str, tuple[str, str]] = {}
        while queue:
            link, hop = queue.popleft()
            for r in routers:
                if r.name == host.name or link not in r.links:
                    continue
                for nxt in r.links:
                    if nxt not in seen:
                        seen.add(nxt)
                        first[nxt] = hop or (r.name, link)
                        queue.append((nxt, first[nxt]))
        me = lab.host(host.name)
        out[host.name] = [(lab.link(target).network, lab.host(r).port(via).address, me.port(via).ifname)
                          for target, (r, via) in first.items()]
    return out


def _ruleset(lab: Lab, host: str) -> str:
    """The router's nftables ruleset: filter rules and masquerade, each with a counter and a comment."""
    me, router = lab.host(host), next(h.router for h in lab.spec.hosts if h.name == host)
    ifname = {p.link: p.ifname for p in me.ports}
    lines = []
    for i, rule in enumerate(router.filter):
        match = [f'iifname "{ifname[rule.from_link]}"' if rule.from_link else "",
                 f'oifname "{ifname[rule.to_link]}"' if rule.to_link else "",
                 f"meta l4proto {rule.proto}" if rule.proto else "",
                 f"th dport {rule.dport}" if rule.dport else ""]
        lines.append(f'{" ".join(m for m in match if m)} counter {rule.action} comment "filter {i}"')
    nat = [f'oifname "{ifname[link]}" counter masquerade comment "masquerade {link}"' for link in router.masquerade]
    return "\n".join([
        "table inet perflab {}", "delete table inet perflab",
        "table inet perflab {", f"  chain forward {{ type filter hook forward priority 0; policy {router.policy};",
        *(f"    {line}" for line in lines), '    counter comment "forwarded"', "  }",
        "  chain postrouting { type nat hook postrouting priority 100;", *(f"    {line}" for line in nat), "  }",
        "}", ""])


def router_counters(name: str, host: str) -> dict[str, tuple[int, int]]:
    """Packets and bytes of each rule of a router host, by comment (``filter 0``, ``masquerade lan2``,
    ``forwarded``: what no rule dropped), read from nftables inside the router's namespace."""
    lab = load(name)
    if lab is None:
        raise LabError(f"lab {name} is not up; bring it up with `perflab lab up`")
    out = json.loads(_sh("ip", "netns", "exec", lab.host(host).netns, "nft", "-j", "list", "table", "inet",
                         "perflab").stdout)
    counters = {}
    for item in out["nftables"]:
        rule = item.get("rule")
        if rule and "comment" in rule:
            counter = next(e["counter"] for e in rule["expr"] if "counter" in e)
            counters[rule["comment"]] = (counter["packets"], counter["bytes"])
    return counters


# --- storage ------------------------------------------------------------------------------


def _loops_of(path: Path) -> list[str]:
    """Loop devices attached to ``path`` (whatever the state file says)."""
    out = _sh("losetup", "-n", "-O", "NAME", "-j", str(path), check=False).stdout
    return out.split()


def _devices_up(lab: Lab, state: dict) -> None:
    """Attach (and once format) each host's scratch devices; record each loop device and file system at once."""
    for host in lab.spec.hosts:
        for dev in host.devices:
            path, key = lab.device_file(host.name, dev.name), f"{host.name}/{dev.name}"
            if not path.exists():
                with open(path, "wb") as f:
                    f.truncate(dev.size)
            if host.vm:  # QEMU opens the file itself: a virtio disk of the guest
                lab.mount_point(host.name, dev.name).mkdir(parents=True, exist_ok=True)
                target = str(path)
            else:
                loops = _loops_of(path)
                if not loops:
                    loops = [_sh("losetup", "--find", "--show", f"--direct-io={'on' if dev.direct_io else 'off'}",
                                 str(path)).stdout.strip()]
                    state["loops"][key] = loops[0]
                    _write_state(lab.state_dir, state)
                target = loops[0]
            if dev.fs and key not in state["formatted"]:
                _sh(f"mkfs.{dev.fs}", "-q", {"ext4": "-F", "xfs": "-f", "btrfs": "-f"}[dev.fs], *dev.mkfs, target)
                state["formatted"].append(key)
                _write_state(lab.state_dir, state)


def _mounts_up(lab: Lab, host: HostSpec, sshd_pid: int, loops: dict[str, str]) -> None:
    mounted = Path(f"/proc/{sshd_pid}/mountinfo").read_text()
    for dev in host.devices:
        target = lab.mount_point(host.name, dev.name)
        target.mkdir(parents=True, exist_ok=True)
        if dev.fs and f" {target} " not in mounted:
            _sh("nsenter", "-t", str(sshd_pid), "-m", "--", "mount", "-t", dev.fs,
                *(("-o", dev.options) if dev.options else ()), loops[f"{host.name}/{dev.name}"], str(target))


# --- up -----------------------------------------------------------------------------------


def _sshd_pid(lab: Lab, host: str) -> int | None:
    """The pid of the host's sshd (a virtual host: of its QEMU) when it runs."""
    pidfile = "qemu.pid" if lab.described(host).vm else "sshd.pid"
    try:
        pid = int((lab.state_dir / host / pidfile).read_text().split()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    return pid


def _sshd_config(lab: Lab, host: LabHost) -> str:
    hdir = lab.state_dir / host.name
    pidfile = "/tmp/sshd.pid" if lab.described(host.name).vm else f"{hdir}/sshd.pid"
    return "\n".join([
        *(f"ListenAddress {p.address}" for p in host.ports), "Port 22",
        f"HostKey {hdir}/ssh_host_ed25519_key", f"PidFile {pidfile}",
        f"AuthorizedKeysFile {lab.state_dir}/authorized_keys",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", "UseDNS no",
        "PrintMotd no", "MaxSessions 64", "MaxStartups 200:30:400", "LogLevel ERROR",
        "Subsystem sftp internal-sftp", "",
    ])


def _keygen(path: Path, comment: str) -> None:
    if not path.exists():
        _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path))


def _wait_port(address: str, port: int = 22, timeout: float = 10.0, alive=lambda: True) -> None:
    """Wait until an sshd answers at ``address``; fail early once ``alive()`` says its process is gone."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((address, port), timeout=1.0) as sock:
                if sock.recv(4).startswith(b"SSH"):
                    return
        except OSError:
            pass
        if time.monotonic() > deadline or not alive():
            raise LabError(f"sshd at {address}:{port} did not answer within {timeout:.0f}s"
                           f"{'' if alive() else ': its process is gone'}")
        time.sleep(0.05)


def up(name: str = "default", hosts: int = 2, *, mtu: int = 1500, rate: str | None = None) -> Lab:
    """Bring the flat lab up (idempotent): hosts h1..hN on one link; its inventory is at ``lab.inventory_path``.

    ``mtu`` is the link's MTU; ``rate`` (e.g. ``"1gbit"``) adds a tbf qdisc on every host's
    egress. A flat lab that is already up with more hosts keeps them.
    """
    previous = _read_state(name)
    if previous and previous["spec"]["source"] is None:
        hosts = max(hosts, len(previous["spec"]["hosts"]))
    return bring_up(labspec.simple(name, hosts, mtu=mtu, rate=rate))


def bring_up(spec: LabSpec) -> Lab:
    """Bring the lab ``spec`` describes up (idempotent) and return it.

    A lab of the same name that is up from another description is refused, except that a
    flat lab grows or changes its MTU and rate in place.
    """
    require_root(spec)
    lab_dir = STATE_ROOT / spec.name
    STATE_ROOT.mkdir(parents=True, exist_ok=True)
    with open(STATE_ROOT / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = _read_state(spec.name)
        new = state is None
        if state and state["spec"] != json.loads(json.dumps(spec.to_json())):
            flat = state["spec"]["source"] is None and spec.source is None
            if not flat or len(spec.hosts) < len(state["spec"]["hosts"]):
                raise LabError(f"lab {spec.name} is up from another description "
                               f"({state['spec']['source'] or 'flat, ' + str(len(state['spec']['hosts'])) + ' hosts'}); "
                               f"bring it down first: `perflab lab down --name {spec.name}`")
        slots = _allocate(spec, state["slots"] if state else {})
        lab = _layout(spec, slots)
        hierarchies = cgroup_hierarchies()
        vms = {h.name: {"accel": vm_accel(h.vm), "kernel": str(_vm_kernel(h.vm)[0])} for h in spec.hosts if h.vm}
        state = {"version": STATE_VERSION, "name": spec.name, "spec": spec.to_json(), "slots": slots,
                 "cgroups": _cgroup_dirs(lab, hierarchies), "loops": state["loops"] if state else {}, "vms": vms,
                 "formatted": state.get("formatted", []) if state else []}
        lab_dir.mkdir(exist_ok=True)
        _write_state(lab_dir, state)
    try:
        _make(lab, state, hierarchies)
    except BaseException as exc:  # also Ctrl-C: a lab half made is not left behind
        if new:
            down(lab.name)
            if isinstance(exc, LabError):
                raise LabError(f"{exc}; what was made of the new lab was removed again") from None
            raise
        if isinstance(exc, LabError):
            raise LabError(f"{exc}; what was made so far is recorded: `perflab lab down --name {lab.name}` "
                           "removes it") from None
        raise
    return lab


def _make(lab: Lab, state: dict, hierarchies: dict[str, Path]) -> None:
    """Create (or complete) every resource of ``lab``, whose state file already names them."""
    spec = lab.spec
    for h in lab.hosts:
        (lab.state_dir / h.name).mkdir(exist_ok=True)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    _keygen(lab.key, f"perflab-lab-{lab.name}")
    (lab.state_dir / "authorized_keys").write_text(Path(f"{lab.key}.pub").read_text())
    for link in lab.links:
        _link_up(link)
    existing = _netns_list()
    for host in lab.hosts:
        _host_net_up(lab, host, host.netns in existing)
    routes = _routes(lab)
    for host in spec.hosts:
        for network, via, ifname in routes[host.name] if not host.vm else ():
            _sh("ip", "netns", "exec", lab.host(host.name).netns, "ip", "route", "replace", network, "via", via,
                "dev", ifname)
    for host in spec.hosts:
        if host.router:
            _sh("ip", "netns", "exec", lab.host(host.name).netns, "nft", "-f", "-", input=_ruleset(lab, host.name))
    _cgroups_up(lab, hierarchies)
    _devices_up(lab, state)
    known = []
    for spec_host, host in zip(spec.hosts, lab.hosts):
        procs = [Path(d) / "cgroup.procs" for d in state["cgroups"][host.name].values()]
        if spec_host.vm:
            _vm_up(lab, host, routes[host.name], procs, state["vms"][host.name])
        else:
            _mounts_up(lab, spec_host, _sshd_up(lab, host, procs), state["loops"])
        pub = (lab.state_dir / host.name / "ssh_host_ed25519_key.pub").read_text().split()
        known += [f"{p.address} {pub[0]} {pub[1]}" for p in host.ports]
    lab.known_hosts.write_text("\n".join(known) + "\n")
    for host in lab.hosts:
        if lab.described(host.name).vm:
            try:
                _wait_port(host.address, timeout=VM_BOOT_TIMEOUT, alive=lambda: _sshd_pid(lab, host.name) is not None)
            except LabError as exc:
                raise LabError(f"lab {lab.name}: virtual host {host.name}: {exc}; its console: "
                               f"{lab.state_dir / host.name / 'console.log'}") from None
        else:
            _wait_port(host.address)
    if spec.ceph:
        cephlab.up(lab, state)
    _write_inventory(lab, state)


def _link_up(link: LabLink) -> None:
    if not _link_exists(link.bridge):
        _sh("ip", "link", "add", link.bridge, "type", "bridge")
    _sh("ip", "link", "set", link.bridge, "mtu", str(link.mtu))
    if f" {link.gateway}/" not in _sh("ip", "-o", "addr", "show", "dev", link.bridge).stdout:
        _sh("ip", "addr", "add", f"{link.gateway}/24", "dev", link.bridge)
    _sh("ip", "link", "set", link.bridge, "up")


def _host_net_up(lab: Lab, host: LabHost, exists: bool) -> None:
    if lab.described(host.name).vm:
        for port in host.ports:
            if not _link_exists(port.veth):
                _sh("ip", "tuntap", "add", "dev", port.veth, "mode", "tap")
            _sh("ip", "link", "set", port.veth, "mtu", str(lab.link(port.link).mtu), "master",
                lab.link(port.link).bridge, "up")
        return
    ns = ("ip", "netns", "exec", host.netns)
    if not exists:
        _sh("ip", "netns", "add", host.netns)
    _sh(*ns, "ip", "link", "set", "lo", "up")
    for port in host.ports:
        link = lab.link(port.link)
        if not _link_exists(port.veth):
            _sh("ip", "link", "add", port.veth, "type", "veth", "peer", "name", port.ifname, "netns", host.netns)
        _sh("ip", "link", "set", port.veth, "mtu", str(link.mtu), "master", link.bridge, "up")
        _sh(*ns, "ip", "link", "set", port.ifname, "mtu", str(link.mtu), "up")
        if f" {port.address}/" not in _sh(*ns, "ip", "-o", "addr", "show", "dev", port.ifname).stdout:
            _sh(*ns, "ip", "addr", "add", f"{port.address}/24", "dev", port.ifname)
        if link.rate:
            _sh(*ns, "tc", "qdisc", "replace", "dev", port.ifname, "root", "tbf", "rate", link.rate,
                "burst", "256kb", "latency", "50ms")
        else:
            _sh(*ns, "tc", "qdisc", "del", "dev", port.ifname, "root", check=False)
    if next(h for h in lab.spec.hosts if h.name == host.name).router:
        _sh(*ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")


def _sshd_up(lab: Lab, host: LabHost, cgroup_procs: list[Path]) -> int:
    """Start the host's sshd (unless running) in its own UTS and mount namespace and cgroups; its pid."""
    hdir = lab.state_dir / host.name
    _keygen(hdir / "ssh_host_ed25519_key", f"perflab-{lab.name}-{host.name}")
    (hdir / "sshd_config").write_text(_sshd_config(lab, host))
    pid = _sshd_pid(lab, host.name)
    if pid is None:
        _sh(SSHD, "-t", "-f", str(hdir / "sshd_config"))
        # Join the cgroups first: `ip netns exec` hides /sys/fs/cgroup behind a fresh sysfs.
        _in_cgroups(cgroup_procs, "ip", "netns", "exec", host.netns, "unshare", "--uts", "--mount", "--propagation",
                    "private", "sh", "-c", 'hostname "$0" && exec "$1" -f "$2"', host.name, SSHD,
                    str(hdir / "sshd_config"))
        deadline = time.monotonic() + 10
        while (pid := _sshd_pid(lab, host.name)) is None:
            if time.monotonic() > deadline:
                raise LabError(f"lab {lab.name}: host {host.name}: sshd wrote no pid file within 10 s")
            time.sleep(0.01)
    return pid


def _in_cgroups(cgroup_procs: list[Path], *argv: str) -> None:
    """Run ``argv`` (which daemonizes) with its process in the given cgroups, so all it starts is in them."""
    script = 'for f in $PERFLAB_CGROUPS; do echo $$ > "$f" || exit 1; done; exec "$@"'
    proc = subprocess.run(["sh", "-c", script, "sh", *argv], capture_output=True, text=True,
                          env={**os.environ, "PERFLAB_CGROUPS": " ".join(map(str, cgroup_procs))})
    if proc.returncode != 0:
        raise LabError(f"`{shlex.join(argv)}` failed ({proc.returncode}): {proc.stderr.strip()}")


# --- virtual hosts ------------------------------------------------------------------------


def vm_accel(vm: Vm) -> str:
    """The accelerator a guest runs with: its ``accel``, or for ``auto`` KVM when the CPU has
    hardware virtualization (vmx/svm flags and /dev/kvm), else TCG (emulation)."""
    if vm.accel != "auto":
        return vm.accel
    hardware = re.search(r"^flags\b.*\b(vmx|svm)\b", Path("/proc/cpuinfo").read_text(), re.M)
    return "kvm" if hardware and os.path.exists("/dev/kvm") else "tcg"


def _vm_kernel(vm: Vm) -> tuple[Path, str]:
    """The kernel image a guest boots and its release, whose modules must be installed."""
    if vm.kernel:
        images = [Path(vm.kernel)]
    else:
        images = sorted(Path("/boot").glob("vmlinuz-*"),
                        key=lambda p: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", p.name)], reverse=True)
    for image in images:
        release = image.name.removeprefix("vmlinuz-")
        if image.exists() and (Path("/lib/modules") / release / "modules.dep").exists():
            return image, release
    raise LabError(f"no kernel for virtual hosts: {vm.kernel or '/boot/vmlinuz-*'} with its modules in /lib/modules "
                   "is needed; install linux-image-amd64 (`make deps`) or set vm.kernel")


def _initramfs(lab: Lab, release: str) -> Path:
    """A small initramfs (static busybox and the 9p and virtio modules of ``release``), made once per lab."""
    out = lab.state_dir / f"initramfs-{release}.gz"
    if out.exists():
        return out
    busybox = shutil.which("busybox")
    linked = busybox and _sh("ldd", busybox, check=False)
    if not linked or "not a dynamic executable" not in linked.stdout + linked.stderr:
        raise LabError("virtual hosts need a static busybox; install busybox-static (`make deps`)")
    moddir = Path("/lib/modules") / release
    deps = {k: v.split() for k, _, v in (line.partition(":") for line in (moddir / "modules.dep").read_text().splitlines())}
    order: list[str] = []

    def visit(module: str) -> None:
        for dep in reversed(deps.get(module, [])):
            visit(dep)
        if module in deps and module not in order:
            order.append(module)

    for module in VM_ROOT_MODULES:
        visit(module)
    tree = lab.state_dir / "initramfs"
    (tree / "bin").mkdir(parents=True, exist_ok=True)
    (tree / "lib").mkdir(exist_ok=True)
    shutil.copy(busybox, tree / "bin" / "busybox")
    for module in order:
        shutil.copy(moddir / module, tree / "lib")
    (tree / "modules").write_text("".join(f"{Path(m).name}\n" for m in order))
    (tree / "init").write_text(VM_INITRAMFS_INIT)
    (tree / "init").chmod(0o755)
    _sh("sh", "-c", 'cd "$1" && find . | cpio -o -H newc --quiet | gzip -1 > "$2.tmp" && mv "$2.tmp" "$2"', "sh",
        str(tree), str(out))
    shutil.rmtree(tree)
    return out


def _guest_device(index: int) -> str:
    return f"/dev/vd{'abcdefghijklmnopqrstuvwxyz'[index]}"


def _guest_init(lab: Lab, host: LabHost, routes: list[tuple[str, str, str]]) -> str:
    """The guest's init (run by the machine's /bin/sh from the read-only root): mounts, network, disks, sshd."""
    described, q = lab.described(host.name), shlex.quote
    fs_modules = sorted({d.fs for d in described.devices if d.fs})
    lines = ["#!/bin/sh", "# init of a perflab virtual host, written by `perflab lab up`",
             "mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev 2>/dev/null",
             "mkdir -p /dev/pts; mount -t devpts devpts /dev/pts",
             "mount -t tmpfs -o mode=1777 tmpfs /tmp; mount -t tmpfs -o mode=755 tmpfs /run/sshd",
             f"hostname {q(host.name)}",
             f"modprobe -a {'virtio_net' if described.vm.nic == 'virtio' else 'e1000'} virtio_blk sch_tbf "
             f"{' '.join(fs_modules)}", "ip link set lo up"]
    for port in host.ports:
        link = lab.link(port.link)
        lines += [f"ip link set {port.ifname} mtu {link.mtu} up", f"ip addr add {port.address}/24 dev {port.ifname}"]
        if link.rate:
            lines.append(f"tc qdisc replace dev {port.ifname} root tbf rate {q(link.rate)} burst 256kb latency 50ms")
    lines += [f"ip route replace {network} via {via} dev {ifname}" for network, via, ifname in routes]
    for i, dev in enumerate(described.devices):
        if dev.fs:
            options = f" -o {q(dev.options)}" if dev.options else ""
            lines.append(f"mount -t {dev.fs}{options} {_guest_device(i)} {q(str(lab.mount_point(host.name, dev.name)))}")
    lines.append(f"exec {SSHD} -D -e -f {q(str(lab.state_dir / host.name / 'sshd_config'))}")
    return "\n".join(lines) + "\n"


def _vm_up(lab: Lab, host: LabHost, routes: list[tuple[str, str, str]], cgroup_procs: list[Path],
           vm_state: dict) -> int:
    """Boot the virtual host (unless its QEMU runs) in its cgroups; the QEMU pid."""
    vm, hdir = lab.described(host.name).vm, lab.state_dir / host.name
    _keygen(hdir / "ssh_host_ed25519_key", f"perflab-{lab.name}-{host.name}")
    (hdir / "sshd_config").write_text(_sshd_config(lab, host))
    (hdir / "guest-init.sh").write_text(_guest_init(lab, host, routes))
    pid = _sshd_pid(lab, host.name)
    if pid is not None:
        return pid
    if re.search(r"[\s,]", str(lab.state_dir)):
        raise LabError(f"{lab.state_dir}: virtual hosts need a state directory without spaces or commas "
                       "(set PERFLAB_LAB_DIR)")
    kernel = Path(vm_state["kernel"])
    argv = [QEMU, "-name", f"perflab-{lab.name}-{host.name}", "-machine", "pc", "-accel", vm_state["accel"],
            "-cpu", vm.cpu, "-smp", str(vm.vcpus), "-m", f"{vm.memory >> 20}M", "-nodefaults", "-no-reboot",
            "-display", "none", "-monitor", "none", "-serial", f"file:{hdir}/console.log",
            "-daemonize", "-pidfile", f"{hdir}/qemu.pid", "-kernel", str(kernel),
            "-initrd", str(_initramfs(lab, kernel.name.removeprefix("vmlinuz-"))),
            "-append", f"console=ttyS0 quiet net.ifnames=0 panic=-1 -- {hdir}/guest-init.sh",
            "-fsdev", "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap",
            "-device", "virtio-9p-pci,fsdev=root,mount_tag=rootfs"]
    for k, port in enumerate(host.ports):
        mac = "52:54:" + ":".join(f"{b:02x}" for b in hashlib.sha256(port.veth.encode()).digest()[:4])
        argv += ["-netdev", f"tap,id=n{k},ifname={port.veth},script=no,downscript=no",
                 "-device", f"{'virtio-net-pci' if vm.nic == 'virtio' else 'e1000'},netdev=n{k},mac={mac}"]
    for dev in lab.described(host.name).devices:
        argv += ["-drive", f"file={lab.device_file(host.name, dev.name)},format=raw,if=virtio,cache={vm.cache}"]
    _in_cgroups(cgroup_procs, *argv)
    pid = _sshd_pid(lab, host.name)
    if pid is None:
        raise LabError(f"lab {lab.name}: host {host.name}: QEMU wrote no pid file; see {hdir}/console.log")
    return pid


def _write_inventory(lab: Lab, state: dict) -> None:
    entries = {}
    for spec_host, h in zip(lab.spec.hosts, lab.hosts):
        devices = {d.name: {"device": _guest_device(i) if spec_host.vm else state["loops"][f"{h.name}/{d.name}"],
                            **({"mount": str(lab.mount_point(h.name, d.name)), "fs": d.fs} if d.fs else {})}
                   for i, d in enumerate(spec_host.devices)}
        vm = spec_host.vm and {**spec_host.vm.__dict__, **state["vms"][h.name],
                               "emulated": state["vms"][h.name]["accel"] == "tcg"}
        entries[h.name] = inventory.HostEntry(h.name, h.address, key=str(lab.key), known_hosts=str(lab.known_hosts),
                                              addresses={p.link: p.address for p in h.ports}, devices=devices or None,
                                              vm=vm or None, cgroups=state["cgroups"].get(h.name) or None)
    inventory.dump(entries, lab.inventory_path, comment=f"perflab lab {lab.name!r}: written by `perflab lab up`")


# --- status and down ----------------------------------------------------------------------


def status(name: str = "default") -> dict | None:
    """The lab's recorded state with what is present on the machine, or ``None`` when it is not up."""
    state = _read_state(name)
    if state is None:
        return None
    lab = _lab_of(state)
    namespaces = _netns_list()
    state["links"] = [{**link.__dict__, "present": _link_exists(link.bridge)} for link in lab.links]
    state["hosts"] = [{"name": h.name, "netns": h.netns, "netns_present": h.netns in namespaces,
                       "sshd_pid": _sshd_pid(lab, h.name), "address": h.address,
                       "ports": [p.__dict__ for p in h.ports]} for h in lab.hosts]
    for h in state["hosts"]:
        cgroups = state["cgroups"].get(h["name"])
        h["usage"] = _usage(cgroups).__dict__ if cgroups and all(map(os.path.isdir, cgroups.values())) else None
    state["routes"] = _routes(lab)
    state["inventory"] = str(lab.inventory_path)
    state["ceph"] = lab.spec.ceph and cephlab.status(lab, state)
    return state


def draw(state: dict) -> str:
    """The lab of :func:`status` as text: links, then hosts with addresses, routes, rules, limits and devices."""
    spec = LabSpec.from_json(state["spec"])
    out = [f"lab {spec.name}" + (f" (from {spec.source})" if spec.source else " (flat)") +
           f"; inventory {state['inventory']}"]
    for link in state["links"]:
        members = [h["name"] for h in state["hosts"] if any(p["link"] == link["name"] for p in h["ports"])]
        out.append(f"  [{link['name']}] {link['network']} bridge {link['bridge']}"
                   f"{'' if link['present'] else ' MISSING'}, MTU {link['mtu']}, "
                   f"rate {link['rate'] or 'unlimited'}: {' -- '.join(members)}")
    for spec_host, h in zip(spec.hosts, state["hosts"]):
        process = "qemu" if spec_host.vm else "sshd"
        alive = f"{process} {h['sshd_pid']}" if h["sshd_pid"] else f"{process} NOT running"
        ns = "" if h["netns_present"] or spec_host.vm else " netns MISSING"
        out.append(f"  {h['name']}{' (router)' if spec_host.router else ''}: {alive}{ns}")
        if spec_host.vm:
            vm, booted = spec_host.vm, state["vms"][h["name"]]
            emulated = ", EMULATED" if booted["accel"] == "tcg" else ""
            out.append(f"    virtual host: {booted['accel']}{emulated}, cpu {vm.cpu} x{vm.vcpus}, {vm.memory >> 20} MiB, "
                       f"nic {vm.nic}, disk cache {vm.cache}, kernel {booted['kernel']}")
        for p in h["ports"]:
            out.append(f"    {p['ifname']} {p['address']}/24 on {p['link']}")
        for network, via, ifname in state["routes"][h["name"]]:
            out.append(f"    route {network} via {via} dev {ifname}")
        if spec_host.router:
            r = spec_host.router
            out.append(f"    forward policy {r.policy}; masquerade on {', '.join(r.masquerade) or 'no link'}")
            for i, rule in enumerate(r.filter):
                match = " ".join(f"{k} {v}" for k, v in (("from", rule.from_link), ("to", rule.to_link),
                                                          ("proto", rule.proto), ("dport", rule.dport)) if v)
                out.append(f"    filter {i}: {match or 'any'} -> {rule.action}")
        if state["cgroups"].get(h["name"]):
            memory = f"{spec_host.memory >> 20} MiB" if spec_host.memory else "unlimited"
            out.append(f"    cgroup: cpuset {spec_host.cpuset or 'all'}, memory {memory} "
                       f"({', '.join(sorted(state['cgroups'][h['name']]))})")
        if h["usage"]:
            u = h["usage"]
            peak = f", peak {u['memory_peak_bytes'] / 2**20:.1f} MiB" if u["memory_peak_bytes"] is not None else ""
            out.append(f"    used since up: CPU {u['cpu_seconds']:.2f} s (user {u['user_seconds']:.2f}, system "
                       f"{u['system_seconds']:.2f}), memory {u['memory_bytes'] / 2**20:.1f} MiB{peak}")
        for i, d in enumerate(spec_host.devices):
            loop = _guest_device(i) if spec_host.vm else state["loops"].get(f"{h['name']}/{d.name}", "not attached")
            fs = f"{d.fs}{' -o ' + d.options if d.options else ''}" if d.fs else "raw"
            out.append(f"    disk {d.name}: {loop} {d.size >> 20} MiB {fs}{', direct I/O' if d.direct_io else ''}")
    if spec.ceph:
        out += cephlab.draw(_lab_of(state), state["ceph"])
    return "\n".join(out)


def down(name: str = "default") -> list[str]:
    """Remove everything ``up`` recorded for lab ``name``; return what was removed."""
    require_root()
    try:
        first = json.loads((STATE_ROOT / name / "state.json").read_text())
    except (OSError, ValueError):
        first = {"version": STATE_VERSION}
    if "version" not in first:
        return _down_v1(first)
    state = _read_state(name)
    removed: list[str] = []
    if state is None:
        return removed
    lab = _lab_of(state)
    namespaces = _netns_list()
    for spec_host, host in zip(lab.spec.hosts, lab.hosts):
        pid = _sshd_pid(lab, host.name)
        for dev in spec_host.devices:
            if pid and dev.fs and not spec_host.vm:
                _sh("nsenter", "-t", str(pid), "-m", "--", "umount", str(lab.mount_point(host.name, dev.name)),
                    check=False)
        procs = [Path(d) / "cgroup.procs" for d in state["cgroups"].get(host.name, {}).values()]
        pids = set(_sh("ip", "netns", "pids", host.netns, check=False).stdout.split()) if host.netns in namespaces \
            else set()
        pids |= {p for f in procs if f.exists() for p in f.read_text().split()} | ({str(pid)} if pid else set())
        _kill(pids)
        if host.netns in namespaces:
            _sh("ip", "netns", "del", host.netns)
            removed.append(f"netns {host.netns} ({len(pids)} processes killed)")
        elif spec_host.vm and pid:
            removed.append(f"virtual host {host.name} (qemu {pid} killed)")
        for port in host.ports:
            if _link_exists(port.veth) and _sh("ip", "link", "del", port.veth, check=False).returncode == 0:
                removed.append(f"link {port.veth}")
        for dev in spec_host.devices:
            path = lab.device_file(host.name, dev.name)
            for loop in sorted({*_loops_of(path), state["loops"].get(f"{host.name}/{dev.name}")} - {None}):
                if loop in _loops_of(path):
                    _detach(loop)
                    removed.append(f"loop {loop} ({path.name})")
    removed += cephlab.down(lab, state)
    for link in lab.links:
        if _link_exists(link.bridge):
            _sh("ip", "link", "del", link.bridge)
            removed.append(f"bridge {link.bridge}")
    for host_dirs in state["cgroups"].values():
        for d in map(Path, host_dirs.values()):
            if d.exists():
                _rmdir_cgroup(d)
                removed.append(f"cgroup {d}")
    for d in {Path(d).parent for host_dirs in state["cgroups"].values() for d in host_dirs.values()}:
        if d.exists():
            _rmdir_cgroup(d)
    shutil.rmtree(lab.state_dir, ignore_errors=True)
    removed.append(f"state {lab.state_dir}")
    return removed


def _down_v1(state: dict) -> list[str]:
    """Remove a flat lab recorded in the first state format (no version: a bridge, hosts with netns and veth)."""
    removed = []
    namespaces = _netns_list()
    for host in state["hosts"]:
        if host["netns"] in namespaces:
            pids = set(_sh("ip", "netns", "pids", host["netns"], check=False).stdout.split())
            _kill(pids)
            _sh("ip", "netns", "del", host["netns"])
            removed.append(f"netns {host['netns']} ({len(pids)} processes killed)")
        if _link_exists(host["veth"]) and _sh("ip", "link", "del", host["veth"], check=False).returncode == 0:
            removed.append(f"link {host['veth']}")
    if _link_exists(state["bridge"]):
        _sh("ip", "link", "del", state["bridge"])
        removed.append(f"bridge {state['bridge']}")
    shutil.rmtree(STATE_ROOT / state["name"], ignore_errors=True)
    removed.append(f"state {STATE_ROOT / state['name']}")
    return removed


def _kill(pids: set[str]) -> None:
    """SIGKILL ``pids`` and wait until they have exited."""
    for p in pids:
        try:
            os.kill(int(p), 9)
        except (ProcessLookupError, ValueError):
            pass
    _wait_gone(pids)


def _detach(loop: str, timeout: float = 5.0) -> None:
    """Detach a loop device, waiting while the kernel finishes unmounting it (a namespace just died)."""
    deadline = time.monotonic() + timeout
    while _sh("losetup", "-d", loop, check=False).returncode != 0:
        if time.monotonic() > deadline:
            raise LabError(f"loop device {loop} stays busy; find its user with `fuser -m {loop}`, then "
                           f"`losetup -d {loop}`")
        time.sleep(0.05)


def _rmdir_cgroup(d: Path, timeout: float = 5.0) -> None:
    """Remove a cgroup directory, waiting while killed processes leave it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            d.rmdir()
            return
        except OSError as exc:
            if time.monotonic() > deadline:
                raise LabError(f"cgroup {d} cannot be removed ({exc.strerror}); its processes: "
                               f"{(d / 'cgroup.procs').read_text().split()}") from None
        time.sleep(0.05)


def _dead(pid: str) -> bool:
    """True once ``pid`` has exited: gone, or a zombie (its namespaces and cgroups are already released)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] in "ZX"
    except (OSError, IndexError):
        return True


def _wait_gone(pids: set[str], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    for pid in pids:
        while not _dead(pid) and time.monotonic() < deadline:
            time.sleep(0.01)


def traces(name: str) -> list[str]:
    """Anything of lab ``name`` still on the machine: namespaces, interfaces, processes, cgroups, loop devices.

    Found by the names ``up`` gives, not by the state file, so it also sees what a lost state
    file would have hidden; empty after a complete ``down``.
    """
    found = [n for n in sorted(_netns_list()) if n.startswith(f"perflab-{name}-")]
    links = json.loads(_sh("ip", "-j", "link", "show").stdout or "[]")
    found += [f"link {link['ifname']}" for link in links if link["ifname"].startswith(f"p{name}-")]
    procs = _sh("pgrep", "-af", f"{STATE_ROOT}/{name}/", check=False).stdout.splitlines()
    found += [f"process {line}" for line in procs]
    found += [f"cgroup {root / CGROUP_PARENT / name}" for root in set(cgroup_hierarchies().values())
              if (root / CGROUP_PARENT / name).exists()]
    loops = _sh("losetup", "-n", "-O", "NAME,BACK-FILE", check=False).stdout.splitlines()
    found += [f"loop {line}" for line in loops if f"{STATE_ROOT}/{name}/" in line]
    return found + cephlab.traces(name)


def resolve_inventory(spec: str, *, hosts: int = 2) -> dict[str, inventory.HostEntry]:
    """Inventory entries for ``spec``: a file path, ``localhost``, ``lab``/``lab:NAME`` or ``labfile:PATH``.

    ``lab`` brings the flat lab up when running as root and falls back to the localhost
    inventory (saying so) otherwise; a lab brought up from a file is used as it is.
    ``labfile:labs/routed.yaml`` brings the lab that file describes up (if it is not up
    yet) and uses it: a study's campaign names the lab it needs this way.
    """
    if spec == "localhost":
        return inventory.localhost()
    if spec.startswith("labfile:"):
        require_root()
        return inventory.load(bring_up(labspec.load(spec.partition(":")[2])).inventory_path)
    if spec == "lab" or spec.startswith("lab:"):
        name = spec.partition(":")[2] or "default"
        if os.geteuid() != 0:
            print("perflab: not root, so no namespace lab; using the localhost inventory (no SSH)")
            return inventory.localhost()
        existing = load(name)
        if existing is not None and existing.spec.source is not None:
            return inventory.load(existing.inventory_path)
        return inventory.load(up(name, hosts).inventory_path)
    return inventory.load(spec)
