"""Each lab host's cgroups (cpuset, memory limit) and the CPU and memory they account."""

from __future__ import annotations

import os
import signal
import re
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .model import Lab, LabError
from .state import lab_of, read_state

#: Where each host's cgroup lives under a hierarchy's root: perflab/<lab>/<host>.
CGROUP_PARENT = "perflab"


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
    roles: dict[str, Path] = {k: v1[k] for k in ("cpuset", "memory", "cpuacct") if k in v1}
    if len(roles) == 3:
        return {**roles, **({"unified": v2} if v2 else {})}
    if v2 and {"cpuset", "memory", "cpu"} <= set((v2 / "cgroup.controllers").read_text().split()):
        return {"unified": v2}
    return {}


def _v2_only(hierarchies: dict[str, Path]) -> bool:
    return set(hierarchies) == {"unified"}


def cgroup_dirs(lab: Lab, hierarchies: dict[str, Path]) -> dict[str, dict[str, str]]:
    """host -> role -> the host's cgroup directory in that hierarchy."""
    return {h.name: {role: str(root / CGROUP_PARENT / lab.name / h.name) for role, root in hierarchies.items()}
            for h in lab.hosts}


def _write(path: Path, value: str, what: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise LabError(f"{what}: cannot write {value!r} to {path}: {exc.strerror}") from None


def cgroups_up(lab: Lab, hierarchies: dict[str, Path]) -> None:
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


def rmdir_cgroup(d: Path, timeout: float = 5.0) -> None:
    """Remove a cgroup directory, waiting while killed processes leave it.

    Cgroups made inside it (a campaign's process registry on a lab host, left by a run that was
    killed) go first, deepest first, their processes killed: they are the host's processes too.
    """
    for sub in sorted((p for p in d.iterdir() if p.is_dir()), key=lambda p: p.name) if d.is_dir() else []:
        for pid in (sub / "cgroup.procs").read_text().split() if (sub / "cgroup.procs").exists() else []:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        rmdir_cgroup(sub, timeout)
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


def in_cgroups(cgroup_procs: list[Path], *argv: str) -> None:
    """Run ``argv`` (which daemonizes) with its process in the given cgroups, so all it starts is in them."""
    script = 'for f in $PERFLAB_CGROUPS; do echo $$ > "$f" || exit 1; done; exec "$@"'
    proc = subprocess.run(["sh", "-c", script, "sh", *argv], capture_output=True, text=True,
                          env={**os.environ, "PERFLAB_CGROUPS": " ".join(map(str, cgroup_procs))})
    if proc.returncode != 0:
        raise LabError(f"`{shlex.join(argv)}` failed ({proc.returncode}): {proc.stderr.strip()}")


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
    state = read_state(name)
    if state is None:
        raise LabError(f"lab {name} is not up; bring it up with `perflab lab up`")
    lab_of(state).host(host)
    if not state["cgroups"].get(host):
        raise LabError(f"lab {name}: host {host} has no cgroup (no usable cgroup hierarchy was mounted at `up`)")
    return cgroup_usage(state["cgroups"][host])


def cgroup_usage(cgroups: dict[str, str]) -> HostUsage:
    """The counters of one host's cgroups (role -> directory)."""
    dirs = {role: Path(d) for role, d in cgroups.items()}
    pressure = None
    if "unified" in dirs and (dirs["unified"] / "cpu.pressure").exists():
        found = re.search(r"some avg10=([0-9.]+)", (dirs["unified"] / "cpu.pressure").read_text())
        pressure = float(found[1]) if found else None
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
    max_ = (d / "memory.max").read_text().strip()
    return HostUsage(cpu["usage_usec"] / 1e6, cpu["user_usec"] / 1e6, cpu["system_usec"] / 1e6,
                     int((d / "memory.current").read_text()), int(peak.read_text()) if peak.exists() else None,
                     None if max_ == "max" else int(max_), (d / "cpuset.cpus.effective").read_text().strip(),
                     pressure)
