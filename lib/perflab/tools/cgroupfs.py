"""A lab host's own CPU time: deltas of its cgroup's counters around one sample.

Lab hosts share the kernel's ``/proc/stat``, so the machine's CPU counters cannot say
which host used the CPU; each lab host runs in its own cgroup instead (docs/lab.md). The
runner reads, on the controller, ``/proc/uptime`` and the cgroup's CPU counters right
before and after a sample's measured commands (``cgroup-before.txt`` and ``cgroup-after.txt``
in the sample's ``monitors/<host>.tar.xz``, see :func:`perflab.hosts.monitors.cgroup_snapshot`). This parser reads the
two snapshots concatenated and yields:

- ``cpu_seconds`` (s): CPU time of everything the host ran (user plus system), from
  cgroup v1 ``cpuacct.usage`` (ns) or cgroup v2 ``cpu.stat`` ``usage_usec``;
- ``user_seconds`` and ``system_seconds`` (s): from ``cpu.stat`` (µs) or else
  ``cpuacct.stat`` (USER_HZ ticks, 100 per second on Linux: 10 ms resolution);
- ``elapsed`` (s): ``/proc/uptime`` difference (10 ms resolution);
- ``cpu_load`` (ratio): ``cpu_seconds / elapsed``, CPUs kept busy on average (1 = one CPU);
  missing when ``elapsed`` is below :data:`MIN_ELAPSED`, where the uptime's 10 ms
  resolution would make the ratio meaningless.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from .base import Command, Measurement, ParseError, ParseOnly, Rows

#: Ticks per second of ``cpuacct.stat`` (the kernel's USER_HZ, fixed at 100 for user space).
USER_HZ = 100
#: Shortest elapsed time (s) for which ``cpu_load`` is given: 10 uptime ticks.
MIN_ELAPSED = 0.1
_HEADER = re.compile(r"==> (\S+) <==")


class CgroupCpu(ParseOnly):
    """Parser of the runner's cgroup snapshots of a lab host (read on the controller, never run)."""

    name = "cgroup"
    parser_version = 1

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """Refuse: the runner takes these snapshots itself around every monitored sample."""
        raise NotImplementedError("cgroup: the runner reads a lab host's cgroup counters around each monitored sample "
                         "(`monitors: true`); it is not a benchmark to run")

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """CPU seconds (total, user, system), elapsed time and CPU load between two snapshots."""
        snaps = _snapshots(stdout, source)
        if len(snaps) != 2:
            raise ParseError(source, "two snapshots (before and after), each starting with /proc/uptime",
                             f"{len(snaps)}")
        before, after = snaps
        rows = Rows(source)
        elapsed = _delta(before, after, "uptime", source)
        total = _first_delta(before, after, ("cpuacct.usage", "usage_usec"), source)
        user = _first_delta(before, after, ("user_usec", "cpuacct.user"), source)
        system = _first_delta(before, after, ("system_usec", "cpuacct.system"), source)
        if total is None:
            raise ParseError(source, "cpuacct.usage or cpu.stat usage_usec in both snapshots", "neither")
        rows.add("cpu_seconds", total, "s", "cgroup CPU usage")
        rows.add("user_seconds", user, "s", "cgroup user CPU")
        rows.add("system_seconds", system, "s", "cgroup system CPU")
        rows.add("elapsed", elapsed, "s", "/proc/uptime difference")
        rows.add("cpu_load", total / elapsed if elapsed >= MIN_ELAPSED else None, "ratio", "cpu_seconds / elapsed")
        return rows


def _snapshots(text: str, source: str) -> list[dict[str, float]]:
    """Each snapshot's counters in seconds: ``uptime``, ``cpuacct.usage``, ``cpuacct.user`` ... ``usage_usec``."""
    snaps: list[dict[str, float]] = []
    section = None
    for lineno, line in enumerate(text.splitlines(), 1):
        header = _HEADER.fullmatch(line.strip())
        if header:
            section = header[1].rsplit("/", 1)[-1]
            if header[1] == "/proc/uptime":
                snaps.append({})
            continue
        parts = line.split()
        if not parts or section is None:
            continue
        if not snaps:
            raise ParseError(source, "a snapshot starting with '==> /proc/uptime <=='", f"line {lineno}: {line!r}")
        try:
            if section == "uptime":
                snaps[-1]["uptime"] = float(parts[0])
            elif section == "cpuacct.usage":
                snaps[-1]["cpuacct.usage"] = int(parts[0]) / 1e9
            elif section == "cpuacct.stat" and len(parts) == 2:
                snaps[-1][f"cpuacct.{parts[0]}"] = int(parts[1]) / USER_HZ
            elif section == "cpu.stat" and len(parts) == 2 and parts[0].endswith("_usec"):
                snaps[-1][parts[0]] = int(parts[1]) / 1e6
        except ValueError:
            raise ParseError(source, f"numbers in {section}", f"line {lineno}: {line!r}") from None
    return snaps


def _delta(before: Mapping[str, float], after: Mapping[str, float], key: str, source: str) -> float:
    if key not in before or key not in after:
        raise ParseError(source, f"{key} in both snapshots", "it is missing")
    if after[key] < before[key]:
        raise ParseError(source, f"{key} not decreasing", f"{before[key]} then {after[key]} (another cgroup?)")
    return after[key] - before[key]


def _first_delta(before: Mapping[str, float], after: Mapping[str, float], keys: tuple[str, ...],
                 source: str) -> float | None:
    """The delta of the first of ``keys`` both snapshots hold, else None."""
    for key in keys:
        if key in before and key in after:
            return _delta(before, after, key, source)
    return None
