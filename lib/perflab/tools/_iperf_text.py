"""Report lines shared by iperf2's text and CSV output and iperf3's text output, and the
summary rows built from them (the same metric names as the iperf3 JSON parser).

A report line is ``[ id] start-end sec <transfer> <unit> <rate> <unit> ...``; what follows
the rate depends on the column header above it (iperf3 ``Retr``, iperf2 ``-e``
``Write/Err Rtry``, and the UDP receiver's ``Jitter Lost/Total``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from statistics import fmean
from typing import Any, Iterable

from .base import Param, ParseError, Rows, number, quantity

_LINE = re.compile(
    r"^\[\s*(?P<id>\*?\s*\d+|SUM(?:-\d+)?)\]\s+(?P<start>\d+(?:\.\d+)?)\s*-\s*(?P<end>\d+(?:\.\d+)?)\s+sec\s+"
    r"(?P<xfer>\d+(?:\.\d+)?)\s+(?P<xunit>[KMGTP]?Bytes?)\s+(?P<rate>\d+(?:\.\d+)?)\s+(?P<runit>[KMGTP]?bits/sec)"
    r"(?P<rest>.*)$")
_UDP = re.compile(r"(?P<jitter>\d+(?:\.\d+)?)\s*ms\s+(?P<lost>-?\d+)\s*/\s*(?P<total>-?\d+)\s*\((?P<pct>[^)%]*)%\)")
_ROLE = re.compile(r"\b(sender|receiver)\s*$")
_IPERF2_RETRY = re.compile(r"^\s*\d+/\d+\s+(?P<retr>\d+)\b")
_LEADING_INT = re.compile(r"^\s*(?P<retr>\d+)\b")


@dataclass
class Report:
    """One report line: a stream (or SUM) over an interval, sender- or receiver-side."""

    stream: str
    start: float
    end: float
    bytes: float
    rate: float
    receiver: bool
    final: bool = False
    retransmits: float | None = None
    jitter: float | None = None
    lost: float | None = None
    packets: float | None = None

    @property
    def is_sum(self) -> bool:
        """True for iperf's aggregate ``[SUM]`` lines."""
        return self.stream.startswith("SUM")


#: Lines only one of the two iperfs prints: iperf2's banner, iperf3's banner and end marker.
_DIALECTS = {"iperf2": re.compile(r"^(?:Client connecting to \S+, (?:TCP|UDP) port|Server listening on (?:TCP|UDP) port)",
                                  re.M),
             "iperf3": re.compile(r"^(?:Connecting to host |iperf Done\.|Starting Test: protocol:)", re.M)}


def refuse_other_dialect(text: str, expected: str, *, source: str) -> None:
    """Raise :class:`ParseError` when ``text`` carries the other iperf's banner (their report lines look alike)."""
    other = "iperf3" if expected == "iperf2" else "iperf2"
    match = _DIALECTS[other].search(text)
    if match:
        raise ParseError(source, f"{expected} output", f"{other} output ({match[0].strip()!r}); "
                         f"parse it as {other}")


def protocol_of(text: str) -> str:
    """"udp" when the header says UDP (iperf2 "UDP port", iperf3 "protocol: UDP"), else "tcp"."""
    return "udp" if re.search(r"\bUDP port\b|protocol: UDP|\bdatagrams\b", text) else "tcp"


def text_reports(text: str, *, source: str) -> list[Report]:
    """All report lines of an iperf2 or iperf3 text output, finals marked."""
    reports: list[Report] = []
    header, server_report, summary_section = "", False, False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[ ID]"):
            header = line
            continue
        if line.startswith("- - -") or line.startswith("Test Complete"):
            summary_section = True
            continue
        if line.endswith("Server Report:"):
            server_report = True
            continue
        match = _LINE.match(line)
        if not match:
            continue
        rest = match["rest"]
        transfer, _ = quantity(match["xfer"], match["xunit"], binary_bytes=True, source=source, what="transfer")
        rate, _ = quantity(match["rate"], match["runit"], source=source, what="bandwidth")
        udp = _UDP.search(rest)
        role = _ROLE.search(rest)
        summary_section = summary_section or bool(role)
        report = Report(
            stream=match["id"].replace("*", "").strip(), start=float(match["start"]), end=float(match["end"]),
            bytes=transfer, rate=rate,
            receiver=bool(udp) or server_report or bool(role and role[1] == "receiver"),
            final=server_report or bool(role) or summary_section)
        if udp:
            report.jitter = float(udp["jitter"]) / 1000.0
            report.lost, report.packets = float(udp["lost"]), float(udp["total"])
        retry = _IPERF2_RETRY.match(rest) if "Rtry" in header else (
            _LEADING_INT.match(rest) if "Retr" in header and not report.receiver else None)
        if retry:
            report.retransmits = float(retry["retr"])
        server_report = False
        reports.append(report)
    if not summary_section:
        _refuse_repeated_finals(reports, source=source)
        _mark_iperf2_finals(reports)
    return reports


def _refuse_repeated_finals(reports: list[Report], *, source: str) -> None:
    """Refuse iperf2 text with two whole-run lines (start 0, same end) of one stream and side: two runs' reports.

    An interval as long as the run ends earlier than the run's final line (which includes the drain).
    """
    seen: set[tuple[str, bool, float]] = set()
    for report in reports:
        if report.start == 0:
            key = (report.stream, report.receiver, report.end)
            if key in seen:
                raise ParseError(source, "one final line per stream (one run's output)",
                                 f"two [{report.stream}] lines over 0-{report.end:g} s: two runs' outputs concatenated?")
            seen.add(key)


def _mark_iperf2_finals(reports: list[Report]) -> None:
    """iperf2 has no final marker: a stream's final report is its last one starting at 0.

    Streams and sides (sender, receiver) that already have a final (a server report)
    keep it.
    """
    done = {(r.stream, r.receiver) for r in reports if r.final}
    last: dict[tuple[str, bool], Report] = {}
    for report in reports:
        if report.start == 0 and (report.stream, report.receiver) not in done:
            last[(report.stream, report.receiver)] = report
    for report in last.values():
        report.final = True


def csv_reports(text: str, *, source: str) -> list[Report]:
    """Report lines of iperf2 ``-y C`` output (exact bytes and bit/s), finals marked.

    Columns: time, local address and port, remote address and port, id, "start-end",
    bytes, bit/s, then for UDP jitter (ms), lost, total, loss %, out-of-order. iperf 2.1
    prints no server report in CSV and marks the UDP sender's final line with total -1,
    so a UDP output is sender-side when any total is -1, and receiver-side (a client
    run with -R) otherwise.
    """
    reports: list[Report] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.strip().split(",")
        if len(fields) < 9 or not fields[0].isdigit():
            continue
        where = f"CSV line {lineno}"
        start, _, end = fields[6].partition("-")
        values = [number(v, source=source, what=f"{where} field {i}") for i, v in enumerate(fields[7:], 8)]
        sent, rate = values[0], values[1]
        if sent is None or rate is None or not end:
            raise ParseError(source, f"bytes, bit/s and an interval in {where}", repr(line))
        start_s, end_s = (number(x, source=source, what=f"{where} interval") for x in (start, end))
        if start_s is None or end_s is None:
            raise ParseError(source, f"an interval start-end in {where}", repr(fields[6]))
        report = Report(stream="SUM" if fields[5] == "-1" else fields[5], start=start_s, end=end_s,
                        bytes=sent, rate=rate, receiver=False)
        if len(values) >= 5:
            report.jitter = None if values[2] is None else values[2] / 1000.0
            report.lost, report.packets = values[3], values[4]
        reports.append(report)
    udp = [r for r in reports if r.packets is not None]
    receiver_side = bool(udp) and all(r.packets is not None and r.packets >= 0 for r in udp)
    for report in udp:
        report.receiver = receiver_side
    _mark_iperf2_finals(reports)
    return reports


def raise_no_reports(stdout: str, stderr: str, *, source: str) -> None:
    """Raise the :class:`ParseError` for an output without report lines, quoting iperf's error."""
    errors = [line.strip() for line in (stdout + "\n" + stderr).splitlines()
              if re.search(r"error|failed|refused|unable|timed out|no route", line, re.IGNORECASE)]
    found = f"iperf said {errors[0]!r}" if errors else "no report line (did the test run?)"
    raise ParseError(source, "iperf report lines ('[ ID] start-end sec <transfer> <rate>')", found)


def summarize(reports: list[Report], protocol: str, rows: Rows) -> None:
    """Summary, per-stream and per-interval rows from ``reports`` (iperf3 JSON metric names)."""
    source = rows.source
    streams = sorted({r.stream for r in reports if not r.is_sum}, key=lambda s: (len(s), s))
    multi = len(streams) > 1
    finals = [r for r in reports if r.final]
    senders = [r for r in finals if not r.receiver]
    receivers = [r for r in finals if r.receiver]
    if protocol == "udp":
        if not any(not r.is_sum for r in receivers):
            raise ParseError(source, "a UDP receiver report with jitter and loss (iperf2 'Server Report:', "
                             "or run the client with -R, or parse the server's output)",
                             "sender-side lines only")
        side = receivers
        if sum(r.packets or 0 for r in receivers if not r.is_sum) <= 0:
            raise ParseError(source, "datagrams received in the UDP receiver report",
                             "0/0 (the sender sent nothing: check the server, e.g. for -R)")
        _udp_summary(receivers, rows)
        _total("throughput_sent", senders, rows)
    else:
        side = receivers if any(not r.is_sum for r in receivers) else senders
        _total("throughput", side, rows)
        picked = _pick(side)
        rows.add("bytes", picked.bytes if picked else sum(r.bytes for r in side if not r.is_sum), "byte",
                 "final Transfer column")
        if side is receivers and senders:
            _total("throughput_sent", senders, rows)
        retr = [r.retransmits for r in senders if not r.is_sum and r.retransmits is not None]
        if retr:
            rows.add("retransmits", sum(retr), "count", "final Retr/Rtry column")
    if multi:
        for report in side:
            if not report.is_sum:
                _report_rows(report, rows, stream=_stream_id(report, rows.source))
    for report in reports:
        if report.final:
            continue
        dims = {"interval_start": report.start, "interval_end": report.end}
        if multi and not report.is_sum:
            dims["stream"] = _stream_id(report, rows.source)
        _report_rows(report, rows, **dims)


def _stream_id(report: Report, source: str) -> int:
    """The stream's socket number (``[  5]``), or :class:`ParseError`."""
    if not (report.stream.isascii() and report.stream.isdigit()):
        raise ParseError(source, "a stream id such as [  5] or [SUM]", repr(report.stream))
    return int(report.stream)


def _pick(reports: Iterable[Report]) -> Report | None:
    """The SUM report if there is one, else the only stream's report."""
    reports = list(reports)
    sums = [r for r in reports if r.is_sum]
    if sums:
        return sums[-1]
    return reports[-1] if len(reports) == 1 else None


def _total(metric: str, reports: list[Report], rows: Rows) -> None:
    picked = _pick(reports)
    if picked is not None:
        rows.add(metric, picked.rate, "bit/s", f"final {picked.stream} line")
        return
    streams = [r for r in reports if not r.is_sum]
    if not streams:
        return
    if len({(r.start, round(r.end, 1)) for r in streams}) != 1:
        raise ParseError(rows.source, f"a [SUM] line or streams over one common interval for {metric}",
                         f"{len(streams)} streams with different intervals")
    rows.add(metric, sum(r.rate for r in streams), "bit/s", "sum of the streams' final lines")


def _udp_summary(receivers: list[Report], rows: Rows) -> None:
    streams = [r for r in receivers if not r.is_sum]
    lost = sum(r.lost or 0 for r in streams)
    packets = sum(r.packets or 0 for r in streams)
    _total("throughput", receivers, rows)
    jitters = [r.jitter for r in streams if r.jitter is not None]
    rows.add("jitter", fmean(jitters) if jitters else None, "s", "receiver Jitter column")
    rows.add("lost_packets", lost, "packet", "receiver Lost column")
    rows.add("packets", packets, "packet", "receiver Total column")
    rows.add("loss", 100.0 * lost / packets if packets > 0 else None, "%", "receiver Lost/Total")


def _report_rows(report: Report, rows: Rows, **dims: Any) -> None:
    rows.add("throughput", report.rate, "bit/s", "Bandwidth column", **dims)
    rows.add("bytes", report.bytes, "byte", "Transfer column", **dims)
    if report.retransmits is not None:
        rows.add("retransmits", report.retransmits, "count", "Retr column", **dims)
    if report.jitter is not None and report.receiver:
        rows.add("jitter", report.jitter, "s", "Jitter column", **dims)
        rows.add("lost_packets", report.lost, "packet", "Lost column", **dims)
        rows.add("packets", report.packets, "packet", "Total column", **dims)
        loss = 100.0 * report.lost / report.packets if report.packets and report.lost is not None else None
        rows.add("loss", loss, "%", "Lost/Total", **dims)


def require_sum(reports: list[Report], *, source: str) -> None:
    """Refuse iperf2 output of several streams (``-P`` > 1) without its final ``[SUM]`` line.

    iperf2 prints the run's aggregate after every stream's final line; without it (cut or
    edited output) the last interval's ``[SUM]`` would pass for the run's.
    """
    for side in (False, True):
        finals = [i for i, r in enumerate(reports) if r.final and not r.is_sum and r.receiver == side]
        if len({reports[i].stream for i in finals}) < 2:
            continue
        if not any(r.is_sum and r.final and r.receiver == side for r in reports[max(finals) + 1:]):
            raise ParseError(source, "iperf2's final [SUM] line for a run of several streams (-P > 1), after the "
                             "streams' final lines", f"{len(finals)} streams' final lines and no [SUM] line after "
                             "them (output cut or edited?)")


def common_params(port: int, *, reports_off_at_zero: bool = False) -> tuple[Param, ...]:
    """The parameters iperf2 and iperf3 share (their server listens on ``port`` by default); with
    ``reports_off_at_zero`` an ``interval`` of 0 is taken (iperf3's ``-i 0``: no periodic reports)."""
    return (
        Param("protocol", "word", "tcp", "", "tcp or udp", choices=("tcp", "udp")),
        Param("port", "int", port, "", "the server's port", bounds=(1, 65535), positive=True),
        Param("duration", "number", 10, "s", "how long the client sends", positive=True),
        Param("parallel", "int", 1, "", "parallel client streams (-P)", bounds=(1, 128), positive=True),
        Param("reverse", "bool", False, "", "the server sends and the client receives (-R)"),
        Param("length", "size", None, "byte", "the length of a read or write buffer; for UDP the datagram size (-l)",
              positive=True),
        Param("bitrate", "size", None, "bit/s", "the target rate (-b); for UDP the offered load"),
        Param("interval", "number", None, "s", "seconds between periodic reports (-i)"
              + ("; 0: none" if reports_off_at_zero else ""), positive=True, allow_zero=reports_off_at_zero),
    )
