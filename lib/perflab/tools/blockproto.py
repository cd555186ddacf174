"""blockproto: one workload over AoE, iSCSI or NBD from user-space initiators (seed 004).

Role: ``client`` (the initiator); ``server`` is the target host, reached at its address on
the campaign's link. Parameters: ``protocol`` (``aoe``, ``iscsi``, ``nbd``), ``rw``
(``read``, ``write``, ``randread``, ``randwrite``), ``bs`` (bytes, a multiple of 512),
``runtime`` (s; whole seconds for iSCSI), ``size`` (bytes of the device used, default 64 MiB), ``depth`` (requests
in flight for iSCSI and NBD; the AoE initiator keeps one I/O in flight, split into as many
frames as the target's frame size needs), ``iqn`` (iSCSI target name, LUN 1), ``port``
(NBD, default 10809).

The initiators: AoE, ``perflab/aoe.py bench`` (this project's, against e.g. vblade);
iSCSI, libiscsi's ``iscsi-perf`` (reads only: it has no write mode); NBD, fio's ``nbd``
engine (libnbd). Every initiator runs under ``aoe.py cost``, which appends the
initiator's CPU seconds and the target daemon's (``vblade``, ``tgtd``, ``nbdkit``;
readable on the embedded lab, whose hosts share one PID namespace). The script is passed
by its path on the controller: a real host needs the same path (a checkout of the project).

Rows: ``ops``, ``bytes``, ``elapsed`` (s), ``iops``, ``throughput`` (byte/s),
``initiator_cpu`` and ``target_cpu`` (s), ``initiator_cpu_per_op`` and
``target_cpu_per_op`` (s/op). iscsi-perf prints only its average IOPS (an integer):
its ``ops`` are that average times ``runtime``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

from .base import Command, Measurement, ParseError, Rows, Tool, extract_json, search

PROTOCOLS = {"aoe": "vblade", "iscsi": "tgtd", "nbd": "nbdkit"}
RWS = ("read", "write", "randread", "randwrite")
AOE_SCRIPT = Path(__file__).resolve().parents[1] / "aoe.py"
_COST = re.compile(r"^@cost (\{.*\})\s*$", re.MULTILINE)
_ISCSI = re.compile(r"iops average (?P<iops>\d+) \((?P<mbs>\d+) MB/s\)\s*\n+\s*finished", re.MULTILINE)


class BlockProto(Tool):
    """Adapter for the three user-space block initiators behind ``aoe.py cost``."""

    name = "blockproto"
    operations_metric = "ops"
    parser_version = 1
    primary_metric = "iops"
    roles = ("client", "server")
    debian_packages = ("vblade", "tgt", "libiscsi-bin", "nbdkit", "fio")
    version_command = ("fio", "--version")

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """The initiator command for ``protocol``, wrapped by ``aoe.py cost``."""
        protocol, rw = params.get("protocol"), params.get("rw", "randread")
        if protocol not in PROTOCOLS:
            raise ValueError(f"blockproto parameter protocol: {protocol!r}; use one of {', '.join(PROTOCOLS)}")
        if rw not in RWS:
            raise ValueError(f"blockproto parameter rw: {rw!r}; use one of {', '.join(RWS)}")
        bs, runtime = int(params.get("bs", 4096)), float(params.get("runtime", 5))
        size, depth, server = int(params.get("size", 64 << 20)), int(params.get("depth", 1)), addresses["server"]
        if bs <= 0 or bs % 512:
            raise ValueError(f"blockproto parameter bs: {bs}; use a positive multiple of 512 bytes")
        if protocol == "aoe":
            inner = ["python3", str(AOE_SCRIPT), "bench", "--peer", server, "--rw", rw, "--bs", str(bs),
                     "--size", str(size), "--runtime", f"{runtime:g}"]
        elif protocol == "iscsi":
            if "write" in rw:
                raise ValueError("blockproto: iscsi-perf (libiscsi) only reads; drop the iSCSI write cells "
                                 "(exclude) or use a kernel initiator on real hosts")
            if runtime != int(runtime) or runtime < 1:
                raise ValueError(f"blockproto parameter runtime: {runtime:g}; iscsi-perf takes whole seconds (1 or more)")
            inner = ["iscsi-perf", "-t", str(int(runtime)), "-b", str(bs // 512), "-m", str(depth),
                     *(["-r"] if rw.startswith("rand") else []),
                     f"iscsi://{server}/{params.get('iqn', 'iqn.2026-11.org.perflab:disk')}/1"]
        else:
            inner = ["fio", "--output-format=json", "--name=blockproto", "--ioengine=nbd",
                     f"--uri=nbd://{server}:{int(params.get('port', 10809))}", f"--rw={rw}", f"--bs={bs}",
                     f"--size={size}", f"--runtime={runtime:g}", "--time_based", f"--iodepth={depth}"]
        wrapper = ["python3", str(AOE_SCRIPT), "cost", "--procs", PROTOCOLS[protocol], "--"]
        return [Command("client", tuple(wrapper + inner))]

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """The runtime plus a second to connect."""
        return float(params.get("runtime", 5)) + 1.0

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """Operations, throughput and CPU seconds per operation of the initiator and the target."""
        cost = json.loads(search(_COST, stdout, source=source, expected="the '@cost {...}' line of aoe.py cost")[1])
        if cost.get("returncode"):
            raise ParseError(source, "returncode 0 in the @cost line", f"returncode {cost['returncode']}")
        body = stdout[:_COST.search(stdout).start()]
        if "iops average" in body:
            runtime = float(search(re.compile(r"will run for (\d+(?:\.\d+)?) seconds"), body, source=source,
                                   expected="iscsi-perf's 'will run for N seconds'")[1])
            match = search(_ISCSI, body, source=source, expected="iscsi-perf's final 'iops average N (M MB/s)'")
            size = int(search(re.compile(r"transfer size of \d+ blocks \((\d+) byte\)"), body, source=source,
                              expected="iscsi-perf's 'transfer size of N blocks (B byte)'")[1])
            ops, elapsed = float(match["iops"]) * runtime, runtime
            nbytes = ops * size
        else:
            doc = extract_json(body, source=source)
            if "jobs" in doc:
                job = doc["jobs"][0]
                ops = float(sum(job[d]["total_ios"] for d in ("read", "write")))
                nbytes = float(sum(job[d]["io_bytes"] for d in ("read", "write")))
                elapsed = float(job["job_runtime"]) / 1000.0
            else:
                ops, nbytes, elapsed = float(doc["ops"]), float(doc["bytes"]), float(doc["elapsed"])
        if ops <= 0 or elapsed <= 0:
            raise ParseError(source, "a positive operation count and elapsed time", f"ops {ops}, elapsed {elapsed}")
        rows = Rows(source)
        rows.add("ops", ops, "count", "operations")
        rows.add("bytes", nbytes, "byte", "bytes transferred")
        rows.add("elapsed", elapsed, "s", "measured seconds")
        rows.add("iops", ops / elapsed, "op/s", "operations per second")
        rows.add("throughput", nbytes / elapsed, "byte/s", "bytes per second")
        rows.add("initiator_cpu", cost["initiator_cpu"], "s", "initiator CPU seconds")
        rows.add("initiator_cpu_per_op", cost["initiator_cpu"] / ops, "s/op", "initiator CPU per operation")
        if cost.get("target_cpu") is not None:
            rows.add("target_cpu", cost["target_cpu"], "s", "target CPU seconds")
            rows.add("target_cpu_per_op", cost["target_cpu"] / ops, "s/op", "target CPU per operation")
        return rows
