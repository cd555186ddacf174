"""Tidy tables: raw samples -> one row per sample and metric, typed, with units and lineage.

The boolean ``summary`` column tells a sample's summary values (what a user reports; rows
without extra dimensions, unless a parser says otherwise with a ``summary`` dimension)
from detail rows such as per-stream or per-interval values. The ``group`` column is the
sample's host group (an integer; missing for campaigns without groups).

Samples whose ``meta.json`` records the machine's contention (format 4, see
:mod:`perflab.hosts.contention`) give every row the columns of :data:`CONTENTION_COLUMNS`:
``contended`` (a nullable boolean: null when the campaign stated no quiet bounds), judged for
every record format the same way, by :func:`perflab.hosts.contention.classify` (steal, or CPU outside
the lab that is not its kernel work, beyond the campaign's bounds), and
``contention_<value>`` (CPUs used outside the lab, by the kernel's threads there (null before
contention format 2), the lab's kernel work and the CPU outside apart from it (null for format
1), pressure shares, steal, load); a campaign whose samples have no such record has none of
these columns.

The raw directory is verified against its manifest first; a sample whose output does not
parse is quarantined with the reason, never turned into a number. Outputs are written
next to each other in ``data/processed/``: ``<campaign>.parquet`` (typed), on request
``<campaign>.csv`` (for reviewers, written by pyarrow: strings quoted, booleans ``true``/``false``,
times in UTC with ``Z``; the pipeline does not ask: Parquet is the shipped format), ``<campaign>.quarantine.csv`` and
``<campaign>.lineage.json``. Each raw file is read once: the bytes parsed are the bytes hashed
for the manifest check, and nothing is returned unless every file matches. A campaign of
:data:`PARALLEL_SAMPLES` samples or more is parsed on every CPU, each worker process a contiguous
part of the samples, into the same table as one process would make (a million rows: 12 s on two
CPUs against 21 s on one).
"""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import json
import multiprocessing
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import pyarrow as pa
import pyarrow.csv
import pyarrow.ipc
import pyarrow.parquet

from . import __version__, store, tools
from .hosts import contention, fingerprint
from .formats import fingerprints, lineage as lineage_format, records, tables
from .campaign import from_doc
from .errors import UserError
from .files import atomic_write
from .tools import procfs
from .tools.base import Measurement, ParseError

#: Rows per Arrow table while parsing (bounds the Python objects alive at once).
BATCH_ROWS = 65536
#: Samples from which a campaign is parsed on several CPUs (below it, a worker's start costs more than it saves:
#: a fresh process takes about a second to import what parsing needs, where a sample takes about a millisecond).
PARALLEL_SAMPLES = 4000
#: At most this many processes parse one campaign.
MAX_WORKERS = 4
#: Columns every tidy table starts with, in this order; factor and dimension columns follow.
BASE_COLUMNS = ["campaign", "run_id", "block", "position", "repetition", "warmup", "tool", "host",
                "group", "started_utc", "metric", "summary", "value", "unit"]


#: The contention record's values each row carries as ``contention_<name>`` columns (with ``contended``).
CONTENTION_COLUMNS = ("other_cpus", "kernel_cpus", "own_cpus", "lab_cpus", "busy_cpus", "cpu_pressure",
                      "io_pressure", "memory_pressure", "steal", "load1", "outside_cpus", "lab_kernel_cpus")


def contention_columns(record: dict[str, Any] | None) -> dict[str, Any]:
    """The columns a sample's contention record gives its rows (none for a sample without a record)."""
    if record is None:
        return {}
    judged = {**record, **contention.classify(record)}
    return {"contended": judged["contended"], **{f"contention_{k}": judged.get(k) for k in CONTENTION_COLUMNS}}


class TidyError(UserError, RuntimeError):
    """The raw data cannot be turned into a tidy table (altered, missing or empty)."""


def frame(raw_dir: str | Path, *, verify: bool = True, workers: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Parse every stored sample of a campaign; return (tidy rows, quarantined samples).

    Rows are gathered column by column into Arrow tables of about :data:`BATCH_ROWS` rows,
    so memory grows with the compact Arrow columns rather than one Python dict per row.
    ``workers``: processes that parse (default: one per CPU from :data:`PARALLEL_SAMPLES` samples on, else one).
    """
    raw_dir = Path(raw_dir)
    if not (raw_dir / "campaign.json").exists():
        raise TidyError(f"{raw_dir}: no campaign.json; is this a campaign's raw directory? "
                        "Run the experiment first (`perflab run CAMPAIGN.yaml`).")
    reader = RawReader(raw_dir)
    try:
        df, quarantine = _parse(raw_dir, reader, workers)
    except Exception:
        if verify:  # a damaged raw file is named as such, not by the error it caused
            _verified(raw_dir, reader)
        raise
    if verify:  # after parsing, from the same bytes: nothing is returned unless every file matched
        _verified(raw_dir, reader)
    return df, quarantine


def _verified(raw_dir: Path, reader: "RawReader") -> None:
    """Raise :class:`TidyError` unless the campaign matches its manifest (with the digests and schedule ``reader`` took)."""
    problems = store.verify(raw_dir, hashed=reader.hashed, schedule=reader.schedule)
    if problems:
        raise TidyError(f"{raw_dir}: raw data does not match {store.MANIFEST}:\n  " + "\n  ".join(problems[:20])
                        + "\nRestore the original files (raw data is never edited) before analysing.")


class RawReader:
    """Reads a campaign's raw files once each: the bytes a parser gets are the bytes hashed for the manifest check."""

    def __init__(self, raw_dir: Path) -> None:
        self.raw_dir = raw_dir
        self._prefix = f"{raw_dir}/"  # paths inside the campaign start with it (string work: a million-row tidy)
        #: Manifest path (relative to the campaign) -> SHA-256 of the bytes read.
        self.hashed: dict[str, str] = {}
        #: The campaign record's schedule, once read (so the manifest check does not read it again).
        self.schedule: list[str] | None = None

    def bytes(self, path: Path) -> bytes:
        """The file at ``path`` (inside the campaign) as bytes; raises ``FileNotFoundError`` when absent."""
        name = os.fspath(path)
        with open(name, "rb", buffering=0) as fh:
            data = fh.readall()
        relative = name[len(self._prefix):] if name.startswith(self._prefix) else path.relative_to(self.raw_dir).as_posix()
        self.hashed[relative] = hashlib.sha256(data).hexdigest()
        return data

    def text(self, path: Path) -> str:
        """The file at ``path`` (inside the campaign) as text (gunzipped when it ends in ``.gz``)."""
        return _decoded(path, self.bytes(path))


def _parse(raw_dir: Path, reader: RawReader, workers: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tidy rows and quarantined samples of the campaign at ``raw_dir``, every file read through ``reader``.

    A campaign of at least :data:`PARALLEL_SAMPLES` samples is parsed in ``workers`` contiguous parts (default:
    one per CPU, at most :data:`MAX_WORKERS`), all but the last in fresh processes (:func:`_parse_part`), the last
    here meanwhile; the parts' rows are joined in sample order, as one process would have made them.
    """
    campaign = records.read_campaign(raw_dir / "campaign.json", reader.text(raw_dir / "campaign.json"))
    reader.schedule = campaign.schedule
    factors = list(campaign.spec["factors"])
    names = sorted(p.name for p in (raw_dir / "samples").iterdir() if not p.name.startswith(".")) \
        if (raw_dir / "samples").is_dir() else []
    count = min(workers or os.cpu_count() or 1, MAX_WORKERS)
    if workers is None and len(names) < PARALLEL_SAMPLES:
        count = 1
    parts = [names[len(names) * i // count:len(names) * (i + 1) // count] for i in range(count)]
    phases = bool(campaign.spec.get("phases"))
    if count == 1:
        return _frame(*_samples(raw_dir, reader, factors, names), factors, phases)
    tables: list[pa.Table] = []
    quarantine: list[dict[str, Any]] = []
    # the workers' rows come back as Arrow files, mapped here rather than copied through a pipe
    with tempfile.TemporaryDirectory(prefix="perflab-tidy-") as scratch:
        with ProcessPoolExecutor(max_workers=count - 1, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(_parse_part, str(raw_dir), factors, part, f"{scratch}/{i}.arrow")
                       for i, part in enumerate(parts[:-1])]
            last = _samples(raw_dir, reader, factors, parts[-1])
            for future, part in zip(futures, parts):
                try:
                    rows_file, part_quarantine, hashed = future.result()
                except Exception:  # parsed again here, so that the error is raised as itself
                    part_tables, part_quarantine = _samples(raw_dir, reader, factors, part)
                else:
                    part_tables = [pa.ipc.open_file(pa.memory_map(rows_file)).read_all()]
                    reader.hashed.update(hashed)
                tables += part_tables
                quarantine += part_quarantine
        # the workers have ended (their memory is back) before the table is sorted and converted
        return _frame(tables + last[0], quarantine + last[1], factors, phases)


def _parse_part(raw_dir: str, factors: list[str], names: list[str],
                rows_file: str) -> tuple[str, list[dict[str, Any]], dict[str, str]]:
    """One part of a campaign parsed in a worker process: (``rows_file``, an Arrow file of its rows; its quarantined
    samples; the digests of the files it read)."""
    reader = RawReader(Path(raw_dir))
    tables, quarantine = _samples(Path(raw_dir), reader, factors, names)
    table = pa.concat_tables(tables, promote_options="permissive")
    with pa.OSFile(rows_file, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return rows_file, quarantine, reader.hashed


def _samples(raw_dir: Path, reader: RawReader, factors: list[str],
             names: list[str]) -> tuple[list[pa.Table], list[dict[str, Any]]]:
    """The rows (Arrow tables of about :data:`BATCH_ROWS` rows) and quarantined samples of the samples ``names``."""
    batch = _Batch()
    tables: list[pa.Table] = []
    quarantine: list[dict[str, Any]] = []
    for name in names:
        sdir = raw_dir / "samples" / name
        meta = records.read_sample(sdir / "meta.json", reader.text(sdir / "meta.json"))
        tool = tools.get(meta.tool)
        source = f"{raw_dir.name}/samples/{sdir.name}/stdout"
        first = meta.commands[0] if meta.commands else {}
        common = {"campaign": meta.campaign, "run_id": meta.run_id, "block": meta.block,
                  "position": meta.position, "repetition": meta.repetition, "warmup": meta.warmup,
                  "tool": meta.tool, "host": first.get("host"), "group": meta.group,
                  "started_utc": first.get("started_utc"),
                  **{f: meta.cell.get(f) for f in factors}, **contention_columns(meta.contention)}
        try:
            parts = benchmark_rows(tool, meta, sdir, f"{raw_dir.name}/samples/{sdir.name}", reader.text)
        except (ParseError, FileNotFoundError) as exc:
            quarantine.append({**common, "source": getattr(exc, "source", None) or source, "reason": str(exc)})
            continue
        for own, measurements, part_source in parts:
            batch.add({**common, **own}, measurements, parser_version=tool.parser_version, source=part_source)
        # the sample's operations: every host's and phase's (sums over hosts are not counted again)
        counts = [n for own, measurements, _ in parts if own["host"] != "all"
                  if (n := tool.operations(measurements)) is not None]
        monitor_rows(batch, sdir, raw_dir.parent, common, quarantine, operations=sum(counts) if counts else None,
                     read=reader.text, read_bytes=reader.bytes)
        if batch.rows >= BATCH_ROWS:
            tables.append(batch.table())
            batch = _Batch()
    tables.append(batch.table())
    return tables, quarantine


def _frame(tables: list[pa.Table], quarantine: list[dict[str, Any]], factors: list[str],
           phases: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The typed tidy frame of a campaign's rows in column order, and its quarantined samples as a frame."""
    table = pa.concat_tables(tables, promote_options="permissive")
    order = BASE_COLUMNS[:10] + factors + (["phase"] if phases else []) + BASE_COLUMNS[10:]
    if table.num_rows:
        order += [c for c in table.column_names if c not in order]
        table = table.sort_by([("block", "ascending"), ("position", "ascending"), ("metric", "ascending")])
        # self_destruct frees each Arrow column once converted: the peak holds one copy, not two.
        df = table.select(order).to_pandas(self_destruct=True, split_blocks=True)
    else:
        df = pd.DataFrame(columns=order)
    df = df.astype({"block": "int64", "position": "int64", "repetition": "int64", "warmup": "bool", "summary": "bool",
                    "value": "float64", "group": "Int64"})
    df["started_utc"] = pd.to_datetime(df["started_utc"], utc=True)
    if "contended" in df:
        df = df.astype({"contended": "boolean", **{c: "float64" for c in df if c.startswith("contention_")}})
    for col in ("campaign", "run_id", "tool", "host", "metric", "unit", "source"):
        if col in df:
            df[col] = df[col].astype("string")
    return df, pd.DataFrame(quarantine)


#: Dimensions that identify a value within one host's run (a stream, a job, an interval): never summed over hosts.
PER_HOST_DIMS = frozenset({"stream", "job", "job_name", "interval_start", "interval_end", "timestamp", "percentile"})


def benchmark_rows(tool: tools.Tool, meta: records.SampleMeta, sample_dir: Path, source: str,
                   read: Callable[[Path], str] | None = None) -> list[tuple[dict[str, Any], list[Measurement], str]]:
    """A sample's benchmark rows as (values they share, measurements, source file) parts.

    One part per parsed output: the first measured command's role on every host (column
    ``host``) and in every phase (column ``phase``, campaigns with phases only). When several
    hosts ran it at once, one more part per phase holds the sum over hosts (host ``all``) of
    each of the tool's additive metrics (:attr:`Tool.additive`) that every host reported with
    the same dimensions, per-host dimensions (:data:`PER_HOST_DIMS`) excepted. Raises
    :class:`ParseError` (or ``FileNotFoundError``) when one output does not parse. The source of a sum
    lists the files it adds up, separated by commas. ``read`` reads an output file (default: as text).
    """
    read = read or _read
    parts: list[tuple[dict[str, Any], list[Measurement], str]] = []
    by_phase: dict[Any, list[tuple[dict[str, Any], list[Measurement], str]]] = {}
    for command in meta.outputs():
        where = f"{source}/{command['stdout']}"
        found = tool.parse(read(sample_dir / command["stdout"]), read(sample_dir / command["stderr"]), source=where)
        own = {"host": command.get("host"), "started_utc": command.get("started_utc")}
        if "phase" in command:
            own["phase"] = command["phase"]
        parts.append((own, found, where))
        by_phase.setdefault(command.get("phase"), []).append((own, found, where))
    for phase, outputs in by_phase.items():
        if len(outputs) < 2:
            continue
        totals: dict[tuple, list[Measurement]] = {}
        for _, found, _ in outputs:
            for m in found:
                if m.metric in tool.additive and not PER_HOST_DIMS & set(m.dims):
                    totals.setdefault((m.metric, tuple(sorted(m.dims.items(), key=str))), []).append(m)
        summed = [Measurement(ms[0].metric, _sum_or_none([m.value for m in ms]), ms[0].unit, ms[0].dims)
                  for ms in totals.values() if len(ms) == len(outputs)]
        own = {"host": "all", "started_utc": min(o["started_utc"] for o, _, _ in outputs)}
        if phase is not None:
            own["phase"] = phase
        parts.append((own, summed, ",".join(where for _, _, where in outputs)))
    return parts


class _Batch:
    """Tidy rows of consecutive samples, held column by column until turned into an Arrow table."""

    def __init__(self) -> None:
        self.rows = 0
        self.columns: dict[str, list[Any]] = {}

    def _extend(self, name: str, values: list[Any]) -> None:
        column = self.columns.get(name)
        if column is None:
            column = self.columns[name] = [None] * self.rows
        column.extend(values)

    def add(self, common: dict[str, Any], measurements: list[Measurement], *, parser_version: int, source: str,
            summary: bool | None = None) -> None:
        """Append one sample's ``measurements``; ``common`` holds the values its rows share.

        A row is ``{**common, **measurement.as_row(), "summary", "parser_version", "source"}``
        (a dim may override a common value); columns appear in the order keys first appear.
        ``summary`` forces the summary flag (default: a row without dimensions, or its
        ``summary`` dimension).
        """
        n = len(measurements)
        if not n:
            return
        dims = [m.dims for m in measurements]
        dim_keys = dict.fromkeys(key for d in dims for key in d)
        own: dict[str, list[Any]] = {"metric": [m.metric for m in measurements],
                                     "value": [m.value for m in measurements], "unit": [m.unit for m in measurements]}
        last: dict[str, list[Any]] = {
            "summary": [bool(d.get("summary", not d)) if summary is None else summary for d in dims],
            "parser_version": [parser_version] * n, "source": [source] * n}
        for key in dict.fromkeys([*common, *own, *dims[0], *last, *dim_keys]):
            if key in last:
                values = last[key]
            elif key in own:
                values = [d.get(key, v) for d, v in zip(dims, own[key])] if key in dim_keys else own[key]
            elif key in dim_keys:
                default = common.get(key)
                values = [d.get(key, default) for d in dims]
            else:
                values = [common[key]] * n
            self._extend(key, values)
        self.rows += n
        for column in self.columns.values():
            if len(column) < self.rows:
                column.extend([None] * (self.rows - len(column)))

    def table(self) -> pa.Table:
        """The rows so far as an Arrow table (column types inferred; all-missing columns are null)."""
        return pa.table({name: pa.array(values) for name, values in self.columns.items()})


def _sum_or_none(values: list[float | None]) -> float | None:
    """The sum of ``values``, or None (missing) when one of them is."""
    known = [v for v in values if v is not None]
    return sum(known) if len(known) == len(values) else None


def monitor_rows(batch: _Batch, sample_dir: Path, base: Path, common: dict[str, Any],
                 quarantine: list[dict[str, Any]], *, operations: float | None = None,
                 read: Callable[[Path], str] | None = None, read_bytes: Callable[[Path], bytes] | None = None) -> None:
    """Add a sample's monitor rows to ``batch``: per host, sysstat's means, /proc and cgroup deltas.

    They carry the host monitored in ``host``, the monitor's parser in ``tool`` (``sadf``,
    ``procstat``, ``cgroup``) and are never summary rows, so an analysis of the benchmark's
    metrics never picks them up by accident. A monitor file (or a host's archive) that does not
    parse is quarantined. With the benchmark's ``operations`` count (see
    :meth:`perflab.tools.base.Tool.operations`), each host also gets its costs per
    operation: ``cpu_seconds_per_op`` (tool ``cgroup``: the host's own CPU time) and
    ``cpu_time_per_op`` and ``bytes_per_op`` (tool ``procstat``, see
    :func:`perflab.tools.procfs.per_operation`; its CPU time is the kernel's, i.e. the
    whole machine's on a lab host). ``read`` reads a monitor file as text and ``read_bytes`` a
    host's archive (defaults: from disk). The sources of rows from an archive are
    ``<archive>:<member>``.
    """
    read = read or _read
    read_bytes = read_bytes or Path.read_bytes
    mdir = sample_dir / "monitors"
    for entry in sorted(mdir.iterdir()) if mdir.is_dir() else []:
        members: _MonitorDir | _MonitorArchive
        if entry.is_dir():
            host, members = entry.name, _MonitorDir(entry, base, read)
        elif entry.name.endswith(store.MONITOR_ARCHIVE):
            host = entry.name[: -len(store.MONITOR_ARCHIVE)]
            where = entry.relative_to(base).as_posix()
            try:
                members = _MonitorArchive(where, store.unpack_monitors(read_bytes(entry), where))
            except ValueError as exc:
                quarantine.append({**common, "host": host, "source": where, "reason": str(exc)})
                continue
        else:
            continue
        for name, files in MONITOR_FILES.items():
            if not all(members.has(f) for f in files):
                continue
            source = members.source(files[0])
            parser = tools.get(name)
            try:
                text = "".join(members.text(f) for f in files)
                if name == "sadf" and _no_intervals(text):
                    continue
                found = parser.parse(text, source=source)
            except ParseError as exc:
                quarantine.append({**common, "host": host, "source": source, "reason": str(exc)})
                continue
            kept = [m for m in found if "timestamp" not in m.dims and "interval_start" not in m.dims]
            if operations:
                kept += per_operation(name, kept, operations)
            batch.add({**common, "tool": name, "host": host}, kept, parser_version=parser.parser_version,
                      source=source, summary=False)


#: The monitor parsers and the files each reads (in order), by their names as the monitors write them.
MONITOR_FILES = {"sadf": ("sar.json",), "procstat": ("proc-before.txt", "proc-after.txt"),
                 "cgroup": ("cgroup-before.txt", "cgroup-after.txt")}


class _MonitorDir:
    """A host's monitor files as separate files (campaigns measured before the archives), some gzipped."""

    def __init__(self, folder: Path, base: Path, read: Callable[[Path], str]) -> None:
        self.folder, self.base, self.read = folder, base, read

    def has(self, name: str) -> bool:
        return _stored(self.folder, name).is_file()

    def source(self, name: str) -> str:
        return _stored(self.folder, name).relative_to(self.base).as_posix()

    def text(self, name: str) -> str:
        return self.read(_stored(self.folder, name))


class _MonitorArchive:
    """A host's monitor files as the members of its archive."""

    def __init__(self, where: str, members: dict[str, str]) -> None:
        self.where, self.members = where, members

    def has(self, name: str) -> bool:
        return name in self.members

    def source(self, name: str) -> str:
        return f"{self.where}:{name}"

    def text(self, name: str) -> str:
        return self.members[name]


def per_operation(monitor: str, rows: list[Measurement], operations: float) -> list[Measurement]:
    """A host's costs per benchmark operation from its ``cgroup`` or ``procstat`` totals (else none)."""
    if monitor == "cgroup":
        cpu = next((m.value for m in rows if m.metric == "cpu_seconds" and m.value is not None), None)
        return [] if cpu is None else [Measurement("cpu_seconds_per_op", cpu / operations, "s/op")]
    if monitor == "procstat":
        return procfs.per_operation(rows, operations)
    return []


def _no_intervals(sar_json: str) -> bool:
    """True for a sysstat recording (``sar.json``'s text) shorter than its one-second interval: it holds no
    statistics (or only the empty objects sadf ends a cut with)."""
    try:
        hosts = json.loads(sar_json)["sysstat"]["hosts"]
    except (ValueError, KeyError, TypeError):
        return False  # not what sadf writes: the parser says what is wrong
    return all(isinstance(h, dict) and not any(h.get("statistics") or []) for h in hosts) \
        if isinstance(hosts, list) else False


def _stored(host_dir: Path, name: str) -> Path:
    """A monitor file kept as a separate file: ``<name>.gz`` when it was gzipped on its own (the first
    campaigns measured for the record), else ``<name>`` (campaigns measured before them)."""
    packed = host_dir / f"{name}.gz"
    return packed if packed.is_file() else host_dir / name


def _decoded(path: Path, data: bytes) -> str:
    """A raw file's bytes as text, gunzipped first when its name ends in ``.gz``."""
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise ParseError(str(path), "a complete gzip file",
                             f"{exc}: the raw file is damaged; check it with `perflab verify`") from exc
    return data.decode("utf-8", errors="replace")


def _read(path: Path) -> str:
    return _decoded(path, path.read_bytes())


def write(raw_dir: str | Path, out_dir: str | Path, *, csv: bool = False, workers: int | None = None) -> dict[str, Path]:
    """Write the tidy table (Parquet; with ``csv``, its CSV mirror too), the quarantine list and a lineage record
    (``workers`` as for :func:`frame`)."""
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    df, quarantine = frame(raw_dir, workers=workers)
    name = raw_dir.name
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"parquet": out_dir / f"{name}.parquet", **({"csv": out_dir / f"{name}.csv"} if csv else {}),
             "quarantine": out_dir / f"{name}.quarantine.csv", "lineage": out_dir / f"{name}.lineage.json"}
    table = pa.Table.from_pandas(df, preserve_index=False)  # what DataFrame.to_parquet writes
    atomic_write(paths["parquet"], lambda p: pyarrow.parquet.write_table(table, p))
    if csv:
        atomic_write(paths["csv"], csv_bytes(table))
    atomic_write(paths["quarantine"], lambda p: quarantine.to_csv(p, index=False))
    manifest = raw_dir / store.MANIFEST
    lineage = {"output": [p.name for k, p in paths.items() if k != "lineage"], "generator": "perflab.tidy.write",
               "perflab": __version__, "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "inputs": {"raw_dir": raw_dir.as_posix(), "manifest_sha256": store.sha256_file(manifest),
                          "samples": int(df["run_id"].nunique()) if len(df) else 0,
                          "quarantined": len(quarantine)},
               "parsers": {t: int(v) for t, v in df.groupby("tool")["parser_version"].first().items()} if len(df) else {},
               "planned": _planned(records.read_campaign(raw_dir / "campaign.json")),
               "host_fact_differences": [d["text"] for d in fact_differences(raw_dir)]}
    lineage_format.write(paths["lineage"], lineage)
    return paths


def _planned(record: records.CampaignRecord) -> dict[str, Any]:
    """What the campaign recorded in ``record`` planned (:meth:`perflab.campaign.Campaign.planned`)."""
    return from_doc(record.spec, record.source).planned()


def csv_bytes(table: pd.DataFrame | pa.Table) -> bytes:
    """The CSV mirror of a tidy table, byte for byte as :func:`write` writes it (pyarrow's CSV writer)."""
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    sink = pa.BufferOutputStream()
    pyarrow.csv.write_csv(table, sink)
    return sink.getvalue().to_pybytes()


def load(processed: str | Path) -> pd.DataFrame:
    """Read a tidy table written by :func:`write` (Parquet keeps the types).

    A missing table raises :class:`TidyError` saying what makes it (a template opened by hand
    in a fresh clone has no tidy table yet).
    """
    path = Path(processed)
    if not path.exists():
        raw = Path("data/raw") / path.stem
        todo = (f"make it with `perflab tidy {raw} --out {path.parent}`" if (raw / "campaign.json").exists() else
                f"campaign {path.stem} has no raw data in {raw}/ yet: run the pipeline (`make reproduce`) or "
                f"`perflab run` on its campaign file, then `perflab tidy {raw} --out {path.parent}`")
        raise TidyError(f"{path}: no tidy table yet; {todo}")
    return tables.load_parquet(path)


def fact_differences(raw_dir: str | Path) -> list[dict[str, Any]]:
    """Host facts that changed during a campaign or differ between its hosts, from ``blocks/*/differences*.json``.

    Each item has ``kind`` (``changed``: before/after one block; ``between_blocks``: since
    the previous block; ``between_hosts``), ``block``, ``key``, ``hosts``, ``before``,
    ``after`` and ``text`` (a sentence naming the fact). Only the facts of
    :data:`perflab.hosts.fingerprint.MATCH_KEYS` count (kernel, CPU model, MTU, tool versions, ...).
    """
    found: dict[tuple, dict[str, Any]] = {}
    for path in sorted(Path(raw_dir).glob("blocks/*/differences*.json")):
        record = fingerprints.read_differences(path)
        for kind, name in (("changed", "changed"), ("between_blocks", "since_previous_block"),
                           ("between_hosts", "between_hosts_before"), ("between_hosts", "between_hosts_after")):
            for d in record.get(name, []):
                if not any(fnmatch.fnmatchcase(d["key"], p) for p in fingerprint.MATCH_KEYS):
                    continue
                hosts = tuple(d["hosts"])
                diff = fingerprint.Difference(d["key"], d["before"], d["after"], hosts)
                key = (kind, d["key"], hosts, str(d["before"]), str(d["after"]))
                found.setdefault(key, {"kind": kind, "block": record["block"], "key": d["key"], "hosts": list(hosts),
                                       "before": d["before"], "after": d["after"], "text": str(diff)})
    return list(found.values())


def _emulation(raw_dir: str | Path) -> dict[bool, list[str]]:
    """Sample ids by whether any of their measured commands ran on an emulated host."""
    out: dict[bool, list[str]] = {}
    for path in sorted(Path(raw_dir).glob("samples/*/meta.json")):
        meta = records.read_sample(path)
        out.setdefault(any(c.get("emulated") for c in meta.commands), []).append(meta.run_id)
    return out


def check_comparable(raw_dir: str | Path, *, expected: tuple[str, ...] = (), refuse: bool = True) -> list[str]:
    """Refuse (or, with ``refuse=False``, return as warnings) host facts that changed during a campaign.

    A comparison of cells is only sound when they ran under the same host facts; a fact
    that changed between or within blocks is named in the error. ``expected`` lists fact
    patterns that change on purpose (e.g. ``net.*.mtu`` when MTU is a factor; ``emulated`` to
    compare samples of emulated guests with native ones). Facts that differ between hosts
    (say client and server kernels) are always returned as warnings.
    """
    problems, warnings = [], []
    if "emulated" not in expected:
        kinds = _emulation(raw_dir)
        if len(kinds) > 1:
            problems.append(f"samples ran on emulated (TCG) hosts ({', '.join(kinds[True][:3])}) and on native ones "
                            f"({', '.join(kinds[False][:3])}): an emulated guest measures the emulator, not the "
                            "platform (expected=('emulated',) to compare them anyway)")
    for d in fact_differences(raw_dir):
        if any(fnmatch.fnmatchcase(d["key"], p) for p in expected):
            continue
        if d["kind"] == "between_hosts":
            warnings.append(d["text"])
        else:
            where = f"during block {d['block']}" if d["kind"] == "changed" else f"before block {d['block']}"
            problems.append(f"{d['text']} ({where})")
    if problems and refuse:
        raise TidyError(f"{raw_dir}: host facts changed during the campaign, so its cells did not run under the same "
                        f"conditions: {'; '.join(problems[:5])}. Rerun the campaign on stable hosts, or pass the "
                        "fact as expected (e.g. expected=('net.*.mtu',) when MTU is a factor).")
    return problems + warnings
