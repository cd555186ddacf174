"""sysbench 1.0 ``cpu`` and ``memory`` tests, parsed from the text report.

Role: ``client``. Parameters: ``test`` (cpu|memory), ``threads``, ``duration`` (--time,
s), ``cpu_max_prime`` (cpu), ``memory_block_size``, ``memory_total_size``,
``memory_oper`` (read|write), ``memory_access_mode`` (seq|rnd) for memory.

Rows: ``events_per_second`` (event/s), ``events``, ``total_time`` (s), latency
``latency_min``/``latency_avg``/``latency_max``/``latency_p95``/``latency_sum`` (s;
sysbench prints ms), and for memory ``operations_per_second`` (op/s) and
``memory_bandwidth`` (byte/s; sysbench's "MiB/sec" is 2**20 byte/s).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..errors import InputError
from . import _blocks
from .base import Command, Measurement, Param, ParseError, Rows, Tool, key_values, quantity, search

_GENERAL = re.compile(r"General statistics:\s*\n\s*total time:\s*(?P<time>[\d.]+)s\s*\n\s*"
                      r"total number of events:\s*(?P<events>\d+)")
_BANNER = re.compile(r"^sysbench \d", re.M)
_EPS = re.compile(r"events per second:\s*(?P<eps>[\d.]+)")
_OPS = re.compile(r"Total operations:\s*(?P<ops>\d+)\s*\(\s*(?P<rate>[\d.]+) per second\)")
_TRANSFER = re.compile(r"(?P<size>[\d.]+) (?P<unit>[KMGT]iB) transferred \((?P<rate>[\d.]+) (?P<runit>[KMGT]iB)/sec\)")
_FAIRNESS = re.compile(r"Threads fairness:\s*\n\s*events \(avg/stddev\):.*\n\s*execution time \(avg/stddev\):\s*[\d.]+/[\d.]+")
_LATENCY = re.compile(r"Latency \(ms\):\s*\n(?P<body>(?:\s+\S[^\n]*:\s*[\d.]+\s*\n)+)")


class Sysbench(Tool):
    """Adapter for ``sysbench cpu run`` and ``sysbench memory run`` (sysbench 1.0.x)."""

    name = "sysbench"
    parser_version = 1
    primary_metric = "events_per_second"
    debian_packages = ("sysbench",)
    version_command = ("sysbench", "--version")
    params = (
        Param("test", "word", "cpu", "", "the sysbench test", choices=("cpu", "memory")),
        Param("threads", "int", 1, "", "worker threads", positive=True),
        Param("duration", "number", 10, "s", "how long the test runs (--time)", positive=True),
        Param("cpu_max_prime", "int", None, "", "cpu test: the largest prime to compute"),
        Param("memory_block_size", "size", None, "byte", "memory test: bytes per operation"),
        Param("memory_total_size", "size", None, "byte", "memory test: bytes to transfer in all"),
        Param("memory_oper", "word", None, "", "memory test: read, write or none"),
        Param("memory_access_mode", "word", None, "", "memory test: seq or rnd"),
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """One ``sysbench TEST --time=... run``."""
        test = str(params.get("test", "cpu"))
        if test not in ("cpu", "memory"):
            raise InputError(f"sysbench test {test!r}: expected 'cpu' or 'memory'")
        argv = ["sysbench", test, f"--threads={params.get('threads', 1)}", f"--time={params.get('duration', 10)}"]
        for key in ("cpu_max_prime", "memory_block_size", "memory_total_size", "memory_oper", "memory_access_mode"):
            if params.get(key) is not None:
                argv.append(f"--{key.replace('_', '-')}={params[key]}")
        return [Command("client", tuple(argv + ["run"]))]

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """Events per second, event count, total time, latency summary; memory rates."""
        _blocks.once(stdout, _BANNER, "General statistics:", source=source)
        general = search(_GENERAL, stdout, source=source,
                         expected="sysbench 1.0's 'General statistics' (total time, total number of events)")
        rows = Rows(source)
        if "CPU speed:" in stdout or "Prime numbers limit" in stdout:
            eps = search(_EPS, stdout, source=source, expected="'events per second:' in a cpu test")
            rows.add("events_per_second", eps["eps"], "event/s", "events per second")
        rows.add("events", general["events"], "count", "total number of events")
        rows.add("total_time", general["time"], "s", "total time")
        latency = search(_LATENCY, stdout, source=source, expected="a 'Latency (ms):' block")
        fields = key_values(latency["body"])
        search(_FAIRNESS, stdout, source=source,
               expected="the final 'Threads fairness:' block with 'execution time (avg/stddev)' (output cut short?)")
        for label, metric in (("min", "latency_min"), ("avg", "latency_avg"), ("max", "latency_max"),
                              ("95th percentile", "latency_p95"), ("sum", "latency_sum")):
            if label in fields:
                rows.add(metric, fields[label], "s", f"Latency (ms) {label}", scale=1e-3)
        ops = _OPS.search(stdout)
        if ops:
            rows.add("operations", ops["ops"], "count", "Total operations")
            rows.add("operations_per_second", ops["rate"], "op/s", "Total operations per second")
            transfer = search(_TRANSFER, stdout, source=source, expected="'... MiB transferred (... MiB/sec)'")
            size, _ = quantity(transfer["size"], transfer["unit"], source=source, what="transferred")
            rate, _ = quantity(transfer["rate"], transfer["runit"] + "/s", source=source, what="transfer rate")
            rows.add("bytes", size, "byte", "MiB transferred")
            rows.add("memory_bandwidth", rate, "byte/s", "MiB/sec")
        elif "memory speed test" in stdout:
            raise ParseError(source, "'Total operations: N (R per second)' in a memory test", "no such line")
        return rows
