"""Kernel counters without sysstat: load average, and /proc/stat and /proc/net/dev deltas.

``loadavg`` reads ``/proc/loadavg``, ``uptime``, or a ``top`` header (Linux "load
average: a, b, c" and FreeBSD/pfSense "load averages: a, b, c", the two headers seed
000's script cut with awk field positions). Rows ``load_1``, ``load_5``, ``load_15``.

``procstat`` records snapshots of ``/proc/stat`` and ``/proc/net/dev``, each preceded
by ``@timestamp <epoch seconds>`` (and once ``@clk_tck <ticks per second>``), and
yields their deltas: ``cpu_time`` (s, dims ``cpu`` and ``state``) and
``net_rx_bytes``/``net_tx_bytes`` (byte), ``net_rx_packets``/``net_tx_packets``
(packet) with dim ``iface``; per interval (dims ``interval_start``/``interval_end``, s
since the first snapshot) and over the whole recording (no interval dims), plus
``elapsed`` (s). It also reads the runner's monitor snapshots (``tail -n +1`` of
/proc/uptime, stat, net/dev and others: ``proc-before.txt`` followed by
``proc-after.txt``). :func:`per_operation` turns the totals into seed 004's CPU time per
operation and bytes per operation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .base import Command, Measurement, Param, ParseError, Rows, Tool, number

#: /proc/stat cpu columns (proc(5)); guest and guest_nice are already counted in user and nice.
CPU_STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
BUSY_STATES = ("user", "nice", "system", "irq", "softirq", "steal")
#: /proc/net/dev columns: 8 receive then 8 transmit counters.
NET_FIELDS = ("rx_bytes", "rx_packets", "rx_errs", "rx_drop", "rx_fifo", "rx_frame", "rx_compressed",
              "rx_multicast", "tx_bytes", "tx_packets", "tx_errs", "tx_drop", "tx_fifo", "tx_colls",
              "tx_carrier", "tx_compressed")
NET_DELTAS = (("rx_bytes", "net_rx_bytes", "byte"), ("tx_bytes", "net_tx_bytes", "byte"),
              ("rx_packets", "net_rx_packets", "packet"), ("tx_packets", "net_tx_packets", "packet"))
DEFAULT_CLK_TCK = 100

_LOAD = re.compile(r"load averages?:\s*(?P<l1>\d+[.,]\d+),?\s+(?P<l5>\d+[.,]\d+),?\s+(?P<l15>\d+[.,]\d+)")
_PROC_LOADAVG = re.compile(r"^(?P<l1>\d+\.\d+) (?P<l5>\d+\.\d+) (?P<l15>\d+\.\d+) (?P<run>\d+)/(?P<all>\d+) \d+\s*$",
                           re.MULTILINE)


class LoadAvg(Tool):
    """1-, 5- and 15-minute load averages from /proc/loadavg, uptime or top."""

    name = "loadavg"
    parser_version = 1
    debian_packages = ("procps",)

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """``cat /proc/loadavg``."""
        return [Command("client", ("cat", "/proc/loadavg"))]

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """Instantaneous."""
        return 1.0

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """load_1/5/15; from /proc/loadavg also ``runnable`` and ``processes``."""
        rows = Rows(source)
        proc = list(_PROC_LOADAVG.finditer(stdout))
        matches = proc or list(_LOAD.finditer(stdout))
        if not matches:
            raise ParseError(source, "a load average (/proc/loadavg, 'load average: a, b, c' or "
                             "'load averages: a, b, c')", repr(stdout.strip()[:80]) or "empty output")
        for i, match in enumerate(matches):
            dims = {"sample": i} if len(matches) > 1 else {}
            for key, metric in (("l1", "load_1"), ("l5", "load_5"), ("l15", "load_15")):
                rows.add(metric, match[key], "1", metric, **dims)
            if proc:
                rows.add("runnable", match["run"], "count", "runnable/total", **dims)
                rows.add("processes", match["all"], "count", "runnable/total", **dims)
        return rows


@dataclass
class Snapshot:
    """One reading of /proc/stat and /proc/net/dev."""

    time: float
    cpu: dict[str, dict[str, int]] = field(default_factory=dict)
    net: dict[str, dict[str, int]] = field(default_factory=dict)


class ProcStat(Tool):
    """CPU time and network byte deltas from /proc snapshots (seed 004's per-op costs)."""

    name = "procstat"
    parser_version = 1
    debian_packages = ("coreutils",)
    params = (
        Param("duration", "number", 10, "s", "how long to record", positive=True),
        Param("interval", "number", 1, "s", "seconds between records", positive=True),
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """Snapshots every ``interval`` s for ``duration`` s (at least two: before and after)."""
        interval = float(params.get("interval", 1))
        count = max(int(float(params.get("duration", 10)) / interval), 1)
        script = ('echo "@clk_tck $(getconf CLK_TCK)"; i=0; while :; do echo "@timestamp $(date +%s.%N)"; '
                  f'cat /proc/stat /proc/net/dev; [ $i -ge {count} ] && break; i=$((i+1)); sleep {interval:g}; done')
        return [Command("client", ("sh", "-c", script))]

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """cpu_time per CPU and state, network byte and packet deltas; per interval and in total."""
        snapshots, clk_tck = parse_snapshots(stdout, source=source)
        if len(snapshots) < 2:
            raise ParseError(source, "at least two '@timestamp' snapshots to take a difference",
                             f"{len(snapshots)} snapshot(s)")
        empty = [i for i, snap in enumerate(snapshots, 1) if not snap.cpu and not snap.net]
        if empty:
            raise ParseError(source, "/proc/stat or /proc/net/dev counters in every snapshot",
                             f"none in snapshot {empty[0]} of {len(snapshots)}")
        rows = Rows(source)
        first, last = snapshots[0], snapshots[-1]
        rows.add("elapsed", last.time - first.time, "s", "@timestamp difference")
        _delta_rows(rows, first, last, clk_tck)
        for before, after in zip(snapshots, snapshots[1:]):
            _delta_rows(rows, before, after, clk_tck, interval_start=round(before.time - first.time, 6),
                        interval_end=round(after.time - first.time, 6))
        return rows


def parse_snapshots(text: str, *, source: str = "") -> tuple[list[Snapshot], int]:
    """The snapshots in ``text`` and the clock ticks per second.

    Two layouts are read: the ``procstat`` command's (``@timestamp <epoch>`` then
    /proc/stat and /proc/net/dev), and ``tail -n +1`` of several /proc files as the
    runner's monitors take them (``==> /proc/uptime <==`` starts a snapshot whose time is
    the uptime; sections other than uptime, stat and net/dev are skipped).
    """
    snapshots: list[Snapshot] = []
    clk_tck = DEFAULT_CLK_TCK
    section = None
    for lineno, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        header = re.fullmatch(r"==> (\S+) <==", line.strip())
        if header:
            section = header[1]
            continue
        if not parts or section not in (None, "/proc/uptime", "/proc/stat", "/proc/net/dev"):
            continue
        if parts[0] == "@clk_tck":
            clk_tck = _count(parts[1:2], source, lineno)[0]
        elif parts[0] == "@timestamp" or section == "/proc/uptime":
            when = number(parts[1] if parts[0] == "@timestamp" else parts[0], source=source,
                          what=f"snapshot time on line {lineno}")
            snapshots.append(Snapshot(time=when or 0.0))
        elif not snapshots:
            raise ParseError(source, "'@timestamp <epoch>' or '==> /proc/uptime <==' before the first /proc line",
                             f"line {lineno}: {line[:60]!r}")
        elif re.fullmatch(r"cpu\d*", parts[0]) and section in (None, "/proc/stat"):
            name = "all" if parts[0] == "cpu" else parts[0][3:]
            snapshots[-1].cpu[name] = dict(zip(CPU_STATES, _count(parts[1:], source, lineno)))
        elif ":" in line and "|" not in line and section in (None, "/proc/net/dev"):
            iface, counters = line.split(":", 1)
            values = counters.split()
            if len(values) != len(NET_FIELDS):
                raise ParseError(source, f"{len(NET_FIELDS)} counters after the interface name in /proc/net/dev",
                                 f"line {lineno}: {len(values)} fields")
            snapshots[-1].net[iface.strip()] = dict(zip(NET_FIELDS, _count(values, source, lineno)))
    return snapshots, clk_tck


def _count(values: list[str], source: str, lineno: int) -> list[int]:
    """Counters of a /proc line as integers, or :class:`ParseError` naming the line."""
    if not values or not all(v.isascii() and v.isdigit() for v in values):
        raise ParseError(source, f"whole-number counters on line {lineno}", repr(" ".join(values)[:60]))
    return [int(v) for v in values]


def _delta_rows(rows: Rows, before: Snapshot, after: Snapshot, clk_tck: int, **dims: Any) -> None:
    where = f"snapshots at {before.time:.3f} and {after.time:.3f}"
    for cpu, states in after.cpu.items():
        for state, ticks in states.items():
            delta = _delta(ticks, before.cpu.get(cpu, {}).get(state), rows.source, f"cpu{cpu} {state}", where)
            rows.add("cpu_time", delta / clk_tck, "s", f"/proc/stat {cpu} {state}", cpu=cpu, state=state, **dims)
    for iface, counters in after.net.items():
        for key, metric, unit in NET_DELTAS:
            delta = _delta(counters[key], before.net.get(iface, {}).get(key), rows.source, f"{iface} {key}", where)
            rows.add(metric, delta, unit, f"/proc/net/dev {iface} {key}", iface=iface, **dims)


def _delta(after: int, before: int | None, source: str, what: str, where: str) -> int:
    if before is None:
        raise ParseError(source, f"counter {what} in both {where}", "it appears only in the later one")
    if after < before:
        raise ParseError(source, f"counter {what} not decreasing between {where}",
                         f"{before} then {after} (reboot or counter wrap; discard this sample)")
    return after - before


def per_operation(measurements: Iterable[Measurement], operations: float, *,
                  ifaces: Iterable[str] | None = None) -> list[Measurement]:
    """Seed 004's efficiency metrics from ``procstat`` totals and a benchmark's operation count.

    ``cpu_time_per_op`` (s/op) is the busy CPU time of cpu "all" (user, nice, system,
    irq, softirq, steal; not idle or iowait) over ``operations``; ``bytes_per_op``
    (byte/op) is received plus transmitted bytes of ``ifaces`` (default: every
    interface but ``lo``) over ``operations``.
    """
    if operations <= 0:
        # tidy passes a sample's positive operation count only: another value is a bug in the caller
        raise ValueError(f"operations must be positive to compute per-operation costs, got {operations}")
    totals = [m for m in measurements if "interval_start" not in m.dims]
    wanted = None if ifaces is None else set(ifaces)
    busy = sum(m.value for m in totals if m.value is not None and m.metric == "cpu_time" and m.dims.get("cpu") == "all"
               and m.dims.get("state") in BUSY_STATES)
    traffic = sum(m.value for m in totals if m.value is not None and m.metric in ("net_rx_bytes", "net_tx_bytes")
                  and (m.dims.get("iface") in wanted if wanted is not None else m.dims.get("iface") != "lo"))
    return [Measurement("cpu_time_per_op", busy / operations, "s/op"),
            Measurement("bytes_per_op", traffic / operations, "byte/op")]
