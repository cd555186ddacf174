"""ping (iputils; BSD/busybox summaries too): round-trip times and loss.

Roles: ``client`` pings ``server`` (no service needed). Parameters: ``count`` (-c),
``interval`` (-i, s), ``size`` (-s, payload bytes), ``deadline`` (-w, s).

Rows: summary ``rtt_min``/``rtt_avg``/``rtt_max``/``rtt_mdev`` (s), ``packets_sent``,
``packets_received``, ``loss`` (%), and per reply ``rtt`` with dim ``seq``. A summary
line alone (as seed 001 quotes it) is enough; with 100 % loss there is no RTT line and
only the counts are reported.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from . import _blocks
from .base import Command, Measurement, Param, ParseError, Rows, Tool, seconds

_RTT = re.compile(r"(?:(?:rtt|round-trip) )?min/avg/max/(?:mdev|stddev) = (?P<min>[\d.]+)/(?P<avg>[\d.]+)/"
                  r"(?P<max>[\d.]+)/(?P<mdev>[\d.]+) (?P<unit>\w+)")
_COUNTS = re.compile(r"(?P<sent>\d+) packets transmitted, (?P<received>\d+) (?:packets )?received,"
                     r"(?: \+\d+ (?:errors|duplicates),)* (?P<loss>[\d.]+)% packet loss")
_BANNER = re.compile(r"^PING ", re.M)
_REPLY = re.compile(r"icmp_seq=(?P<seq>\d+) .*?time[=<](?P<time>[\d.]+) ?(?P<unit>ms|us|s)\b")


class Ping(Tool):
    """Adapter for ping's per-reply lines and summary."""

    name = "ping"
    parser_version = 1
    primary_metric = "rtt_avg"
    roles = ("client", "server")
    debian_packages = ("iputils-ping",)
    version_command = ("ping", "-V")
    params = (
        Param("count", "int", 10, "", "echo requests to send (-c)", bounds=(1, 10**9), positive=True),
        Param("interval", "number", 1, "s", "seconds between requests (-i)", positive=True),
        Param("size", "int", 56, "byte", "payload bytes per request (-s)", bounds=(0, 65507), positive=True),
        Param("deadline", "number", None, "s", "stop after this many seconds whatever the count (-w)", positive=True),
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """``ping -c COUNT [-i I] [-s SIZE] [-w DEADLINE] SERVER`` on the client."""
        argv = ["ping", "-n", "-c", str(params.get("count", 10))]
        for key, flag in (("interval", "-i"), ("size", "-s"), ("deadline", "-w")):
            if params.get(key) is not None:
                argv += [flag, str(params[key])]
        return [Command("client", tuple(argv + [addresses["server"]]))]

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """(count - 1) intervals between the requests, plus the last reply (a LAN round trip, within 0.2 s)."""
        return (float(params.get("count", 10)) - 1) * float(params.get("interval", 1)) + 0.2

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """RTT summary, counts and loss, and each reply's RTT."""
        _blocks.once(stdout, _BANNER, _RTT, _COUNTS, source=source)
        rows = Rows(source)
        rtt, counts = _RTT.search(stdout), _COUNTS.search(stdout)
        if rtt is None and counts is None:
            said = (stderr.strip() or stdout.strip()).splitlines()
            raise ParseError(source, "ping's statistics ('N packets transmitted, ...' or 'rtt min/avg/max/mdev = ...')",
                             f"ping said {said[-1]!r}" if said else "empty output")
        if counts:
            rows.add("packets_sent", counts["sent"], "count", "packets transmitted")
            rows.add("packets_received", counts["received"], "count", "received")
            rows.add("loss", counts["loss"], "%", "packet loss")
        if rtt:
            for key in ("min", "avg", "max", "mdev"):
                rows.add(f"rtt_{key}", seconds(rtt[key], rtt["unit"], source=source, what=f"rtt {key}"), "s",
                         f"rtt {key}")
        elif counts and int(counts["received"]) > 0:
            raise ParseError(source, "an 'rtt min/avg/max/mdev' line when replies were received", "none")
        for reply in _REPLY.finditer(stdout):
            rows.add("rtt", seconds(reply["time"], reply["unit"], source=source, what="reply time"), "s",
                     f"icmp_seq={reply['seq']}", seq=int(reply["seq"]))
        return rows
