"""nfsbench: random or sequential I/O against an NFS export from user space (libnfs), seed 000's NFS grid.

Role: ``client`` (runs the load loop); ``server`` is the NFS server, reached at its address
on the campaign's link (on the lab: the host named by the lab file's ``nfs: server``).
Parameters: ``export`` (the export's name: the client mounts ``/<export>``; on the lab, the device), ``rw``
(``read``, ``write``, ``randread``, ``randwrite``), ``bs`` (bytes), ``iodepth`` (I/Os in flight
per job), ``numjobs`` (jobs, each its own NFS connection and file), ``size`` (bytes of each
job's file), ``runtime`` (s), ``sync`` (true: O_SYNC, FILE_SYNC writes).

The load loop is ``nfsbench.py`` (this project's, standard library only), which drives
Debian's libnfs 4.0 through ctypes over NFSv3 (libnfs 4.0 cannot write over NFSv4); it runs
under ``aoe.py cost`` (as blockproto's initiators do), which appends the loop process's CPU
seconds and the CPU seconds of the server's daemons (``ganesha.nfsd``, ``zfs-fuse``; readable
on the embedded lab, whose hosts share one PID namespace). Both scripts reach the client host
through one service of the tool, named by their digests. Why not fio: Debian's fio has no
``nfs`` engine and this kernel has no NFS client to mount an export for fio's file engines.

Rows: ``ops``, ``bytes``, ``elapsed`` (s), ``iops`` (op/s), ``throughput`` (byte/s),
``lat_mean`` (s) and ``lat_percentile`` (s, dim ``percentile``: 50, 90, 99, 99.9) of each I/O
from issue to completion, ``littles_law_ratio``, ``loop_cpu`` (s, the loop's own CPU during
its I/O) and ``loop_cpu_per_op``, ``initiator_cpu`` (s, the whole process, start-up and
mounts included) and ``initiator_cpu_per_op``, ``target_cpu`` and ``target_cpu_per_op``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

from ..errors import InputError
from . import _hostscript
from .base import Command, Measurement, Param, ParseError, Rows, Tool, extract_json, littles_law_ratio, require
from .blockproto import AOE_SCRIPT, HOST_SCRIPT as AOE_HOST_SCRIPT, cost_line

NFSBENCH_SCRIPT = Path(__file__).resolve().parents[1] / "nfsbench.py"
_SOURCE = NFSBENCH_SCRIPT.read_bytes()
#: Where the client host keeps the load loop: relative to its login directory, named by its digest.
HOST_SCRIPT = _hostscript.host_path("nfsbench", _SOURCE)
RWS = ("read", "write", "randread", "randwrite")
#: Server daemons whose CPU seconds a sample records (those running on the machine the client sees).
SERVER_PROCESSES = "ganesha.nfsd,zfs-fuse"
_EXPORT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class NfsBench(Tool):
    """Adapter for ``nfsbench.py`` (libnfs over NFSv3) behind ``aoe.py cost``."""

    name = "nfsbench"
    parser_version = 1
    primary_metric = "iops"
    operations_metric = "ops"
    additive = frozenset({"ops", "bytes", "iops", "throughput"})
    roles = ("client", "server")
    debian_packages = ("libnfs13", "python3")
    version_command = ("dpkg-query", "-W", "-f", "libnfs ${Version}\\n", "libnfs13")
    params = (
        Param("export", "word", None, "", "the export's name, mounted at /<export>, e.g. ext4 (required)"),
        Param("rw", "word", "randread", "", "the I/O pattern", choices=RWS),
        Param("bs", "int", 4096, "byte", "bytes per I/O", positive=True),
        Param("iodepth", "int", 1, "", "I/Os in flight per job", positive=True),
        Param("numjobs", "int", 1, "", "jobs, each with its own NFS connection and file", positive=True),
        Param("size", "int", 16 << 20, "byte", "bytes of each job's file", positive=True),
        Param("runtime", "number", 5, "s", "how long the loop runs", positive=True),
        Param("sync", "bool", False, "", "open the files O_SYNC: FILE_SYNC writes, stable before the reply"),
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """The service installing both scripts, then ``aoe.py cost ... -- nfsbench.py ...``."""
        export, rw = str(params.get("export") or ""), params.get("rw", "randread")
        if not _EXPORT.match(export):
            raise InputError(f"nfsbench parameter export: {export!r}; give the export's name (letters, digits, "
                             "_ . -), e.g. ext4 for /ext4")
        if rw not in RWS:
            raise InputError(f"nfsbench parameter rw: {rw!r}; use one of {', '.join(RWS)}")
        numbers = {k: int(params.get(k, d)) for k, d in (("bs", 4096), ("iodepth", 1), ("numjobs", 1),
                                                         ("size", 16 << 20))}
        if min(numbers.values()) < 1 or numbers["size"] < numbers["bs"]:
            raise InputError(f"nfsbench parameters {numbers}: each at least 1, and size at least bs")
        inner = ["python3", HOST_SCRIPT, "--server", addresses["server"], "--export", f"/{export}", "--rw", str(rw),
                 "--bs", str(numbers["bs"]), "--iodepth", str(numbers["iodepth"]), "--jobs", str(numbers["numjobs"]),
                 "--size", str(numbers["size"]), "--runtime", f"{float(params.get('runtime', 5)):g}",
                 *(["--sync"] if params.get("sync") else [])]
        wrapper = ["python3", AOE_HOST_SCRIPT, "cost", "--procs", SERVER_PROCESSES, "--"]
        install = _hostscript.install("install-nfsbench", (AOE_HOST_SCRIPT, AOE_SCRIPT.read_bytes()),
                                      (HOST_SCRIPT, _SOURCE))
        return [Command("client", install, service=True), Command("client", tuple(wrapper + inner))]

    def ready(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> str | None:
        """Both scripts are in place on the client host."""
        return f"test -s {AOE_HOST_SCRIPT} && test -s {HOST_SCRIPT}"

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """The runtime, plus a second to mount, plus laying out the files at 200 MB/s the first time."""
        files = int(params.get("numjobs", 1)) * int(params.get("size", 16 << 20))
        return float(params.get("runtime", 5)) + 1.0 + files / 200e6

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """Operations, rates, latencies, Little's-law ratio and CPU seconds per operation of client and server."""
        cost, body = cost_line(stdout, source=source)
        if cost.get("returncode"):
            raise ParseError(source, "returncode 0 in the @cost line", f"returncode {cost['returncode']}"
                             f"{': ' + stderr.strip().splitlines()[-1] if stderr.strip() else ''}")
        doc = extract_json(body, source=source)
        fields = {k: require(doc, k, source=source, where="nfsbench.py's JSON")
                  for k in ("ops", "bytes", "elapsed", "lat_mean", "lat_percentiles", "jobs", "iodepth", "cpu_user",
                            "cpu_system")}
        ops, elapsed = float(fields["ops"]), float(fields["elapsed"])
        if ops <= 0 or elapsed <= 0:
            raise ParseError(source, "a positive operation count and elapsed time", f"ops {ops}, elapsed {elapsed}")
        rows = Rows(source)
        rows.add("ops", ops, "count", "ops")
        rows.add("bytes", fields["bytes"], "byte", "bytes")
        rows.add("elapsed", elapsed, "s", "elapsed")
        rows.add("iops", ops / elapsed, "op/s", "ops / elapsed")
        rows.add("throughput", float(fields["bytes"]) / elapsed, "byte/s", "bytes / elapsed")
        rows.add("lat_mean", fields["lat_mean"], "s", "lat_mean")
        for p, value in fields["lat_percentiles"].items():
            rows.add("lat_percentile", value, "s", f"lat_percentiles.{p}", percentile=float(p))
        rows.add("littles_law_ratio", littles_law_ratio(ops / elapsed, fields["lat_mean"],
                                                        int(fields["jobs"]) * int(fields["iodepth"])),
                 "ratio", "iops x lat_mean / (jobs x iodepth)")
        loop_cpu = float(fields["cpu_user"]) + float(fields["cpu_system"])
        rows.add("loop_cpu", loop_cpu, "s", "cpu_user + cpu_system")
        rows.add("loop_cpu_per_op", loop_cpu / ops, "s/op", "loop CPU per operation")
        rows.add("initiator_cpu", cost["initiator_cpu"], "s", "initiator CPU seconds")
        rows.add("initiator_cpu_per_op", cost["initiator_cpu"] / ops, "s/op", "initiator CPU per operation")
        if cost.get("target_cpu") is not None:
            rows.add("target_cpu", cost["target_cpu"], "s", "server daemons' CPU seconds")
            rows.add("target_cpu_per_op", cost["target_cpu"] / ops, "s/op", "server CPU per operation")
        return rows
