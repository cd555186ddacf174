"""sysstat monitors: ``mpstat -o JSON`` and ``sadf -j`` of an sadc file.

Both print sysstat's JSON (``{"sysstat": {"hosts": [{"statistics": [...]}]}}``); the
parsers share the section readers below. Every row carries the dim ``timestamp`` (ISO
8601, in the time zone sysstat reports: UTC for sadf, the host's local time for
mpstat), and the entity dims ``cpu`` ("all", "0", ...), ``iface`` or ``device``. Rows
without ``timestamp`` are the means over the monitored intervals. The empty objects that end
``sadf -e``'s statistics when it cut a recording before its end are not intervals and are skipped.

Metrics: ``cpu_usr``, ``cpu_nice``, ``cpu_sys``, ``cpu_iowait``, ``cpu_irq``,
``cpu_soft``, ``cpu_steal``, ``cpu_guest``, ``cpu_gnice``, ``cpu_idle`` (%; sysstat's
"user"/"system" without ``-u ALL`` are mapped to usr/sys); ``run_queue``,
``process_list``, ``blocked`` (count), ``load_1``/``load_5``/``load_15``;
``net_rx_packets``/``net_tx_packets`` (packet/s), ``net_rx_bytes``/``net_tx_bytes``
(byte/s; sysstat's kB is 1024 bytes), ``net_util`` (%); ``disk_tps`` (IOPS),
``disk_read_bytes``/``disk_write_bytes`` (byte/s, from rkB/wkB or 512-byte sectors),
``disk_await`` (s), ``disk_queue`` (1), ``disk_util`` (%).
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from datetime import date, datetime, timedelta
from statistics import fmean
from typing import Any, Mapping

from . import _blocks
from .base import Command, Measurement, Param, ParseError, Rows, Tool, require

CPU_FIELDS = {"usr": "usr", "user": "usr", "nice": "nice", "sys": "sys", "system": "sys", "iowait": "iowait",
              "irq": "irq", "soft": "soft", "steal": "steal", "guest": "guest", "gnice": "gnice", "idle": "idle"}
QUEUE_FIELDS = {"runq-sz": ("run_queue", "count"), "plist-sz": ("process_list", "count"),
                "blocked": ("blocked", "count"), "ldavg-1": ("load_1", "1"), "ldavg-5": ("load_5", "1"),
                "ldavg-15": ("load_15", "1")}
NET_FIELDS = {"rxpck": ("net_rx_packets", "packet/s", 1.0), "txpck": ("net_tx_packets", "packet/s", 1.0),
              "rxkB": ("net_rx_bytes", "byte/s", 1024.0), "txkB": ("net_tx_bytes", "byte/s", 1024.0),
              "ifutil-percent": ("net_util", "%", 1.0)}
DISK_FIELDS = {"tps": ("disk_tps", "IOPS", 1.0), "rkB": ("disk_read_bytes", "byte/s", 1024.0),
               "wkB": ("disk_write_bytes", "byte/s", 1024.0), "await": ("disk_await", "s", 1e-3),
               "util-percent": ("disk_util", "%", 1.0)}
DISK_FALLBACKS = {"rd_sec": ("disk_read_bytes", "byte/s", 512.0), "wr_sec": ("disk_write_bytes", "byte/s", 512.0)}
QUEUE_SIZE_KEYS = ("aqu-sz", "avgqu-sz")


class Mpstat(Tool):
    """Per-CPU utilisation from ``mpstat -P ALL -o JSON INTERVAL COUNT``."""

    name = "mpstat"
    parser_version = 1
    debian_packages = ("sysstat",)
    version_command = ("mpstat", "-V")
    params = (
        Param("duration", "number", 10, "s", "how long to record", positive=True),
        Param("interval", "int", 1, "s", "seconds between records", positive=True),
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """mpstat with ISO dates, every ``interval`` s for ``duration`` s."""
        interval, count = _interval_count(params)
        return [Command("client", ("env", "LC_ALL=C", "S_TIME_FORMAT=ISO", "mpstat", "-P", "ALL", "-o", "JSON",
                                   str(interval), str(count)))]

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """cpu_* percentages per CPU and timestamp, and their means."""
        host = _host(stdout, source)
        day = _date(host.get("date"), source)
        rows = Rows(source)
        clock = _Clock(day, source)
        for i, stats in enumerate(_statistics(host, source)):
            stamp = clock.at(require(stats, "timestamp", source=source, where=f"statistics[{i}]"))
            _cpu_rows(rows, stats, f"statistics[{i}]", stamp)
        return _with_means(rows)


class Sadf(Tool):
    """CPU, queue, network and disk activity from ``sadf -j`` of an sadc recording."""

    name = "sadf"
    parser_version = 1
    debian_packages = ("sysstat",)
    version_command = ("sadf", "-V")
    params = (
        Param("duration", "number", 10, "s", "how long to record", positive=True),
        Param("interval", "int", 1, "s", "seconds between records", positive=True),
        Param("sadc", "program", "/usr/lib/sysstat/sadc", "", "the sadc binary that records", programs=frozenset({"*"})),
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """Record with sadc for ``duration`` s, then print ``sadf -j -- -u ALL -P ALL -q -n DEV -d``."""
        interval, count = _interval_count(params)
        sadc = shlex.quote(str(params.get("sadc", "/usr/lib/sysstat/sadc")))
        script = (f'f=$(mktemp) && {sadc} -S XALL {interval} {count + 1} "$f" && '
                  'LC_ALL=C sadf -j "$f" -- -u ALL -P ALL -q -n DEV -d; rc=$?; rm -f "$f"; exit $rc')
        return [Command("client", ("sh", "-c", script))]

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """cpu_*, queue and load, per-interface and per-device rows per timestamp, and their means."""
        host = _host(stdout, source)
        rows = Rows(source)
        for i, stats in enumerate(_statistics(host, source)):
            where = f"statistics[{i}]"
            stamp = require(stats, "timestamp", source=source, where=where)
            if not isinstance(stamp, dict):
                raise ParseError(source, f"a timestamp object at {where}", repr(stamp)[:40])
            when = f"{stamp.get('date')}T{stamp.get('time')}" + ("Z" if stamp.get("utc") else "")
            _cpu_rows(rows, stats, where, when)
            queue = stats.get("queue") or {}
            for key, (metric, unit) in QUEUE_FIELDS.items():
                if key in queue:
                    rows.add(metric, queue[key], unit, f"{where}.queue.{key}", timestamp=when)
            for j, nic in enumerate((stats.get("network") or {}).get("net-dev") or []):
                _entity_rows(rows, nic, NET_FIELDS, {}, f"{where}.network.net-dev[{j}]", iface=nic.get("iface"),
                             timestamp=when)
            for j, disk in enumerate(stats.get("disk") or []):
                at = f"{where}.disk[{j}]"
                device = disk.get("disk-device")
                _entity_rows(rows, disk, DISK_FIELDS, DISK_FALLBACKS, at, device=device, timestamp=when)
                size_key = next((k for k in QUEUE_SIZE_KEYS if k in disk), None)
                if size_key:
                    rows.add("disk_queue", disk[size_key], "1", f"{at}.{size_key}", device=device, timestamp=when)
        return _with_means(rows)


class _Clock:
    """Turns mpstat's bare times of day into ISO timestamps, rolling over at midnight."""

    def __init__(self, day: date, source: str) -> None:
        self.day, self.source = day, source
        self.last: datetime | None = None

    def at(self, time_of_day: str) -> str:
        try:
            clock = datetime.strptime(str(time_of_day).split()[0], "%H:%M:%S").time()
        except (ValueError, IndexError):
            raise ParseError(self.source, "a time of day such as 20:01:19 in a timestamp", repr(time_of_day)) from None
        moment = datetime.combine(self.day, clock)
        if self.last is not None and moment < self.last:
            self.day += timedelta(days=1)
            moment += timedelta(days=1)
        self.last = moment
        return moment.isoformat()


def _interval_count(params: Mapping[str, Any]) -> tuple[int, int]:
    interval = int(params.get("interval", 1))
    return interval, max(int(float(params.get("duration", 10)) // interval), 1)


def _host(stdout: str, source: str) -> Mapping[str, Any]:
    doc = _blocks.one_json(stdout, '"sysstat":', source=source)
    hosts = require(require(doc, "sysstat", source=source, where="the document"), "hosts", source=source,
                    where="sysstat")
    if not isinstance(hosts, list) or len(hosts) != 1:
        raise ParseError(source, "exactly one host in sysstat.hosts", repr(hosts)[:60])
    return hosts[0]


def _statistics(host: Mapping[str, Any], source: str) -> list[Mapping[str, Any]]:
    stats = require(host, "statistics", source=source, where="sysstat.hosts[0]")
    if isinstance(stats, list):
        stats = _closed(stats)
    if not isinstance(stats, list) or not stats:
        raise ParseError(source, "at least one interval in sysstat.hosts[0].statistics",
                         "none (did the monitor run for at least one interval?)")
    return stats


def _closed(stats: list[Any]) -> list[Any]:
    """``stats`` without the empty objects sadf ends them with when ``-e`` cut the recording before its end."""
    end = len(stats)
    while end and stats[end - 1] == {}:
        end -= 1
    return stats[:end]


def _date(text: Any, source: str) -> date:
    for layout in ("%Y-%m-%d", "%m/%d/%y", "%m/%d/%Y", "%d/%m/%y"):
        try:
            return datetime.strptime(str(text), layout).date()
        except ValueError:
            continue
    raise ParseError(source, "a date such as 2026-11-22 or 11/22/26 in sysstat.hosts[0].date", repr(text))


def _cpu_rows(rows: Rows, stats: Mapping[str, Any], where: str, when: str) -> None:
    for j, cpu in enumerate(stats.get("cpu-load") or []):
        at = f"{where}.cpu-load[{j}]"
        name = str(require(cpu, "cpu", source=rows.source, where=at))
        for key, value in cpu.items():
            if key in CPU_FIELDS:
                rows.add(f"cpu_{CPU_FIELDS[key]}", value, "%", f"{at}.{key}", cpu=name, timestamp=when)


def _entity_rows(rows: Rows, entry: Mapping[str, Any], fields: Mapping[str, tuple[str, str, float]],
                 fallbacks: Mapping[str, tuple[str, str, float]], at: str, **dims: Any) -> None:
    done = set()
    for key, (metric, unit, scale) in fields.items():
        if key in entry:
            rows.add(metric, entry[key], unit, f"{at}.{key}", scale=scale, **dims)
            done.add(metric)
    for key, (metric, unit, scale) in fallbacks.items():
        if key in entry and metric not in done:
            rows.add(metric, entry[key], unit, f"{at}.{key}", scale=scale, **dims)


def _with_means(rows: Rows) -> Rows:
    """Append, per metric and entity, the mean over timestamps (rows without ``timestamp``)."""
    groups: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    units: dict[tuple[Any, ...], tuple[str, dict[str, Any]]] = {}
    for row in list(rows):
        dims = {k: v for k, v in row.dims.items() if k != "timestamp"}
        key = (row.metric, tuple(sorted(dims.items())))
        units[key] = (row.unit, dims)
        if row.value is not None:
            groups[key].append(row.value)
    for key, (unit, dims) in units.items():
        values = groups[key]
        rows.add(key[0], fmean(values) if values else None, unit, f"mean of {key[0]}", **dims)
    return rows
