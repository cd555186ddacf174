"""filebench (1.4.x and 1.5.x): the ``IO Summary`` line and the per-operation breakdown.

filebench is not runnable here, so perflab only parses its output. Two layouts exist:

- 1.4.x: ``IO Summary: 131201 ops, 1874.124 ops/s, (0/1872 r/w),  14.6mb/s,
  745us cpu/op,   0.5ms latency`` (CPU time per operation: seed 004's Fig. 4);
- 1.5.x: ``IO Summary: 4989254 ops 8314.540 ops/s 1279/1279 rd/wr  49.5mb/s
  3.1ms/op`` (no CPU column).

Rows: ``ops`` (count), ``ops_per_second`` (op/s), ``read_ops_per_second`` and
``write_ops_per_second`` (op/s), ``bandwidth`` (byte/s; filebench's "mb/s" is 2**20
byte/s), ``latency`` (s per operation), ``cpu_per_op`` (s/op, 1.4 only); per flowop of
the breakdown ``ops``, ``ops_per_second``, ``bandwidth`` and ``latency`` with dim
``flowop``.
"""

from __future__ import annotations

import re
from typing import Any

from .base import Measurement, ParseError, ParseOnly, Rows

_SUMMARY_14 = re.compile(r"IO Summary:\s+(?P<ops>\d+) ops, (?P<rate>[\d.]+) ops/s, \((?P<r>\d+)/(?P<w>\d+) r/w\),\s+"
                         r"(?P<mb>[\d.]+)mb/s,\s+(?P<cpu>\d+)us cpu/op,\s+(?P<lat>[\d.]+)ms latency")
_SUMMARY_15 = re.compile(r"IO Summary:\s+(?P<ops>\d+) ops (?P<rate>[\d.]+) ops/s (?P<r>\d+)/(?P<w>\d+) rd/wr\s+"
                         r"(?P<mb>[\d.]+)mb/s\s+(?P<lat>[\d.]+)ms/op")
_FLOWOP = re.compile(r"^(?P<name>\S+)\s+(?P<ops>\d+)ops\s+(?P<rate>[\d.]+)ops/s\s+(?P<mb>[\d.]+)mb/s\s+"
                     r"(?P<lat>[\d.]+)ms/op", re.MULTILINE)
MIB = 1024.0 * 1024.0


class Filebench(ParseOnly):
    """Parser for one filebench run's summary."""

    name = "filebench"
    parser_version = 1

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """IO Summary numbers and the per-flowop breakdown of a single run."""
        summaries = list(_SUMMARY_14.finditer(stdout)) + list(_SUMMARY_15.finditer(stdout))
        if len(summaries) != 1:
            found = f"{len(summaries)} summary lines" if summaries else (
                "an 'IO Summary' line in an unknown layout" if "IO Summary" in stdout else "no 'IO Summary' line")
            raise ParseError(source, "exactly one 'IO Summary:' line (1.4.x or 1.5.x layout; one run per file)", found)
        summary = summaries[0]
        rows = Rows(source)
        rows.add("ops", summary["ops"], "count", "IO Summary ops")
        rows.add("ops_per_second", summary["rate"], "op/s", "IO Summary ops/s")
        rows.add("read_ops_per_second", summary["r"], "op/s", "IO Summary reads/s")
        rows.add("write_ops_per_second", summary["w"], "op/s", "IO Summary writes/s")
        rows.add("bandwidth", summary["mb"], "byte/s", "IO Summary mb/s", scale=MIB)
        rows.add("latency", summary["lat"], "s", "IO Summary latency (ms)", scale=1e-3)
        if "cpu" in summary.groupdict():
            rows.add("cpu_per_op", summary["cpu"], "s/op", "IO Summary us cpu/op", scale=1e-6)
        for flowop in _FLOWOP.finditer(stdout[:summary.start()]):
            dims: dict[str, Any] = {"flowop": flowop["name"]}
            rows.add("ops", flowop["ops"], "count", f"{flowop['name']} ops", **dims)
            rows.add("ops_per_second", flowop["rate"], "op/s", f"{flowop['name']} ops/s", **dims)
            rows.add("bandwidth", flowop["mb"], "byte/s", f"{flowop['name']} mb/s", scale=MIB, **dims)
            rows.add("latency", flowop["lat"], "s", f"{flowop['name']} ms/op", scale=1e-3, **dims)
        return rows
