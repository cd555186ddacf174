"""iperf3: TCP/UDP throughput between a client and a server, parsed from ``-J`` output.

Roles: ``client`` runs ``iperf3 -c``; ``server`` runs ``iperf3 -s`` as a service.
Parameters: ``duration`` (s), ``parallel`` (-P), ``protocol`` (tcp|udp), ``reverse``
(-R), ``length`` (-l, bytes), ``bitrate`` (-b, e.g. "100M"), ``port``, ``omit`` (-O, s),
``interval`` (-i, s).

Besides the summary (rows without dims) the parser yields per-stream rows (dim
``stream``, the socket number, only when there are several streams) and per-interval
rows (dims ``interval_start``/``interval_end``, plus ``stream`` for each stream's own
intervals when there are several). Intervals iperf3 marks as omitted (-O) are skipped,
as iperf3's own summary skips them. Text output (no ``-J``, as quoted in seed 001) is
parsed too, from its report lines.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Mapping

from ..errors import InputError
from . import _blocks, _iperf_text
from .base import Command, Measurement, Param, ParseError, Rows, Tool

DEFAULT_PORT = 5201


class Iperf3(Tool):
    """Adapter for iperf3 (3.x) with JSON output."""

    name = "iperf3"
    operations_metric = "packets"
    parser_version = 2
    primary_metric = "throughput"
    roles = ("client", "server")
    additive = frozenset({"throughput", "throughput_sent", "bytes", "retransmits", "packets", "lost_packets",
                          "out_of_order"})
    debian_packages = ("iperf3",)
    version_command = ("iperf3", "--version")
    params = (
        *_iperf_text.common_params(DEFAULT_PORT, reports_off_at_zero=True),
        Param("omit", "number", 0, "s", "seconds at the start left out of the results (-O)", positive=True,
              allow_zero=True),
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """A server service on ``server`` and one ``-J`` client run on ``client``."""
        if str(params.get("protocol", "tcp")).lower() not in ("tcp", "udp"):
            raise InputError(f"protocol {params['protocol']!r}: expected 'tcp' or 'udp'")
        port = str(params.get("port", DEFAULT_PORT))
        server = Command("server", ("iperf3", "-s", "-B", addresses["server"], "-p", port), service=True)
        argv = ["iperf3", "-c", addresses["server"], "-p", port, "-J",
                "-t", str(params.get("duration", 10)), "-P", str(params.get("parallel", 1))]
        if str(params.get("protocol", "tcp")).lower() == "udp":
            argv.append("-u")
        if params.get("reverse"):
            argv.append("-R")
        for key, flag in (("length", "-l"), ("bitrate", "-b"), ("omit", "-O"), ("interval", "-i")):
            if params.get(key) is not None:
                argv += [flag, str(params[key])]
        return [server, Command("client", tuple(argv))]

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """Test time plus omitted warm-up seconds plus about a second of setup."""
        return float(params.get("duration", 10)) + float(params.get("omit", 0) or 0) + 1.0

    def ready(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> str | None:
        """The server listens on its port."""
        return shlex.join(["ss", "-Hltn", f"sport = :{params.get('port', DEFAULT_PORT)}"]) + " | grep -q ."

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """Summary throughput (sent/received), retransmits, CPU use; UDP jitter and loss;
        per-stream and per-interval rows."""
        rows = Rows(source)
        if "{" not in stdout and "bits/sec" in stdout:
            _iperf_text.refuse_other_dialect(stdout, "iperf3", source=source)
            _blocks.once(stdout, "Connecting to host", "iperf Done.", "Test Complete. Summary Results:",
                         _TEXT_SUMMARY, source=source)
            reports = _iperf_text.text_reports(stdout, source=source)
            if not reports:
                _iperf_text.raise_no_reports(stdout, stderr, source=source)
            _iperf_text.summarize(reports, _iperf_text.protocol_of(stdout), rows)
            return rows
        doc = _blocks.one_json(stdout, _JSON_START, _JSON_END, source=source)
        if not isinstance(doc, dict):
            raise ParseError(source, "an iperf3 JSON object", type(doc).__name__)
        if doc.get("error"):
            raise ParseError(source, "an iperf3 result", f"iperf3 error: {doc['error']}")
        end = doc.get("end")
        if not isinstance(end, dict) or not end:
            raise ParseError(source, "an 'end' section with the test summary", "none (test did not finish)")
        protocol = str(doc.get("start", {}).get("test_start", {}).get("protocol", "TCP")).upper()
        if protocol == "UDP":
            total = end.get("sum")
            if not isinstance(total, dict):
                raise ParseError(source, "'end.sum' for a UDP test", "nothing")
            received = end.get("sum_received")
            if isinstance(received, dict) and "bits_per_second" in received:
                # iperf3 3.10+: end.sum holds the sender's rate; the receiver's is end.sum_received
                _udp_rows(rows, {**total, "bits_per_second": received["bits_per_second"]}, "end.sum",
                          rate_where="end.sum_received")
                rows.add("throughput_sent", total.get("bits_per_second"), "bit/s", "end.sum.bits_per_second")
            else:
                _udp_rows(rows, total, "end.sum")
            reordered = [(s.get("udp") or {}).get("out_of_order") for s in end.get("streams") or []]
            if reordered and all(isinstance(v, int) for v in reordered):  # only per stream in iperf3's JSON
                rows.add("out_of_order", sum(reordered), "packet", "end.streams[].udp.out_of_order")
        else:
            sent, received = end.get("sum_sent"), end.get("sum_received")
            if not isinstance(sent, dict) or not isinstance(received, dict):
                raise ParseError(source, "'end.sum_sent' and 'end.sum_received'", f"keys {sorted(end)}")
            _tcp_rows(rows, sent, received, "end")
        cpu = end.get("cpu_utilization_percent") or {}
        if "host_total" in cpu:
            rows.add("cpu_client", cpu["host_total"], "%", "cpu_utilization_percent.host_total")
            rows.add("cpu_server", cpu.get("remote_total"), "%", "cpu_utilization_percent.remote_total")
        streams = end.get("streams") or []
        if len(streams) > 1:
            for i, stream in enumerate(streams):
                where = f"end.streams[{i}]"
                if protocol == "UDP":
                    udp = stream.get("udp") or {}
                    _udp_rows(rows, udp, where + ".udp", stream=udp.get("socket", i))
                else:
                    sender, receiver = stream.get("sender") or {}, stream.get("receiver") or {}
                    _tcp_rows(rows, sender, receiver, where, stream=sender.get("socket", i))
        _interval_rows(rows, doc.get("intervals") or [], multi=len(streams) > 1)
        return rows


#: What iperf3 writes once per run: the JSON document's "start" and "end" objects, the text summary's separator.
_JSON_START, _JSON_END = re.compile(r'"start":\s*\{'), re.compile(r'"end":\s*\{')
_TEXT_SUMMARY = re.compile(r"^- - - - ", re.M)


def _tcp_rows(rows: Rows, sent: Mapping[str, Any], received: Mapping[str, Any], where: str, **dims: Any) -> None:
    rows.add("throughput", received.get("bits_per_second"), "bit/s", f"{where} received bits_per_second", **dims)
    rows.add("throughput_sent", sent.get("bits_per_second"), "bit/s", f"{where} sent bits_per_second", **dims)
    rows.add("bytes", received.get("bytes"), "byte", f"{where} received bytes", **dims)
    if "retransmits" in sent:
        rows.add("retransmits", sent.get("retransmits"), "count", f"{where} sent retransmits", **dims)


def _udp_rows(rows: Rows, total: Mapping[str, Any], where: str, rate_where: str | None = None, **dims: Any) -> None:
    rows.add("throughput", total.get("bits_per_second"), "bit/s", f"{rate_where or where}.bits_per_second", **dims)
    rows.add("jitter", total.get("jitter_ms"), "s", f"{where}.jitter_ms", scale=1e-3, **dims)
    rows.add("lost_packets", total.get("lost_packets"), "packet", f"{where}.lost_packets", **dims)
    rows.add("packets", total.get("packets"), "packet", f"{where}.packets", **dims)
    rows.add("loss", total.get("lost_percent"), "%", f"{where}.lost_percent", **dims)


def _interval_rows(rows: Rows, intervals: list[Any], *, multi: bool) -> None:
    """Rows for each reporting interval: the sum, and each stream when there are several."""
    for i, interval in enumerate(intervals):
        parts: list[tuple[Any, str, dict[str, Any]]] = [((interval or {}).get("sum"), f"intervals[{i}].sum", {})]
        if multi:
            parts += [(s, f"intervals[{i}].streams[{j}]", {"stream": s.get("socket", j)})
                      for j, s in enumerate((interval or {}).get("streams") or [])]
        for part, where, extra in parts:
            if not isinstance(part, dict):
                raise ParseError(rows.source, f"an object at {where}", repr(part)[:60])
            if part.get("omitted"):
                continue
            dims = {"interval_start": part.get("start"), "interval_end": part.get("end"), **extra}
            rows.add("throughput", part.get("bits_per_second"), "bit/s", f"{where}.bits_per_second", **dims)
            rows.add("bytes", part.get("bytes"), "byte", f"{where}.bytes", **dims)
            if "retransmits" in part:
                rows.add("retransmits", part["retransmits"], "count", f"{where}.retransmits", **dims)
            if "jitter_ms" in part:
                rows.add("jitter", part["jitter_ms"], "s", f"{where}.jitter_ms", scale=1e-3, **dims)
                rows.add("lost_packets", part.get("lost_packets"), "packet", f"{where}.lost_packets", **dims)
                rows.add("loss", part.get("lost_percent"), "%", f"{where}.lost_percent", **dims)
            if "packets" in part:
                rows.add("packets", part["packets"], "packet", f"{where}.packets", **dims)

