"""Ceph's own benchmarks (seed 001): ``rados bench``, ``rbd bench`` and ``ceph tell osd.N bench``.

No Ceph cluster runs here, so perflab only parses these outputs; the tests use the
outputs seed 001 quotes and published examples, with their origin stated.

Output traps: rados bench's "MB/sec" is MiB/s (obj_bencher divides by 1024*1024) and
its "Average IOPS" is truncated to an integer; rbd bench's final ``elapsed`` is whole
seconds in recent releases and its ``bytes/sec`` may be a rounded "321 MiB/s", so rates
come from ``ops/sec``; OCR'd or copied outputs lose values (seed 001's Fig. 84 has the
labels and numbers in separate columns), which the parsers refuse rather than guess.
"""

from __future__ import annotations

import re
from typing import Any

from .base import (Measurement, ParseError, ParseOnly, Rows, extract_json, key_values, littles_law_ratio, number,
                   quantity, require)

MIB = 1024.0 * 1024.0
#: rados bench summary label -> (metric, unit, scale); "(s)" labels are Luminous and later.
RADOS_FIELDS = {
    "Total time run": ("runtime", "s", 1.0),
    "Bandwidth (MB/sec)": ("bandwidth", "byte/s", MIB),
    "Stddev Bandwidth": ("bandwidth_stddev", "byte/s", MIB),
    "Max bandwidth (MB/sec)": ("bandwidth_max", "byte/s", MIB),
    "Min bandwidth (MB/sec)": ("bandwidth_min", "byte/s", MIB),
    "Average IOPS": ("iops_reported", "IOPS", 1.0),
    "Stddev IOPS": ("iops_stddev", "IOPS", 1.0),
    "Max IOPS": ("iops_max", "IOPS", 1.0),
    "Min IOPS": ("iops_min", "IOPS", 1.0),
    "Average Latency(s)": ("lat_mean", "s", 1.0),
    "Average Latency": ("lat_mean", "s", 1.0),
    "Stddev Latency(s)": ("lat_stddev", "s", 1.0),
    "Stddev Latency": ("lat_stddev", "s", 1.0),
    "Max latency(s)": ("lat_max", "s", 1.0),
    "Max latency": ("lat_max", "s", 1.0),
    "Min latency(s)": ("lat_min", "s", 1.0),
    "Min latency": ("lat_min", "s", 1.0),
}
_MAINTAINING = re.compile(r"Maintaining (?P<n>\d+) concurrent (?:writes|reads)")
_RADOS_TICK = re.compile(r"^\s*(?P<sec>\d+)\s+(?P<cur>\d+)\s+(?P<started>\d+)\s+(?P<finished>\d+)\s+"
                         r"(?P<avg>[\d.e-]+)\s+(?P<rate>[\d.e-]+)\s+\S+\s+\S+\s*$", re.MULTILINE)
_RBD_HEADER = re.compile(r"^bench(?:-write)?\s+(?:type (?P<type>\S+)\s+(?:read:write=\S+\s+)?)?"
                         r"io_size (?P<io_size>\d+) "
                         r"io_threads (?P<threads>\d+) bytes (?P<bytes>\d+) pattern (?P<pattern>.+?)\s*$", re.MULTILINE)
_RBD_FINAL = re.compile(r"^elapsed:\s+(?P<elapsed>[\d.]+)\s+ops:\s+(?P<ops>\d+)\s+ops/sec:\s+(?P<rate>[\d.]+)\s+"
                        r"bytes/sec:\s+(?P<bw>[\d.]+)(?:\s*(?P<unit>[KMGT]iB/s))?\s*$", re.MULTILINE)
_RBD_TICK = re.compile(r"^\s*(?P<sec>\d+)\s+(?P<ops>\d+)\s+(?P<rate>[\d.]+)\s+(?P<bw>[\d.]+)"
                       r"(?:\s*(?P<unit>[KMGT]?i?B/s))?\s*$",
                       re.MULTILINE)
_OSD_PLAIN = re.compile(r"bench: wrote (?P<total>[\d.]+) (?P<tunit>[KMG]B) "
                        r"in blocks of (?P<bs>[\d.]+) (?P<bunit>[KMG]B) "
                        r"in (?P<sec>[\d.]+) sec at (?P<rate>[\d.]+) (?P<runit>[KMG]B/sec)")


class RadosBench(ParseOnly):
    """Parser for ``rados bench -p POOL SECONDS write|seq|rand`` summaries."""

    name = "rados_bench"
    parser_version = 1

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """Bandwidth, IOPS and latency statistics, per-second bandwidth, Little's-law rows."""
        runs = stdout.count("Total time run:")
        if runs > 1:
            raise ParseError(source, "one rados bench run per file", f"{runs} 'Total time run:' lines")
        fields = key_values(stdout)
        made = next((k for k in ("Total writes made", "Total reads made") if k in fields), None)
        if made is None:
            raise ParseError(source, "a rados bench summary ('Total writes made:' or 'Total reads made:')",
                             "no such line (did the bench finish?)")
        empty = [k for k in list(RADOS_FIELDS) + [made] if k in fields and not fields[k]]
        if empty:
            raise ParseError(source, "a value after every label of the rados bench summary",
                             f"no value after {empty} (values separated from labels, as in OCR'd text?)")
        for key in ("Total time run", "Bandwidth (MB/sec)"):
            require(fields, key, source=source, where="the rados bench summary")
        mode = "write" if made == "Total writes made" else "read"
        rows = Rows(source)
        for label, (metric, unit, scale) in RADOS_FIELDS.items():
            if label in fields:
                rows.add(metric, fields[label], unit, label, scale=scale, mode=mode)
        ops = number(fields[made], source=source, what=made)
        runtime = number(fields["Total time run"], source=source, what="Total time run")
        size_key = "Write size" if mode == "write" else "Read size"
        rows.add("ops", ops, "count", made, mode=mode)
        rows.add("op_size", fields.get(size_key), "byte", size_key, mode=mode)
        iops = ops / runtime if ops is not None and runtime else None
        rows.add("iops", iops, "IOPS", f"{made} / Total time run", mode=mode)
        latency = next((number(fields[k], source=source, what=k) for k in ("Average Latency(s)", "Average Latency")
                        if k in fields), None)
        rows.add("mean_in_flight", None if iops is None or latency is None else iops * latency, "count",
                 "IOPS x Average Latency", mode=mode)
        maintaining = _MAINTAINING.search(stdout)
        if maintaining:
            rows.add("littles_law_ratio", littles_law_ratio(iops, latency, int(maintaining["n"])), "ratio",
                     "IOPS x latency / concurrent ops", mode=mode)
        for tick in _RADOS_TICK.finditer(stdout):
            sec = int(tick["sec"])
            if sec > 0:
                rows.add("bandwidth", tick["rate"], "byte/s", f"cur MB/s at sec {sec}", scale=MIB, mode=mode,
                         interval_start=float(sec - 1), interval_end=float(sec))
        return rows


class RbdBench(ParseOnly):
    """Parser for ``rbd bench --io-type ... IMAGE`` (and the older ``rbd bench-write``)."""

    name = "rbd_bench"
    parser_version = 1

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """IOPS, ops, elapsed and bandwidth of the run, and the per-second table."""
        finals = list(_RBD_FINAL.finditer(stdout))
        if len(finals) != 1:
            raise ParseError(source, "exactly one 'elapsed: ... ops: ... ops/sec: ... bytes/sec: ...' line "
                             "(one run per file)", f"{len(finals)} such lines")
        final = finals[0]
        header = _RBD_HEADER.search(stdout)
        dims: dict[str, Any] = {}
        rows = Rows(source)
        if header:
            dims = {"io_type": header["type"] or "write", "pattern": header["pattern"]}
            rows.add("io_size", header["io_size"], "byte", "io_size", **dims)
            rows.add("io_threads", header["threads"], "count", "io_threads", **dims)
        rows.add("elapsed", final["elapsed"], "s", "elapsed (whole seconds in recent releases)", **dims)
        rows.add("ops", final["ops"], "count", "ops", **dims)
        rows.add("iops", final["rate"], "IOPS", "ops/sec", **dims)
        rows.add("bandwidth", _rbd_bytes(final, source), "byte/s", "bytes/sec", **dims)
        for tick in _RBD_TICK.finditer(stdout[:final.start()]):
            window = {"interval_start": float(int(tick["sec"]) - 1), "interval_end": float(tick["sec"]), **dims}
            rows.add("iops", tick["rate"], "IOPS", f"OPS/SEC at sec {tick['sec']}", **window)
            rows.add("bandwidth", _rbd_bytes(tick, source), "byte/s", f"BYTES/SEC at sec {tick['sec']}", **window)
        return rows


class CephOsdBench(ParseOnly):
    """Parser for ``ceph tell osd.N bench [TOTAL] [BLOCK]`` (JSON, or the old plain text)."""

    name = "ceph_osd_bench"
    parser_version = 1

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """Bytes written, block size, elapsed, bandwidth and IOPS."""
        rows = Rows(source)
        plain = _OSD_PLAIN.search(stdout)
        if plain and "{" not in stdout:
            total, _ = quantity(plain["total"], plain["tunit"], binary_bytes=True, source=source, what="wrote")
            block, _ = quantity(plain["bs"], plain["bunit"], binary_bytes=True, source=source, what="blocks of")
            rate, _ = quantity(plain["rate"], plain["runit"].replace("/sec", "/s"), binary_bytes=True, source=source,
                               what="rate")
            elapsed = float(plain["sec"])
            values = {"bytes_written": total, "blocksize": block, "elapsed_sec": elapsed, "bytes_per_sec": rate,
                      "iops": total / block / elapsed}
        else:
            doc = extract_json(stdout, source=source)
            values = {key: require(doc, key, source=source, where="the osd bench result")
                      for key in ("bytes_written", "blocksize", "elapsed_sec", "bytes_per_sec", "iops")}
        rows.add("bytes", values["bytes_written"], "byte", "bytes_written")
        rows.add("block_size", values["blocksize"], "byte", "blocksize")
        rows.add("elapsed", values["elapsed_sec"], "s", "elapsed_sec")
        rows.add("bandwidth", values["bytes_per_sec"], "byte/s", "bytes_per_sec")
        rows.add("iops", values["iops"], "IOPS", "iops")
        return rows


def _rbd_bytes(match: re.Match[str], source: str) -> float:
    """rbd's bytes/sec, either a plain number or a rounded human-readable "321 MiB/s"."""
    if match["unit"]:
        return quantity(match["bw"], match["unit"], source=source, what="bytes/sec")[0]
    return float(match["bw"])
