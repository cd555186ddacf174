"""Bringing a lab up and down, its status drawn as text, and the traces of it left on the machine."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

from ... import inventory, labspec
from ...formats import labstate
from ...labspec import LabSpec
from . import ceph, model, nfs, zfs
from .cgroups import CGROUP_PARENT, cgroup_dirs, cgroup_hierarchies, cgroup_usage, cgroups_up, rmdir_cgroup
from .model import Lab, LabError, layout
from .net import host_net_up, host_routes, link_offload_state, link_up, ruleset
from .shell import kill, link_exists, netns_list, sh
from .sshd import SSHD, keygen, sshd_pid, sshd_up, wait_port
from .state import STATE_VERSION, allocate, lab_of, read_state, write_state
from .storage import detach, devices_up, guest_device, loops_of, mounts_up
from .vm import QEMU, VM_BOOT_TIMEOUT, vm_accel, vm_kernel, vm_up

#: Debian packages the lab needs beyond the base ones (collected by the install script): router
#: rules, links' offloads, mkfs for scratch devices, and QEMU, a kernel and a static busybox for virtual hosts.
DEBIAN_PACKAGES: tuple[str, ...] = ("nftables", "ethtool", "e2fsprogs", "xfsprogs", "btrfs-progs", "qemu-system-x86",
                                    "linux-image-amd64", "busybox-static", "cpio", "kmod")


def require_root(spec: LabSpec | None = None) -> None:
    """Raise :class:`LabError` unless running as root with the tools the lab (``spec``) needs."""
    if os.geteuid() != 0:
        raise LabError("the lab needs root (network namespaces, veth, sshd). Run as root, or use the "
                       "localhost inventory: `--inventory localhost` (Fabric's local runner, no SSH).")
    tools = ["ip", "ssh-keygen", "unshare", "nsenter", "tc", "losetup"]
    if spec is not None:
        tools += ["nft"] if any(h.router for h in spec.hosts) else []
        tools += ["ethtool"] if any(link.offloads == "off" for link in spec.links) else []
        tools += sorted({f"mkfs.{d.fs}" for h in spec.hosts for d in h.devices if d.fs and d.fs != "zfs"})
        tools += ["zfs-fuse", "zpool"] if any(zfs.devices(h) for h in spec.hosts) else []
        tools += ["ganesha.nfsd", "rpcbind"] if spec.nfs else []
        tools += [QEMU, "cpio", "gzip", "modprobe"] if any(h.vm for h in spec.hosts) else []
    for tool in tools:
        if not shutil.which(tool):
            raise LabError(f"`{tool}` not found; install the Debian packages with `make deps`")
    if not os.path.exists(SSHD):
        raise LabError(f"{SSHD} not found; install openssh-server (`make deps`)")


def up(name: str = "default", hosts: int = 2, *, mtu: int = 1500, rate: str | None = None) -> Lab:
    """Bring the flat lab up (idempotent): hosts h1..hN on one link; its inventory is at ``lab.inventory_path``.

    ``mtu`` is the link's MTU; ``rate`` (e.g. ``"1gbit"``) adds a tbf qdisc on every host's
    egress. A flat lab that is already up with more hosts keeps them.
    """
    previous = read_state(name)
    if previous and previous["spec"]["source"] is None:
        hosts = max(hosts, len(previous["spec"]["hosts"]))
    return bring_up(labspec.simple(name, hosts, mtu=mtu, rate=rate))


def bring_up(spec: LabSpec) -> Lab:
    """Bring the lab ``spec`` describes up (idempotent) and return it.

    A lab of the same name that is up from another description is refused, except that a
    flat lab grows or changes its MTU and rate in place.
    """
    require_root(spec)
    lab_dir = model.STATE_ROOT / spec.name
    model.STATE_ROOT.mkdir(parents=True, exist_ok=True)
    with open(model.STATE_ROOT / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = read_state(spec.name)
        new = state is None
        if state and state["spec"] != json.loads(json.dumps(spec.to_json())):
            flat = state["spec"]["source"] is None and spec.source is None
            if not flat or len(spec.hosts) < len(state["spec"]["hosts"]):
                raise LabError(f"lab {spec.name} is up from another description "
                               f"({state['spec']['source'] or 'flat, ' + str(len(state['spec']['hosts'])) + ' hosts'}); "
                               f"bring it down first: `perflab lab down --name {spec.name}`")
        slots = allocate(spec, state["slots"] if state else {})
        lab = layout(spec, slots)
        hierarchies = cgroup_hierarchies()
        vms = {h.name: {"accel": vm_accel(h.vm), "kernel": str(vm_kernel(h.vm)[0])} for h in spec.hosts if h.vm}
        state = {"format": STATE_VERSION, "name": spec.name, "spec": spec.to_json(), "slots": slots,
                 "cgroups": cgroup_dirs(lab, hierarchies), "loops": state["loops"] if state else {}, "vms": vms,
                 "formatted": state.get("formatted", []) if state else [],
                 **{k: state[k] for k in ("ceph", "zfs_run_dirs") if state and k in state}}
        lab_dir.mkdir(exist_ok=True)
        write_state(lab_dir, state)
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
    keygen(lab.key, f"perflab-lab-{lab.name}")
    (lab.state_dir / "authorized_keys").write_text(Path(f"{lab.key}.pub").read_text())
    for link in lab.links:
        link_up(link)
    existing = netns_list()
    for host in lab.hosts:
        host_net_up(lab, host, host.netns in existing)
    routes = host_routes(lab)
    for described in spec.hosts:
        for network, via, ifname in routes[described.name] if not described.vm else ():
            sh("ip", "netns", "exec", lab.host(described.name).netns, "ip", "route", "replace", network, "via", via,
                "dev", ifname)
    for described in spec.hosts:
        if described.router:
            sh("ip", "netns", "exec", lab.host(described.name).netns, "nft", "-f", "-",
               input=ruleset(lab, described.name))
    cgroups_up(lab, hierarchies)
    devices_up(lab, state)
    known = []
    for spec_host, host in zip(spec.hosts, lab.hosts):
        procs = [Path(d) / "cgroup.procs" for d in state["cgroups"][host.name].values()]
        if spec_host.vm:
            vm_up(lab, host, routes[host.name], procs, state["vms"][host.name])
        else:
            pid = sshd_up(lab, host, procs)
            mounts_up(lab, spec_host, pid, state["loops"])
            zfs.up(lab, spec_host, pid, state)
        pub = (lab.state_dir / host.name / "ssh_host_ed25519_key.pub").read_text().split()
        known += [f"{p.address} {pub[0]} {pub[1]}" for p in host.ports]
    lab.known_hosts.write_text("\n".join(known) + "\n")
    for host in lab.hosts:
        if lab.described(host.name).vm:
            try:
                wait_port(host.address, timeout=VM_BOOT_TIMEOUT, alive=lambda host=host: sshd_pid(lab, host.name) is not None)
            except LabError as exc:
                raise LabError(f"lab {lab.name}: virtual host {host.name}: {exc}; its console: "
                               f"{lab.state_dir / host.name / 'console.log'}") from None
        else:
            wait_port(host.address)
    if spec.ceph:
        ceph.up(lab, state)
    if spec.nfs:
        nfs.up(lab, state)
    _write_inventory(lab, state)


def _write_inventory(lab: Lab, state: dict) -> None:
    entries = {}
    for spec_host, h in zip(lab.spec.hosts, lab.hosts):
        devices = {d.name: {"device": guest_device(i) if spec_host.vm else state["loops"][f"{h.name}/{d.name}"],
                            **({"mount": str(lab.mount_point(h.name, d.name)), "fs": d.fs} if d.fs else {})}
                   for i, d in enumerate(spec_host.devices)}
        vm = spec_host.vm and {**spec_host.vm.__dict__, **state["vms"][h.name],
                               "emulated": state["vms"][h.name]["accel"] == "tcg"}
        entries[h.name] = inventory.HostEntry(h.name, h.address, key=str(lab.key), known_hosts=str(lab.known_hosts),
                                              addresses={p.link: p.address for p in h.ports}, devices=devices or None,
                                              vm=vm or None, cgroups=state["cgroups"].get(h.name) or None)
    inventory.dump(entries, lab.inventory_path, comment=f"perflab lab {lab.name!r}: written by `perflab lab up`")


def status(name: str = "default") -> dict | None:
    """The lab's recorded state with what is present on the machine, or ``None`` when it is not up."""
    state = read_state(name)
    if state is None:
        return None
    lab = lab_of(state)
    namespaces = netns_list()
    state["links"] = [{**link.__dict__, "present": link_exists(link.bridge),
                       "offload_state": link_offload_state(lab, link, namespaces)} for link in lab.links]
    state["hosts"] = [{"name": h.name, "netns": h.netns, "netns_present": h.netns in namespaces,
                       "sshd_pid": sshd_pid(lab, h.name), "address": h.address,
                       "ports": [p.__dict__ for p in h.ports]} for h in lab.hosts]
    for h in state["hosts"]:
        cgroups = state["cgroups"].get(h["name"])
        h["usage"] = cgroup_usage(cgroups).__dict__ if cgroups and all(map(os.path.isdir, cgroups.values())) else None
    state["routes"] = host_routes(lab)
    state["inventory"] = str(lab.inventory_path)
    state["ceph"] = lab.spec.ceph and ceph.status(lab, state)
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
                   f"rate {link['rate'] or 'unlimited'}, {_offloads_text(link)}: {' -- '.join(members)}")
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
            loop = guest_device(i) if spec_host.vm else state["loops"].get(f"{h['name']}/{d.name}", "not attached")
            fs = f"{d.fs}{' -o ' + d.options if d.options else ''}" if d.fs else "raw"
            out.append(f"    disk {d.name}: {loop} {d.size >> 20} MiB {fs}{', direct I/O' if d.direct_io else ''}")
    if spec.ceph:
        out += ceph.draw(lab_of(state), state["ceph"])
    if spec.nfs:
        out += nfs.draw(lab_of(state))
    return "\n".join(out)


def _offloads_text(link: dict) -> str:
    """A link's declared offloads and what its interfaces report, e.g. ``offloads off (TSO off, GSO off, ...)``."""
    found = link.get("offload_state")
    shown = ", ".join(f"{name.upper()} {'/'.join(values)}" for name, values in found.items()) if found else \
        "not read: ethtool missing"
    wrong = link["offloads"] == "off" and found and any(values != ["off"] for values in found.values())
    return f"offloads {link['offloads']}{' NOT APPLIED' if wrong else ''} ({shown})"


def down(name: str = "default") -> list[str]:
    """Remove everything ``up`` recorded for lab ``name``; return what was removed."""
    require_root()
    first = labstate.read(model.STATE_ROOT / name / "state.json")
    if first is None:
        first = {"format": STATE_VERSION}
    if labstate.version(first) == 1:
        return _down_v1(first)
    state = read_state(name)
    removed: list[str] = []
    if state is None:
        return removed
    lab = lab_of(state)
    namespaces = netns_list()
    removed += nfs.down(lab)
    removed += zfs.down(lab, state)
    for spec_host, host in zip(lab.spec.hosts, lab.hosts):
        pid = sshd_pid(lab, host.name)
        for dev in spec_host.devices:
            if pid and dev.fs and not spec_host.vm:
                sh("nsenter", "-t", str(pid), "-m", "--", "umount", str(lab.mount_point(host.name, dev.name)),
                    check=False)
        procs = [Path(d) / "cgroup.procs" for d in state["cgroups"].get(host.name, {}).values()]
        pids = set(sh("ip", "netns", "pids", host.netns, check=False).stdout.split()) if host.netns in namespaces \
            else set()
        pids |= {p for f in procs if f.exists() for p in f.read_text().split()} | ({str(pid)} if pid else set())
        kill(pids)
        if host.netns in namespaces:
            sh("ip", "netns", "del", host.netns)
            removed.append(f"netns {host.netns} ({len(pids)} processes killed)")
        elif spec_host.vm and pid:
            removed.append(f"virtual host {host.name} (qemu {pid} killed)")
        for port in host.ports:
            if link_exists(port.veth) and sh("ip", "link", "del", port.veth, check=False).returncode == 0:
                removed.append(f"link {port.veth}")
        for dev in spec_host.devices:
            path = lab.device_file(host.name, dev.name)
            for loop in sorted({*loops_of(path), state["loops"].get(f"{host.name}/{dev.name}")} - {None}):
                if loop in loops_of(path):
                    detach(loop)
                    removed.append(f"loop {loop} ({path.name})")
    removed += ceph.down(lab, state)
    removed += zfs.release_run_dirs(state)
    for link in lab.links:
        if link_exists(link.bridge):
            sh("ip", "link", "del", link.bridge)
            removed.append(f"bridge {link.bridge}")
    for host_dirs in state["cgroups"].values():
        for d in map(Path, host_dirs.values()):
            if d.exists():
                rmdir_cgroup(d)
                removed.append(f"cgroup {d}")
    for d in {Path(d).parent for host_dirs in state["cgroups"].values() for d in host_dirs.values()}:
        if d.exists():
            rmdir_cgroup(d)
    shutil.rmtree(lab.state_dir, ignore_errors=True)
    removed.append(f"state {lab.state_dir}")
    return removed


def _down_v1(state: dict) -> list[str]:
    """Remove a flat lab recorded in the first state format (no version: a bridge, hosts with netns and veth)."""
    removed = []
    namespaces = netns_list()
    for host in state["hosts"]:
        if host["netns"] in namespaces:
            pids = set(sh("ip", "netns", "pids", host["netns"], check=False).stdout.split())
            kill(pids)
            sh("ip", "netns", "del", host["netns"])
            removed.append(f"netns {host['netns']} ({len(pids)} processes killed)")
        if link_exists(host["veth"]) and sh("ip", "link", "del", host["veth"], check=False).returncode == 0:
            removed.append(f"link {host['veth']}")
    if link_exists(state["bridge"]):
        sh("ip", "link", "del", state["bridge"])
        removed.append(f"bridge {state['bridge']}")
    shutil.rmtree(model.STATE_ROOT / state["name"], ignore_errors=True)
    removed.append(f"state {model.STATE_ROOT / state['name']}")
    return removed


def traces(name: str) -> list[str]:
    """Anything of lab ``name`` still on the machine: namespaces, interfaces, processes, cgroups, loop devices.

    Found by the names ``up`` gives, not by the state file, so it also sees what a lost state
    file would have hidden; empty after a complete ``down``.
    """
    found = [n for n in sorted(netns_list()) if n.startswith(f"perflab-{name}-")]
    links = json.loads(sh("ip", "-j", "link", "show").stdout or "[]")
    found += [f"link {link['ifname']}" for link in links if link["ifname"].startswith(f"p{name}-")]
    procs = sh("pgrep", "-af", f"{model.STATE_ROOT}/{name}/", check=False).stdout.splitlines()
    found += [f"process {line}" for line in procs]
    found += [f"cgroup {root / CGROUP_PARENT / name}" for root in set(cgroup_hierarchies().values())
              if (root / CGROUP_PARENT / name).exists()]
    loops = sh("losetup", "-n", "-O", "NAME,BACK-FILE", check=False).stdout.splitlines()
    found += [f"loop {line}" for line in loops if f"{model.STATE_ROOT}/{name}/" in line]
    return found + ceph.traces(name) + nfs.traces(name) + zfs.traces(name)
