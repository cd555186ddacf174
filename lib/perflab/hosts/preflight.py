"""Preflight: what a campaign needs on its hosts, checked in one round trip per host before anything runs.

A campaign's ``requires`` lists, per role or host (or ``all``), the commands, Debian
packages, file systems, kernel modules, free disk space, paths, writable files, answering URLs
(a pfSense guest's web API), hardware virtualization and a run-time SMT switch it needs, and a
destructive campaign's ``devices`` must exist unmounted; the programs its tool
runs on each role are required implicitly. :func:`check` asks every involved host at once
and returns one line per thing missing, naming the host and what to do.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Mapping

from .. import tools
from ..campaign import Campaign
from .remote import Host


@dataclass
class Needs:
    """What one host must have."""

    commands: set[str] = field(default_factory=set)
    packages: set[str] = field(default_factory=set)
    filesystems: set[str] = field(default_factory=set)
    modules: set[str] = field(default_factory=set)
    #: Path -> MiB that must be free there.
    free_mib: dict[str, float] = field(default_factory=dict)
    paths: set[str] = field(default_factory=set)
    writable: set[str] = field(default_factory=set)
    urls: set[str] = field(default_factory=set)
    #: Block devices a destructive campaign overwrites: they must exist and not be mounted.
    unmounted: set[str] = field(default_factory=set)
    #: True: SMT must be switchable at run time.
    smt: bool = False
    #: True: hardware virtualization must be there.
    kvm: bool = False


def needs(spec: Campaign) -> dict[str, Needs]:
    """Inventory host -> what it needs: the tool's programs on its roles' hosts, plus ``requires``."""
    out = {name: Needs() for name in spec.involved()}
    tool = tools.get(spec.tool)
    hosts = [spec.hosts, *spec.groups] if spec.groups else [spec.hosts, *(
        {role: seat.host} for role, seats in spec.concurrent.items() for seat in seats)]
    placeholder = {role: "192.0.2.1" for role in tool.roles}
    for cell in spec.cells()[:1]:
        for cmd in tool.commands(spec.cell_params(cell.levels), placeholder):
            for mapping in hosts:
                if cmd.role in mapping:
                    out.setdefault(mapping[cmd.role], Needs()).commands.add(cmd.argv[0])
    for item in spec.doc.get("requires", []):
        targets = sorted(out) if item["on"] == "all" else [spec.host_of(item["on"])]
        for name in targets:
            n = out.setdefault(name, Needs())
            n.commands |= set(item.get("commands", []))
            n.packages |= set(item.get("packages", []))
            n.filesystems |= set(item.get("filesystems", []))
            n.modules |= set(item.get("modules", []))
            for path, mib in item.get("free_mib", {}).items():
                n.free_mib[path] = max(n.free_mib.get(path, 0.0), float(mib))
            for kind in ("paths", "writable", "urls"):
                getattr(n, kind).update(item.get(kind, []))
            n.smt, n.kvm = n.smt or bool(item.get("smt")), n.kvm or bool(item.get("kvm"))
    for target, devices in spec.doc.get("devices", {}).items():
        out.setdefault(spec.host_of(target), Needs()).unmounted.update(devices)
    return out


def script(n: Needs) -> str:
    """A POSIX shell script printing one line per unmet need (nothing when all are met)."""
    q = shlex.quote
    lines = [f"command -v {q(c)} >/dev/null 2>&1 || echo command {q(c)}" for c in sorted(n.commands)]
    lines += [f"dpkg-query -W -f='${{Status}}' {q(p)} 2>/dev/null | grep -q 'ok installed' || echo package {q(p)}"
              for p in sorted(n.packages)]
    lines += [f"grep -qw {q(f)} /proc/filesystems || modinfo {q(f)} >/dev/null 2>&1 || echo filesystem {q(f)}"
              for f in sorted(n.filesystems)]
    lines += [f"[ -d /sys/module/{q(m)} ] || modinfo {q(m)} >/dev/null 2>&1 || echo module {q(m)}"
              for m in sorted(n.modules)]
    lines += [f"free=$(df -Pm {q(p)} 2>/dev/null | awk 'NR==2 {{print $4}}'); "
              f"[ -n \"$free\" ] && [ \"$free\" -ge {int(mib)} ] || echo free {q(p)} {int(mib)} \"${{free:-none}}\""
              for p, mib in sorted(n.free_mib.items())]
    lines += [f"[ -e {q(p)} ] || echo path {q(p)}" for p in sorted(n.paths)]
    lines += [f"[ -w {q(p)} ] || echo writable {q(p)}" for p in sorted(n.writable)]
    lines += [f"curl -fsk -m 10 -o /dev/null {q(u)} 2>/dev/null || echo url {q(u)}" for u in sorted(n.urls)]
    lines += [f"if [ ! -b {q(d)} ]; then echo device {q(d)}; elif lsblk -nro MOUNTPOINT {q(d)} | grep -q .; "
              f"then echo mounted {q(d)}; fi" for d in sorted(n.unmounted)]
    if n.kvm:
        lines.append("grep -qwE 'vmx|svm' /proc/cpuinfo && [ -w /dev/kvm ] || echo kvm hardware")
    if n.smt:
        lines.append("grep -qx -e on -e off /sys/devices/system/cpu/smt/control 2>/dev/null || echo smt switch")
    return "\n".join(lines) + "\ntrue\n"


_ADVICE = {
    "command": "install the program that provides it (on the lab: `make deps`, which installs the tools' Debian packages)",
    "package": "install it: apt-get install -y {what}",
    "filesystem": "this kernel cannot mount {what}; choose another file system or a host whose kernel has it",
    "module": "this kernel has no module {what}; run the campaign on a host that has it (an inventory of real hosts)",
    "path": "it does not exist there; run the campaign on a host that has it (docs/real-hosts.md)",
    "writable": "it is absent or read-only there (not root, or not supported by this machine)",
    "url": "it does not answer there; start the service or fix the address",
    "device": "no such block device there; name the host's device in the campaign's `devices` and filenames",
    "kvm": "no vmx/svm CPU flag or no writable /dev/kvm: guests would run under TCG emulation and measure the "
           "emulator; use a host with hardware virtualization enabled in its firmware",
    "smt": "this machine cannot switch SMT at run time (/sys/devices/system/cpu/smt/control is not on/off; "
           "a VM or a BIOS setting); use a host whose firmware allows it",
    "mounted": "it is mounted there and this destructive campaign would overwrite it; unmount it or name another device",
}


def check(spec: Campaign, hosts: Mapping[str, Host]) -> list[str]:
    """Ask every involved host what it lacks; return one problem per missing thing (empty: ready to run)."""
    return [p for name, n in needs(spec).items() if name in hosts for p in missing(hosts[name], n)]


def missing(host: Host, n: Needs) -> list[str]:
    """Ask ``host`` for what of ``n`` it lacks; one problem line per missing thing."""
    problems = []
    for line in host.run(script(n), timeout=60).stdout.splitlines():
        kind, _, what = line.partition(" ")
        if kind == "free":
            path, want, have = what.split(" ")
            problems.append(f"host {host.name}: {path} has {have} MiB free, the campaign needs {want} MiB; "
                            "free space there or lower the campaign's sizes")
        elif kind == "mounted":
            problems.append(f"host {host.name}: device {what} is mounted; " + _ADVICE[kind])
        elif kind in _ADVICE:
            problems.append(f"host {host.name}: {kind} {what} is missing; " + _ADVICE[kind].format(what=what))
    return problems
