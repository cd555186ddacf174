"""blockproto: one workload over AoE, iSCSI or NBD from user-space initiators (seed 004).

Role: ``client`` (the initiator); ``server`` is the target host, reached at its address on
the campaign's link. Parameters: ``protocol`` (``aoe``, ``iscsi``, ``nbd``), ``rw``
(``read``, ``write``, ``randread``, ``randwrite``), ``bs`` (bytes, a multiple of 512),
``runtime`` (s; whole seconds for iSCSI), ``size`` (bytes of the device used, default 64 MiB), ``depth`` (requests
in flight for iSCSI and NBD; the AoE initiator keeps one I/O in flight, split into as many
frames as the target's frame size needs), ``iqn`` (iSCSI target name, LUN 1), ``port``
(NBD, default 10809).

``initiator`` (NBD only): ``fio`` (default, fio's ``nbd`` engine) or ``perflab``
(``aoe.py bench --nbd``, the load loop that drives AoE, so that AoE and NBD can be compared
with one load generator, and NBD's two generators with each other).

``jobfile`` (NBD only): a fio job file (INI, path relative to the project root) whose
``[global]`` and job sections become fio's command-line options, after the engine, URI and
runtime set here (so the file names no engine, URI, filename or runtime).

The initiators: AoE, ``aoe.py bench`` (this project's, against e.g. vblade); iSCSI,
libiscsi's ``iscsi-perf`` (reads only: it has no write mode); NBD, fio's ``nbd`` engine
(libnbd). Every initiator runs under ``aoe.py cost``, which appends the initiator's CPU
seconds and the target daemon's (``vblade``, ``tgtd``, ``nbdkit``; readable on the
embedded lab, whose hosts share one PID namespace). The script reaches the initiator host
through a service of the tool: it writes the script, passed as a (base64) argument, to
:data:`HOST_SCRIPT` under the login directory, a relative path named by the script's
digest, so the commands name that path and a raw sample says which version of the script ran.

Rows: ``ops`` (reads and writes; fio's flushes are the ``flushes`` row), ``bytes``, ``elapsed`` (s), ``iops``, ``throughput`` (byte/s),
``initiator_cpu`` and ``target_cpu`` (s), ``initiator_cpu_per_op`` and
``target_cpu_per_op`` (s/op): the whole initiator process, start-up included; and
``loop_cpu`` (s) and ``loop_cpu_per_op`` (s/op), the initiator's CPU during its I/O alone
(``aoe.py bench``'s own rusage around its loop; fio's ``usr_cpu`` + ``sys_cpu`` over each
job's runtime), where the initiator reports it (iscsi-perf does not). iscsi-perf prints only its average IOPS (an integer):
its ``ops`` are that average times ``runtime``.
"""

from __future__ import annotations

import configparser
import json
import re
from pathlib import Path
from typing import Any, Mapping

from .. import paths
from ..errors import InputError
from . import _hostscript
from .base import Command, Measurement, Param, ParseError, Rows, Tool, extract_json, search
from .fio import PROGRAM_OPTIONS

PROTOCOLS = {"aoe": "vblade", "iscsi": "tgtd", "nbd": "nbdkit"}
RWS = ("read", "write", "randread", "randwrite")
AOE_SCRIPT = Path(__file__).resolve().parents[1] / "aoe.py"
_SOURCE = AOE_SCRIPT.read_bytes()
#: Where the initiator host keeps the AoE script: relative to its login directory, named by its digest.
HOST_SCRIPT = _hostscript.host_path("aoe", _SOURCE)
#: fio options a job file may not set: the adapter sets them for the protocol and the campaign.
_OWNED = frozenset({"ioengine", "uri", "filename", "runtime", "time_based", "output-format", "output_format"})
_COST = re.compile(r"^@cost (\{.*\})\s*$", re.MULTILINE)


def cost_line(stdout: str, *, source: str = "") -> tuple[dict[str, Any], str]:
    """The record of the ``@cost {...}`` line ``aoe.py cost`` ends a run's output with, and the output before it;
    :class:`ParseError` when the line is missing, repeated (one run per output) or not a JSON object."""
    if len(found := _COST.findall(stdout)) > 1:
        raise ParseError(source, "one '@cost' line (one run per output)", f"{len(found)} such lines")
    match = search(_COST, stdout, source=source, expected="the '@cost {...}' line of aoe.py cost")
    try:
        cost = json.loads(match[1])
    except ValueError as exc:
        raise ParseError(source, "a JSON object on the '@cost' line", f"{match[1][:60]!r} ({exc})") from None
    if not isinstance(cost, dict):
        raise ParseError(source, "a JSON object on the '@cost' line", repr(match[1][:60]))
    return cost, stdout[:match.start()]
_ISCSI = re.compile(r"iops average (?P<iops>\d+) \((?P<mbs>\d+) MB/s\)\s*\n+\s*finished", re.MULTILINE)


class BlockProto(Tool):
    """Adapter for the three user-space block initiators behind ``aoe.py cost``."""

    name = "blockproto"
    operations_metric = "ops"
    parser_version = 3
    primary_metric = "iops"
    roles = ("client", "server")
    debian_packages = ("vblade", "tgt", "libiscsi-bin", "nbdkit", "fio")
    version_command = ("fio", "--version")
    params = (
        Param("protocol", "word", None, "", "the initiator (required)", choices=tuple(PROTOCOLS)),
        Param("rw", "word", "randread", "", "the I/O pattern", choices=RWS),
        Param("bs", "int", 4096, "byte", "block size, a multiple of 512", positive=True),
        Param("runtime", "number", 5, "s", "how long the initiator runs", positive=True),
        Param("size", "int", 64 << 20, "byte", "bytes of the device the I/O covers", positive=True),
        Param("depth", "int", 1, "", "I/Os in flight"),
        Param("jobfile", "path", None, "", "nbd only: a fio job file (relative to the project root) instead of rw/bs/size/depth"),
        Param("port", "int", 10809, "", "nbd only: the server's port", bounds=(1, 65535), positive=True),
        Param("initiator", "word", "fio", "", "nbd only: fio's nbd engine, or perflab's load loop (aoe.py bench)",
              choices=("fio", "perflab")),
        Param("iqn", "word", "iqn.2026-11.org.perflab:disk", "", "iscsi only: the target's IQN"),
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """The initiator command for ``protocol``, wrapped by ``aoe.py cost``."""
        protocol, rw = params.get("protocol"), params.get("rw", "randread")
        if protocol not in PROTOCOLS:
            raise InputError(f"blockproto parameter protocol: {protocol!r}; use one of {', '.join(PROTOCOLS)}")
        if rw not in RWS:
            raise InputError(f"blockproto parameter rw: {rw!r}; use one of {', '.join(RWS)}")
        bs, runtime = int(params.get("bs", 4096)), float(params.get("runtime", 5))
        size, depth, server = int(params.get("size", 64 << 20)), int(params.get("depth", 1)), addresses["server"]
        if bs <= 0 or bs % 512:
            raise InputError(f"blockproto parameter bs: {bs}; use a positive multiple of 512 bytes")
        jobfile = params.get("jobfile")
        if jobfile is not None and protocol != "nbd":
            raise InputError(f"blockproto parameter jobfile: only protocol nbd runs fio job files (not {protocol!r})")
        initiator = params.get("initiator", "fio")
        if initiator not in ("fio", "perflab") or (initiator == "perflab" and (protocol != "nbd" or jobfile)):
            raise InputError(f"blockproto parameter initiator: {initiator!r} with protocol {protocol!r}; use fio or "
                             "perflab, and perflab only for nbd without a job file")
        if protocol == "aoe":
            inner = ["python3", HOST_SCRIPT, "bench", "--peer", server, "--rw", rw, "--bs", str(bs),
                     "--size", str(size), "--runtime", f"{runtime:g}"]
        elif protocol == "iscsi":
            if "write" in rw:
                raise InputError("blockproto: iscsi-perf (libiscsi) only reads; drop the iSCSI write cells "
                                 "(exclude) or use a kernel initiator on real hosts")
            if runtime != int(runtime) or runtime < 1:
                raise InputError(f"blockproto parameter runtime: {runtime:g}; iscsi-perf takes whole seconds (1 or more)")
            inner = ["iscsi-perf", "-t", str(int(runtime)), "-b", str(bs // 512), "-m", str(depth),
                     *(["-r"] if rw.startswith("rand") else []),
                     f"iscsi://{server}/{params.get('iqn', 'iqn.2026-11.org.perflab:disk')}/1"]
        elif initiator == "perflab":
            inner = ["python3", HOST_SCRIPT, "bench", "--nbd", f"{server}:{int(params.get('port', 10809))}",
                     "--rw", rw, "--bs", str(bs), "--size", str(size), "--runtime", f"{runtime:g}"]
        else:
            inner = ["fio", "--output-format=json", "--ioengine=nbd", f"--uri=nbd://{server}:{int(params.get('port', 10809))}",
                     f"--runtime={runtime:g}", "--time_based"]
            inner += job_options(str(jobfile)) if jobfile is not None else [
                "--name=blockproto", f"--rw={rw}", f"--bs={bs}", f"--size={size}", f"--iodepth={depth}"]
        wrapper = ["python3", HOST_SCRIPT, "cost", "--procs", PROTOCOLS[protocol], "--"]
        install = _hostscript.install("install-aoe", (HOST_SCRIPT, _SOURCE))
        return [Command("client", install, service=True), Command("client", tuple(wrapper + inner))]

    def ready(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> str | None:
        """The script is in place on the initiator host."""
        return f"test -s {HOST_SCRIPT}"

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """The runtime plus a second to connect."""
        return float(params.get("runtime", 5)) + 1.0

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """Operations, throughput and CPU seconds per operation of the initiator and the target."""
        cost, body = cost_line(stdout, source=source)
        if cost.get("returncode"):
            raise ParseError(source, "returncode 0 in the @cost line", f"returncode {cost['returncode']}")
        flushes = loop_cpu = None
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
            if "jobs" in doc:  # fio: every job's reads and writes, over the longest job's runtime
                jobs = doc["jobs"]
                if not (isinstance(jobs, list) and jobs and all(isinstance(j, dict) and "read" in j and "write" in j
                                                                for j in jobs)):
                    raise ParseError(source, "fio's JSON: a list of jobs with read and write", repr(jobs)[:80])
                ops = float(sum(job[d]["total_ios"] for job in jobs for d in ("read", "write")))
                nbytes = float(sum(job[d]["io_bytes"] for job in jobs for d in ("read", "write")))
                elapsed = max(float(job["job_runtime"]) for job in jobs) / 1000.0
                flushes = float(sum(job.get("sync", {}).get("total_ios", 0) for job in jobs))
                if all("usr_cpu" in job and "sys_cpu" in job for job in jobs):
                    loop_cpu = sum((float(job["usr_cpu"]) + float(job["sys_cpu"])) / 100.0
                                   * float(job["job_runtime"]) / 1000.0 for job in jobs)
            else:
                ops, nbytes, elapsed = float(doc["ops"]), float(doc["bytes"]), float(doc["elapsed"])
                loop_cpu = float(doc["cpu_user"]) + float(doc["cpu_system"])
        if ops <= 0 or elapsed <= 0:
            raise ParseError(source, "a positive operation count and elapsed time", f"ops {ops}, elapsed {elapsed}")
        rows = Rows(source)
        rows.add("ops", ops, "count", "operations")
        if flushes is not None:
            rows.add("flushes", flushes, "count", "fio's sync (NBD flush) operations")
        rows.add("bytes", nbytes, "byte", "bytes transferred")
        rows.add("elapsed", elapsed, "s", "measured seconds")
        rows.add("iops", ops / elapsed, "op/s", "operations per second")
        rows.add("throughput", nbytes / elapsed, "byte/s", "bytes per second")
        rows.add("initiator_cpu", cost["initiator_cpu"], "s", "initiator CPU seconds")
        rows.add("initiator_cpu_per_op", cost["initiator_cpu"] / ops, "s/op", "initiator CPU per operation")
        if loop_cpu is not None:
            rows.add("loop_cpu", loop_cpu, "s", "initiator CPU seconds during its I/O")
            rows.add("loop_cpu_per_op", loop_cpu / ops, "s/op", "initiator CPU per operation during its I/O")
        if cost.get("target_cpu") is not None:
            rows.add("target_cpu", cost["target_cpu"], "s", "target CPU seconds")
            rows.add("target_cpu_per_op", cost["target_cpu"] / ops, "s/op", "target CPU per operation")
        return rows


def job_options(path: str) -> list[str]:
    """fio command-line options from a job file: its ``[global]`` options, then ``--name=`` and the options of
    each job section in file order (an option without a value is a flag)."""
    where = paths.root() / path
    parser = configparser.ConfigParser(allow_no_value=True, interpolation=None, delimiters=("=",),
                                       comment_prefixes=("#", ";"), default_section="\0")
    # configparser documents replacing optionxform (keep option names as written); typeshed types it a method
    parser.optionxform = str  # type: ignore[assignment, method-assign]
    try:
        parser.read_string(where.read_text(), source=path)
    except (OSError, configparser.Error) as exc:
        raise InputError(f"blockproto parameter jobfile: {path}: {exc}; give a fio job file relative to the "
                         "project root") from None
    argv: list[str] = []
    for section in parser.sections():
        owned = sorted(_OWNED & set(parser[section]))
        if owned:
            raise InputError(f"blockproto parameter jobfile: {path}: [{section}] sets {', '.join(owned)}; the "
                             "adapter sets these, remove them from the job file")
        programs = sorted({o.split("=")[0] for o in PROGRAM_OPTIONS} & set(parser[section]))
        if programs:
            raise InputError(f"blockproto parameter jobfile: {path}: [{section}] sets {', '.join(programs)}, which "
                             "runs a program; a job file may not: remove it")
        argv += [] if section == "global" else [f"--name={section}"]
        argv += [f"--{key}" if value is None else f"--{key}={value}" for key, value in parser[section].items()]
    if not any(a.startswith("--name=") for a in argv):
        raise InputError(f"blockproto parameter jobfile: {path}: no job section; add one, e.g. [webserver]")
    return argv
