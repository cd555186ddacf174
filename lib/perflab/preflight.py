"""Preflight: what a campaign needs on its hosts, checked in one round trip per host before anything runs.

A campaign's ``requires`` lists, per role or host (or ``all``), the commands, Debian
packages, file systems, kernel modules and free disk space it needs; the programs its tool
runs on each role are required implicitly. :func:`check` asks every involved host at once
and returns one line per thing missing, naming the host and what to do.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Mapping

from . import tools
from .campaign import Campaign
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
    return "\n".join(lines) + "\ntrue\n"


_ADVICE = {
    "command": "install the program that provides it (on the lab: `make deps`, which installs the tools' Debian packages)",
    "package": "install it: apt-get install -y {what}",
    "filesystem": "this kernel cannot mount {what}; choose another file system or a host whose kernel has it",
    "module": "this kernel has no module {what}; run the campaign on a host that has it (an inventory of real hosts)",
}


def check(spec: Campaign, hosts: Mapping[str, Host]) -> list[str]:
    """Ask every involved host what it lacks; return one problem per missing thing (empty: ready to run)."""
    problems = []
    for name, n in needs(spec).items():
        if name not in hosts:
            continue
        res = hosts[name].run(script(n), timeout=60)
        for line in res.stdout.splitlines():
            kind, _, what = line.partition(" ")
            if kind == "free":
                path, want, have = what.split(" ")
                problems.append(f"host {name}: {path} has {have} MiB free, the campaign needs {want} MiB; "
                                "free space there or lower the campaign's sizes")
            elif kind in _ADVICE:
                problems.append(f"host {name}: {kind} {what} is missing; " + _ADVICE[kind].format(what=what))
    return problems
