"""fio: storage IOPS, bandwidth and latency, parsed from ``--output-format=json`` (or json+).

Role: ``client`` (the host that issues the I/O). Parameters: ``rw`` (read, write,
randread, randwrite, rw, randrw), ``bs``, ``iodepth``, ``numjobs``, ``rwmixread``,
``direct``, ``size``, ``runtime`` (s; implies ``time_based``), ``ioengine`` (default
libaio), ``filename`` or ``directory``, ``group_reporting``, ``invalidate``,
``ramp_time``, ``name``, ``output_format`` (json or json+), ``options`` (a mapping of
any other fio option).

Rows per job (dims ``job``, ``job_name``, ``direction``) and, per group of jobs run
together, summary rows without ``job`` (dim ``group`` only when a run has several
stonewalled groups): IOPS and bandwidth summed over jobs, latency means weighted by
each job's I/O count, percentiles only when one job entry carries them (fio's own
group_reporting). A ``littles_law_ratio`` row per job and per group compares
IOPS x mean latency with the jobs x queue depth fio was asked to keep in flight.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from . import _blocks
from .base import (Command, Measurement, Param, ParseError, Rows, Tool, littles_law_ratio, number,
                   require)

#: Engines that complete each I/O before issuing the next, whatever ``iodepth`` says.
SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap", "filecreate", "filestat"})
DIRECTIONS = ("read", "write", "trim")
#: fio options that run a program (or load code): refused unless a campaign lists them under ``programs``.
PROGRAM_OPTIONS = frozenset({"exec_prerun", "exec_postrun", "ioengine=exec", "ioengine=external"})


@dataclass
class _Direction:
    """Per-direction numbers of one job entry, already in normalised units."""

    iops: float
    bandwidth: float
    io_bytes: float
    runtime: float
    total_ios: float
    lat_mean: float | None


class Fio(Tool):
    """Adapter for fio 3.x JSON output (fio 2.x microsecond fields are read too)."""

    name = "fio"
    parser_version = 1
    roles = ("client",)
    additive = frozenset({"iops", "bandwidth", "io_bytes", "total_ios"})
    debian_packages = ("fio",)
    version_command = ("fio", "--version")
    operations_metric = "total_ios"
    params: ClassVar[tuple[Param, ...]] = (
        Param("rw", "word", "randread", "", "the I/O pattern",
              choices=("read", "write", "randread", "randwrite", "rw", "randrw", "readwrite", "trim", "randtrim")),
        Param("name", "word", "perflab", "", "the job's name"),
        Param("bs", "size", "4k", "byte", "block size of each I/O", positive=True),
        Param("iodepth", "int", 1, "", "I/Os kept in flight per job (asynchronous engines)", positive=True),
        Param("numjobs", "int", 1, "", "jobs (processes) doing the same I/O", positive=True),
        Param("rwmixread", "int", None, "%", "share of reads in a mixed workload"),
        Param("direct", "int", None, "", "1: O_DIRECT, bypassing the page cache", bounds=(0, 1)),
        Param("size", "size", "64M", "byte", "bytes of I/O per job (the file's size)", positive=True),
        Param("runtime", "number", None, "s", "run for this long (time_based); default: until size is done",
              positive=True),
        Param("ioengine", "word", "libaio", "", "the I/O engine", programs=frozenset({"exec", "external"})),
        Param("filename", "write-path", None, "", "the file or device the jobs read and write"),
        Param("directory", "write-path", None, "", "the directory fio lays its files out in (instead of filename)"),
        Param("group_reporting", "bool", False, "", "one report per group of jobs"),
        Param("invalidate", "int", None, "", "1: drop the file's page cache before the run", bounds=(0, 1)),
        Param("ramp_time", "number", 0, "s", "seconds run before measuring", positive=True, allow_zero=True),
        Param("output_format", "word", "json", "", "json or json+", choices=("json", "json+")),
        Param("options", "options", None, "", "any other fio option -> value", programs=PROGRAM_OPTIONS),
    )

    def operations(self, measurements: list[Measurement]) -> float | None:
        """Every job's I/Os in every direction (``total_ios`` is only reported per job and direction)."""
        values = [m.value for m in measurements if m.metric == "total_ios" and m.value is not None]
        return sum(values) if values else None

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """One fio run with the job given on the command line."""
        argv = ["fio", f"--output-format={params.get('output_format', 'json')}",
                f"--name={params.get('name', 'perflab')}"]
        argv += _job_options(params, defaults={"ioengine": "libaio", "rw": "randread", "bs": "4k", "size": "64M"})
        return [Command("client", tuple(argv))]

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """The runtime plus ramp time plus about a second for start-up and laying out a small file."""
        return float(params.get("runtime", 10)) + float(params.get("ramp_time", 0)) + 1.0

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """Rows per job and direction, per-group summaries, Little's-law ratios, disk use."""
        doc = _blocks.one_json(stdout, '"fio version"', source=source)
        jobs = require(doc, "jobs", source=source, where="the fio JSON document")
        if not isinstance(jobs, list) or not jobs:
            raise ParseError(source, "a non-empty 'jobs' list", repr(jobs)[:60])
        rows = Rows(source)
        global_options = doc.get("global options") or {}
        names = [str(job.get("jobname")) for job in jobs]
        groups: dict[int, list[tuple[float, dict[str, _Direction]]]] = {}
        for index, job in enumerate(jobs):
            where = f"jobs[{index}] ({job.get('jobname')!r})"
            if job.get("error"):
                raise ParseError(source, f"error 0 in {where}", f"error {job['error']} (fio reported a failed job)")
            options = {**global_options, **(job.get("job options") or {})}
            per_entry = max(_int_option(options, "numjobs", source) / names.count(str(job.get("jobname"))), 1.0)
            sync = str(options.get("ioengine", "psync")) in SYNC_ENGINES
            depth = 1 if sync else _int_option(options, "iodepth", source)
            dims = {"job": index, "job_name": job.get("jobname"), **self.job_dims(job)}
            directions = {d: _direction(rows, job, d, where, dims) for d in DIRECTIONS if _active(job, d)}
            outstanding = per_entry * depth
            rows.add("littles_law_ratio", littles_law_ratio(
                sum(x.iops for x in directions.values()),
                _weighted_latency(directions.values()), outstanding) if directions else None,
                "ratio", f"{where} iops x lat_ns.mean", **dims)
            rows.add("usr_cpu", job.get("usr_cpu"), "%", f"{where}.usr_cpu", **dims)
            rows.add("sys_cpu", job.get("sys_cpu"), "%", f"{where}.sys_cpu", **dims)
            groups.setdefault(int(job.get("groupid", 0)), []).append((outstanding, directions))
        for group, members in groups.items():
            self._group_rows(rows, group, members, jobs, single_group=len(groups) == 1)
        for disk in doc.get("disk_util") or []:
            rows.add("disk_util", disk.get("util"), "%", "disk_util.util", device=disk.get("name"))
        return rows

    def job_dims(self, job: Mapping[str, Any]) -> dict[str, Any]:
        """Extra dims for a job's rows (none here; the IOzone-style adapter adds ``phase``)."""
        return {}

    def group_dims(self, group: int, jobs: list[Mapping[str, Any]], single_group: bool) -> dict[str, Any]:
        """Dims of a group's summary rows: ``group`` when a run has several groups."""
        return {} if single_group else {"group": group}

    def _group_rows(self, rows: Rows, group: int, members: list[tuple[float, dict[str, _Direction]]],
                    jobs: list[Mapping[str, Any]], single_group: bool) -> None:
        dims = self.group_dims(group, [j for j in jobs if int(j.get("groupid", 0)) == group], single_group)
        where = f"group {group} (sum over its jobs)"
        for direction in DIRECTIONS:
            parts = [d[direction] for _, d in members if direction in d]
            if not parts:
                continue
            rows.add("iops", sum(p.iops for p in parts), "IOPS", where, direction=direction, **dims)
            rows.add("bandwidth", sum(p.bandwidth for p in parts), "byte/s", where, direction=direction, **dims)
            rows.add("io_bytes", sum(p.io_bytes for p in parts), "byte", where, direction=direction, **dims)
            rows.add("runtime", max(p.runtime for p in parts), "s", where, direction=direction, **dims)
            rows.add("lat_mean", _weighted_latency(parts), "s", where, direction=direction, **dims)
        if len(members) == 1:
            job = next(j for j in jobs if int(j.get("groupid", 0)) == group)
            for direction in DIRECTIONS:
                if _active(job, direction):
                    _percentiles(rows, job[direction], f"group {group} {direction}", direction=direction, **dims)
        flows = [(o, d) for o, d in members if d]
        ratio = littles_law_ratio(sum(p.iops for _, d in flows for p in d.values()),
                                  _weighted_latency([p for _, d in flows for p in d.values()]),
                                  sum(o for o, _ in flows)) if flows else None
        rows.add("littles_law_ratio", ratio, "ratio", where, **dims)


class FioIozone(Fio):
    """IOzone-style write, rewrite, read and reread phases (seed 003), run with fio.

    IOzone itself is not packaged in Debian main, so the four phases are expressed as
    four stonewalled fio jobs on one file, named after IOzone's phases; rows carry the
    dim ``phase``. This is an emulation: fio's numbers are comparable in kind (bytes per
    second for one file of ``size``, record size ``bs``), not IOzone's own output.
    Parameters: ``size`` (default 100M, as in seed 003), ``bs`` (default 4k),
    ``filename``, ``direct`` (default 0: IOzone's default goes through the page cache),
    ``ioengine`` (default psync, IOzone's read/write calls).
    """

    name = "fio_iozone"
    PHASES = (("write", "write"), ("rewrite", "write"), ("read", "read"), ("reread", "read"))
    params = (
        Param("bs", "size", "4k", "byte", "block size of each I/O", positive=True),
        Param("iodepth", "int", 1, "", "I/Os kept in flight per job (asynchronous engines)", positive=True),
        Param("numjobs", "int", 1, "", "jobs (processes) doing the same I/O", positive=True),
        Param("rwmixread", "int", None, "%", "share of reads in a mixed workload"),
        Param("direct", "int", 0, "", "1: O_DIRECT, bypassing the page cache", bounds=(0, 1)),
        Param("size", "size", "100M", "byte", "bytes of I/O per job (the file's size)", positive=True),
        Param("runtime", "number", None, "s", "run for this long (time_based); default: until size is done",
              positive=True),
        Param("ioengine", "word", "psync", "", "the I/O engine", programs=frozenset({"exec", "external"})),
        Param("filename", "write-path", "perflab-iozone.dat", "", "the file or device the jobs read and write"),
        Param("directory", "write-path", None, "", "the directory fio lays its files out in (instead of filename)"),
        Param("group_reporting", "bool", False, "", "one report per group of jobs"),
        Param("invalidate", "int", None, "", "1: drop the file's page cache before the run", bounds=(0, 1)),
        Param("ramp_time", "number", 0, "s", "seconds run before measuring", positive=True, allow_zero=True),
        Param("output_format", "word", "json", "", "json or json+", choices=("json", "json+")),
        Param("options", "options", None, "", "any other fio option -> value", programs=PROGRAM_OPTIONS),
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """One fio run with the four phases as stonewalled jobs on the same file."""
        argv = ["fio", f"--output-format={params.get('output_format', 'json')}"]
        argv += _job_options({k: v for k, v in params.items() if k != "rw"},
                             defaults={"ioengine": "psync", "bs": "4k", "size": "100M", "direct": 0,
                                       "filename": "perflab-iozone.dat"})
        for phase, rw in self.PHASES:
            argv += [f"--name={phase}", f"--rw={rw}"] + (["--stonewall"] if phase != "write" else [])
        return [Command("client", tuple(argv))]

    def job_dims(self, job: Mapping[str, Any]) -> dict[str, Any]:
        """The IOzone phase a job stands for."""
        return {"phase": job.get("jobname")}

    def group_dims(self, group: int, jobs: list[Mapping[str, Any]], single_group: bool) -> dict[str, Any]:
        """Each phase is its own group; name it."""
        return {"phase": jobs[0].get("jobname")} if jobs else {"group": group}


def _job_options(params: Mapping[str, Any], defaults: Mapping[str, Any]) -> list[str]:
    """fio command-line options from campaign parameters (defaults fill what is missing)."""
    merged = {**defaults, **{k: v for k, v in params.items() if v is not None}}
    argv: list[str] = []
    for key in ("filename", "directory", "rw", "bs", "iodepth", "numjobs", "rwmixread", "direct", "size",
                "ioengine", "invalidate", "ramp_time"):
        if key in merged and not (key == "filename" and "directory" in params):
            argv.append(f"--{key}={merged[key]}")
    if merged.get("runtime") is not None:
        argv += [f"--runtime={merged['runtime']}", "--time_based"]
    if merged.get("group_reporting"):
        argv.append("--group_reporting")
    argv += [f"--{key}={value}" for key, value in (merged.get("options") or {}).items()]
    return argv


def _int_option(options: Mapping[str, Any], key: str, source: str) -> int:
    value = number(options.get(key, 1), source=source, what=f"fio option {key}")
    return int(value) if value is not None else 1


def _active(job: Mapping[str, Any], direction: str) -> bool:
    part = job.get(direction)
    return isinstance(part, dict) and bool(part.get("total_ios") or part.get("io_bytes") or part.get("io_kbytes"))


def _direction(rows: Rows, job: Mapping[str, Any], direction: str, where: str, dims: Mapping[str, Any]) -> _Direction:
    """Rows for one job and direction, and the numbers the group summary needs."""
    part = job[direction]
    at = f"{where}.{direction}"
    dims = {**dims, "direction": direction}
    bandwidth = part["bw_bytes"] if "bw_bytes" in part else _kib_as_bytes(part, "bw", at, rows.source)
    io_bytes = part["io_bytes"] if "io_bytes" in part else _kib_as_bytes(part, "io_kbytes", at, rows.source)
    rows.add("iops", require(part, "iops", source=rows.source, where=at), "IOPS", f"{at}.iops", **dims)
    rows.add("bandwidth", bandwidth, "byte/s", f"{at}.bw_bytes", **dims)
    rows.add("io_bytes", io_bytes, "byte", f"{at}.io_bytes", **dims)
    rows.add("runtime", part.get("runtime"), "s", f"{at}.runtime (ms)", scale=1e-3, **dims)
    rows.add("total_ios", part.get("total_ios"), "count", f"{at}.total_ios", **dims)
    lat_mean = None
    for stat, field, scale in _latency_fields(part):
        block = part[field]
        for key in ("mean", "stddev", "min", "max"):
            rows.add(f"{stat}_{key}", block.get(key), "s", f"{at}.{field}.{key}", scale=scale, **dims)
        if stat == "lat":
            lat_mean = number(block.get("mean"), source=rows.source, what=f"{at}.{field}.mean")
            lat_mean = None if lat_mean is None else lat_mean * scale
    _percentiles(rows, part, at, **dims)
    return _Direction(iops=float(part["iops"]), bandwidth=float(bandwidth), io_bytes=float(io_bytes),
                      runtime=float(part.get("runtime", 0)) / 1000.0, total_ios=float(part.get("total_ios", 0)),
                      lat_mean=lat_mean)


def _kib_as_bytes(part: Mapping[str, Any], key: str, at: str, source: str) -> float:
    """Field ``key`` of ``part`` (KiB, fio 2) in bytes; a missing or null value is a parse error."""
    value = number(require(part, key, source=source, where=at), source=source, what=f"{at}.{key}")
    if value is None:
        raise ParseError(source, f"a number for {at}.{key}", "null")
    return value * 1024


def _latency_fields(part: Mapping[str, Any]) -> list[tuple[str, str, float]]:
    """(stat, field, scale to s) for the latency blocks present: fio 3 ``*_ns``, fio 2 ``*`` in us."""
    out = []
    for stat in ("lat", "clat", "slat"):
        if isinstance(part.get(f"{stat}_ns"), dict):
            out.append((stat, f"{stat}_ns", 1e-9))
        elif isinstance(part.get(stat), dict):
            out.append((stat, stat, 1e-6))
    return out


def _percentiles(rows: Rows, part: Mapping[str, Any], at: str, **dims: Any) -> None:
    for stat, field, scale in _latency_fields(part):
        for key, value in ((part[field].get("percentile") or {}).items()):
            percent = _PERCENT_KEYS.get(key)
            if percent is None:
                percent = number(key, source=rows.source, what=f"{at}.{field}.percentile key")
                if percent is not None and len(_PERCENT_KEYS) < 1000:
                    _PERCENT_KEYS[key] = percent
            rows.add(f"{stat}_percentile", value, "s", f"{at}.{field}.percentile[{key}]", scale=scale,
                     percentile=percent, **dims)


#: Percentile keys ("99.500000") already converted: every sample of a campaign repeats the same few.
_PERCENT_KEYS: dict[str, float] = {}


def _weighted_latency(parts: Any) -> float | None:
    """Mean latency over several jobs or directions, weighted by their I/O counts."""
    parts = [p for p in parts if p.lat_mean is not None and p.total_ios > 0]
    total = sum(p.total_ios for p in parts)
    return sum(p.lat_mean * p.total_ios for p in parts) / total if total else None
