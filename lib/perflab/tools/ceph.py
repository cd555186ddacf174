"""Ceph's own benchmarks (seed 001): ``rados bench``, ``rbd bench`` and ``ceph tell osd.N bench``.

Each runs on a Ceph client host (role ``client``) that finds its cluster as Ceph's clients
do, in ``/etc/ceph`` (the lab's Ceph hosts see the lab cluster's configuration there,
``perflab.hosts.lab.ceph``; a real client has its own); ``client_id`` picks the cephx user
(default ``admin``, whose keyring is in ``/etc/ceph``), and ``config`` (a mapping)
overrides Ceph options for the one command (``{rbd_cache: "true"}`` becomes
``--rbd_cache=true``, recorded with the sample's command line). The parsers read
the thesis's outputs, published examples and outputs recorded from the lab's cluster
(``tests/fixtures/ceph/``, origins in its ORIGIN.md).

Parameters: ``rados_bench``: ``pool`` (required), ``seconds`` (10), ``mode`` (write, seq,
rand; default write), ``concurrent`` (``-t``, 16), ``object_size`` (``-b``, write only),
``cleanup`` (false: ``--no-cleanup``, so a later seq or rand phase has objects to read;
default true), ``run_name``. ``rbd_bench``: ``pool`` and ``image`` (required), ``io_type``
(write, read, readwrite), ``io_size``, ``io_threads``, ``io_total``, ``io_pattern`` (seq,
rand), ``rw_mix_read``. ``ceph_osd_bench``: ``osd`` (id, required), ``bytes`` (total, 1 GiB
by default as in Ceph), ``block_size`` (4 MiB).

Output traps: rados bench's "MB/sec" is MiB/s (obj_bencher divides by 1024*1024) and
its "Average IOPS" is truncated to an integer; rbd bench's final ``elapsed`` is whole
seconds in recent releases and its ``bytes/sec`` may be a rounded "321 MiB/s", so rates
come from ``ops/sec``; OCR'd or copied outputs lose values (seed 001's Fig. 84 has the
labels and numbers in separate columns), which the parsers refuse rather than guess.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..errors import InputError
from .base import (Command, Measurement, Param, ParseError, Rows, Tool, extract_json, key_values, littles_law_ratio, mean_in_flight, number,
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
_RBD_MIX = re.compile(r"^(?P<dir>read|write)_ops:\s+(?P<ops>\d+)\s+(?P=dir)_ops/sec:\s+(?P<rate>[\d.]+)\s+"
                      r"(?P=dir)_bytes/sec:\s+(?P<bw>[\d.]+)(?:\s*(?P<unit>[KMGT]iB/s))?\s*$", re.MULTILINE)
#: Rates assumed by the expected durations (plans, sample timeouts) of runs bounded by size, not time.
ASSUMED_BYTES_PER_SEC = 50e6
ASSUMED_IOPS = 500.0
_OSD_PLAIN = re.compile(r"bench: wrote (?P<total>[\d.]+) (?P<tunit>[KMG]B) "
                        r"in blocks of (?P<bs>[\d.]+) (?P<bunit>[KMG]B) "
                        r"in (?P<sec>[\d.]+) sec at (?P<rate>[\d.]+) (?P<runit>[KMG]B/sec)")


class _CephClient(Tool):
    """Base of the Ceph client tools: ``ceph-common``'s commands and the cluster options they share."""

    roles = ("client",)
    debian_packages = ("ceph-common",)
    version_command = ("ceph", "--version")
    #: The parameters every Ceph client tool takes.
    CLIENT_PARAMS = (
        Param("client_id", "word", None, "", "the cephx user (default admin), its keyring in /etc/ceph"),
        Param("config", "options", None, "", "Ceph options for this command only, e.g. {rbd_cache: \"true\"}"),
    )

    @staticmethod
    def cluster_args(params: Mapping[str, Any]) -> list[str]:
        """``--id`` when ``client_id`` is set, then ``config``'s overrides."""
        args = [f"--id={params['client_id']}"] if params.get("client_id") else []
        config = params.get("config") or {}
        if not isinstance(config, Mapping):
            raise InputError(f"config: a mapping of Ceph options to values, e.g. {{rbd_cache: false}}; "
                             f"found {config!r}")
        for option, value in config.items():
            if not re.fullmatch(r"[a-z][a-z0-9_]*", str(option)):
                raise InputError(f"config: {option!r} is not a Ceph option name (lowercase, digits, _); write it "
                                 "as Ceph spells it, e.g. rbd_cache")
            value = str(value).lower() if isinstance(value, bool) else str(value)
            args.append(f"--{option}={value}")
        return args


def _required(params: Mapping[str, Any], key: str, tool: str, example: str) -> str:
    if params.get(key) in (None, ""):
        raise InputError(f"{tool} needs the parameter {key!r} (e.g. {example})")
    return str(params[key])


class RadosBench(_CephClient):
    """``rados bench -p POOL SECONDS write|seq|rand``: RADOS object bandwidth, IOPS and latency."""

    name = "rados_bench"
    parser_version = 1
    version_command = ("rados", "--version")
    primary_metric = "bandwidth"
    additive = frozenset({"bandwidth", "iops", "ops"})
    operations_metric = "ops"
    params = (
        Param("pool", "word", None, "", "the pool to bench (required)"),
        Param("seconds", "number", 10, "s", "how long to write, or at most to read"),
        Param("mode", "word", "write", "", "write, or read back what a write left: seq or rand",
              choices=("write", "seq", "rand")),
        Param("concurrent", "int", 16, "", "operations in flight (-t)"),
        Param("object_size", "size", None, "byte", "object size of a write (-b; default 4 MiB)"),
        Param("cleanup", "bool", True, "", "false: keep the written objects (--no-cleanup) for seq and rand"),
        Param("run_name", "word", None, "", "the bench's run name (--run-name)"),
        *_CephClient.CLIENT_PARAMS,
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """``rados [cluster options] -p POOL bench SECONDS MODE -t N [-b SIZE] [--no-cleanup] [--run-name N]``."""
        mode = str(params.get("mode", "write"))
        if mode not in ("write", "seq", "rand"):
            raise InputError(f"rados_bench: mode {mode!r}: use write, seq or rand")
        argv = ["rados", *self.cluster_args(params), "-p", _required(params, "pool", self.name, "pool: bench"),
                "bench", str(params.get("seconds", 10)), mode, "-t", str(params.get("concurrent", 16))]
        if mode == "write" and params.get("object_size"):
            argv += ["-b", str(params["object_size"])]
        if mode == "write" and not params.get("cleanup", True):
            argv.append("--no-cleanup")
        if params.get("run_name"):
            argv += ["--run-name", str(params["run_name"])]
        return [Command("client", tuple(argv))]

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """The bench's seconds, plus a second to connect and (write) to finish the ops in flight."""
        return float(params.get("seconds", 10)) + 1.0

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
        rows.add("mean_in_flight", None if iops is None or latency is None else mean_in_flight(iops, latency), "count",
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


class RbdBench(_CephClient):
    """``rbd bench --io-type ... POOL/IMAGE`` through librbd (the older ``rbd bench-write`` is parsed too)."""

    name = "rbd_bench"
    parser_version = 2
    version_command = ("rbd", "--version")
    primary_metric = "iops"
    additive = frozenset({"iops", "bandwidth", "ops"})
    operations_metric = "ops"
    params = (
        Param("pool", "word", None, "", "the image's pool (required)"),
        Param("image", "word", None, "", "the image (required)"),
        Param("io_type", "word", "write", "", "the I/O", choices=("write", "read", "readwrite")),
        Param("io_size", "size", "4K", "byte", "bytes per I/O"),
        Param("io_threads", "int", 16, "", "I/Os in flight"),
        Param("io_total", "size", "64M", "byte", "bytes of I/O in the run"),
        Param("io_pattern", "word", "seq", "", "sequential or random offsets", choices=("seq", "rand")),
        Param("rw_mix_read", "int", None, "%", "share of reads of a readwrite run"),
        *_CephClient.CLIENT_PARAMS,
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """``rbd [cluster options] bench --io-type T ... --pool POOL --image IMAGE``."""
        argv = ["rbd", *self.cluster_args(params), "bench", "--io-type", str(params.get("io_type", "write")),
                "--io-size", str(params.get("io_size", "4K")), "--io-threads", str(params.get("io_threads", 16)),
                "--io-total", str(params.get("io_total", "64M")), "--io-pattern", str(params.get("io_pattern", "seq"))]
        if params.get("rw_mix_read") is not None:
            argv += ["--rw-mix-read", str(params["rw_mix_read"])]
        return [Command("client", (*argv, "--pool", _required(params, "pool", self.name, "pool: bench"),
                                   "--image", _required(params, "image", self.name, "image: img")))]

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """``io_total`` at :data:`ASSUMED_BYTES_PER_SEC` or its I/Os at :data:`ASSUMED_IOPS`, whichever is longer."""
        total = _size(params.get("io_total", "64M"))
        ops = total / max(_size(params.get("io_size", "4K")), 1)
        return max(total / ASSUMED_BYTES_PER_SEC, ops / ASSUMED_IOPS) + 1.0

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
        for mix in _RBD_MIX.finditer(stdout[final.end():]):  # readwrite: each direction's share
            rows.add("ops", mix["ops"], "count", f"{mix['dir']}_ops", direction=mix["dir"], **dims)
            rows.add("iops", mix["rate"], "IOPS", f"{mix['dir']}_ops/sec", direction=mix["dir"], **dims)
            rows.add("bandwidth", _rbd_bytes(mix, source), "byte/s", f"{mix['dir']}_bytes/sec", direction=mix["dir"],
                     **dims)
        for tick in _RBD_TICK.finditer(stdout[:final.start()]):
            window = {"interval_start": float(int(tick["sec"]) - 1), "interval_end": float(tick["sec"]), **dims}
            rows.add("iops", tick["rate"], "IOPS", f"OPS/SEC at sec {tick['sec']}", **window)
            rows.add("bandwidth", _rbd_bytes(tick, source), "byte/s", f"BYTES/SEC at sec {tick['sec']}", **window)
        return rows


class CephOsdBench(_CephClient):
    """``ceph tell osd.N bench [TOTAL] [BLOCK]``: one OSD writing through BlueStore (JSON, or the old plain text)."""

    name = "ceph_osd_bench"
    parser_version = 1
    primary_metric = "bandwidth"
    params = (
        Param("osd", "int", None, "", "the OSD's id (required)"),
        Param("bytes", "size", 1 << 30, "byte", "bytes the OSD writes"),
        Param("block_size", "size", 4 << 20, "byte", "bytes per write"),
        *_CephClient.CLIENT_PARAMS,
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """``ceph [cluster options] tell osd.N bench BYTES BLOCK_SIZE`` (JSON on stdout)."""
        osd = _required(params, "osd", self.name, "osd: 0")
        if not osd.isdigit():
            raise InputError(f"ceph_osd_bench: osd {osd!r}: an OSD id, e.g. 0")
        return [Command("client", ("ceph", *self.cluster_args(params), "tell", f"osd.{osd}", "bench",
                                   str(_size(params.get("bytes", 1 << 30))),
                                   str(_size(params.get("block_size", 4 << 20)))))]

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """``bytes`` at :data:`ASSUMED_BYTES_PER_SEC`, plus a second for the command's round trips."""
        return _size(params.get("bytes", 1 << 30)) / ASSUMED_BYTES_PER_SEC + 1.0

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


def _size(value: Any) -> int:
    """Bytes of a size parameter: a number, or one with K, M, G (powers of 1024; rbd's and rados's syntax)."""
    match = re.fullmatch(r"(\d+)([KMG]?)i?B?", str(value).strip(), re.IGNORECASE)
    if not match:
        raise InputError(f"size {value!r}: use bytes or a number with K, M or G (e.g. 4M)")
    return int(match[1]) << {"": 0, "K": 10, "M": 20, "G": 30}[match[2].upper()]


def _rbd_bytes(match: re.Match[str], source: str) -> float:
    """rbd's bytes/sec, either a plain number or a rounded human-readable "321 MiB/s"."""
    if match["unit"]:
        return quantity(match["bw"], match["unit"], source=source, what="bytes/sec")[0]
    return float(match["bw"])
