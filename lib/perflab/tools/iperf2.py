"""iperf2 (``iperf``, 2.0.x/2.1.x): TCP/UDP throughput, parsed from text or ``-y C`` CSV.

Seeds 000 and 002 used iperf2. Roles: ``client`` runs ``iperf -c``; ``server`` runs
``iperf -s`` as a service. Parameters: ``duration`` (-t, s), ``parallel`` (-P),
``protocol`` (tcp|udp), ``reverse`` (-R, the client receives: UDP jitter and loss per
interval appear in the client's own output), ``length`` (-l, bytes), ``bitrate`` (-b,
e.g. "100M"), ``interval`` (-i, s), ``port``, ``csv`` (-y C instead of text),
``enhanced`` (-e, default on: retries for TCP). Commands pass ``-f b`` so that text
reports carry exact bytes and bit/s instead of three significant digits.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import InputError
from . import _blocks, _iperf_text
from .base import Command, Measurement, Param, Rows, Tool

DEFAULT_PORT = 5001


class Iperf2(Tool):
    """Adapter for iperf 2 with text (``-f b -e`` by default) or CSV output."""

    name = "iperf2"
    parser_version = 1
    primary_metric = "throughput"
    roles = ("client", "server")
    additive = frozenset({"throughput", "bytes", "retransmits", "packets", "lost_packets"})
    debian_packages = ("iperf",)
    version_command = ("iperf", "-v")
    params = (
        *_iperf_text.common_params(DEFAULT_PORT),
        Param("csv", "bool", False, "", "CSV reports (-y C) instead of text"),
        Param("enhanced", "bool", True, "", "enhanced text reports (-e); only without csv"),
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """A server service on ``server`` and one client run on ``client``."""
        if str(params.get("protocol", "tcp")).lower() not in ("tcp", "udp"):
            raise InputError(f"protocol {params['protocol']!r}: expected 'tcp' or 'udp'")
        port = str(params.get("port", DEFAULT_PORT))
        udp = str(params.get("protocol", "tcp")).lower() == "udp"
        server = ["iperf", "-s", "-B", addresses["server"], "-p", port]
        client = ["iperf", "-c", addresses["server"], "-p", port, "-t", str(params.get("duration", 10)),
                  "-P", str(params.get("parallel", 1))]
        if udp:
            server.append("-u")
            client.append("-u")
        if params.get("reverse"):
            client.append("-R")
        for key, flag in (("length", "-l"), ("bitrate", "-b"), ("interval", "-i")):
            if params.get(key) is not None:
                client += [flag, str(params[key])]
        if params.get("csv"):
            client += ["-y", "C"]
        else:
            client += ["-f", "b"] + (["-e"] if params.get("enhanced", True) else [])
        return [Command("server", tuple(server), service=True), Command("client", tuple(client))]

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """Test time plus about half a second for connection setup and the server report."""
        return float(params.get("duration", 10)) + 0.5

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """Summary, per-stream and per-interval throughput; UDP receiver jitter and loss.

        The CSV form is recognised by its first field (a 14-digit timestamp). UDP needs a
        receiver-side report: the server report in the client's text output, a client
        run with -R, or the server's own output.
        """
        rows = Rows(source)
        csv = any(line[:14].isdigit() and line.count(",") >= 8 for line in stdout.splitlines())
        if csv:
            reports = _iperf_text.csv_reports(stdout, source=source)
            protocol = "udp" if any(r.packets is not None for r in reports) else "tcp"
        else:
            _iperf_text.refuse_other_dialect(stdout, "iperf2", source=source)
            _blocks.once(stdout, "Client connecting to", "Server listening on", source=source)
            reports = _iperf_text.text_reports(stdout, source=source)
            protocol = _iperf_text.protocol_of(stdout)
        if not reports:
            _iperf_text.raise_no_reports(stdout, stderr, source=source)
        if not csv:
            _iperf_text.require_sum(reports, source=source)
        _iperf_text.summarize(reports, protocol, rows)
        return rows
