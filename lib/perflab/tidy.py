"""Tidy tables: raw samples -> one row per sample and metric, typed, with units and lineage.

The boolean ``summary`` column tells a sample's summary values (what a user reports; rows
without extra dimensions, unless a parser says otherwise with a ``summary`` dimension)
from detail rows such as per-stream or per-interval values. The ``group`` column is the
sample's host group (an integer; missing for campaigns without groups).

The raw directory is verified against its manifest first; a sample whose output does not
parse is quarantined with the reason, never turned into a number. Outputs are written
next to each other in ``data/processed/``: ``<campaign>.parquet`` (typed), ``<campaign>.csv``
(for reviewers, written by pyarrow: strings quoted, booleans ``true``/``false``, times in
UTC with ``Z``), ``<campaign>.quarantine.csv`` and ``<campaign>.lineage.json``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.csv
import pyarrow.parquet

from . import __version__, store, tools
from .tools.base import Measurement, ParseError

#: Rows per Arrow table while parsing (bounds the Python objects alive at once).
BATCH_ROWS = 65536
#: Columns every tidy table starts with, in this order; factor and dimension columns follow.
BASE_COLUMNS = ["campaign", "run_id", "block", "position", "repetition", "warmup", "tool", "host",
                "group", "started_utc", "metric", "summary", "value", "unit"]


class TidyError(RuntimeError):
    """The raw data cannot be turned into a tidy table (altered, missing or empty)."""


def frame(raw_dir: str | Path, *, verify: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Parse every stored sample of a campaign; return (tidy rows, quarantined samples).

    Rows are gathered column by column into Arrow tables of about :data:`BATCH_ROWS` rows,
    so memory grows with the compact Arrow columns rather than one Python dict per row.
    """
    raw_dir = Path(raw_dir)
    if not (raw_dir / "campaign.json").exists():
        raise TidyError(f"{raw_dir}: no campaign.json; is this a campaign's raw directory? "
                        "Run the experiment first (`perflab run CAMPAIGN.yaml`).")
    if verify:
        problems = store.verify(raw_dir)
        if problems:
            raise TidyError(f"{raw_dir}: raw data does not match {store.MANIFEST}:\n  " + "\n  ".join(problems[:20])
                            + "\nRestore the original files (raw data is never edited) before analysing.")
    campaign = json.loads((raw_dir / "campaign.json").read_text())
    factors = list(campaign["spec"]["factors"])
    batch = _Batch()
    tables: list[pa.Table] = []
    quarantine: list[dict[str, Any]] = []
    sample_dirs = sorted(p for p in (raw_dir / "samples").iterdir() if not p.name.startswith(".")) \
        if (raw_dir / "samples").is_dir() else []
    for sdir in sample_dirs:
        meta = json.loads((sdir / "meta.json").read_text())
        tool = tools.get(meta["tool"])
        source = f"{raw_dir.name}/samples/{sdir.name}/stdout"
        first = meta["commands"][0] if meta["commands"] else {}
        common = {"campaign": meta["campaign"], "run_id": meta["run_id"], "block": meta["block"],
                  "position": meta["position"], "repetition": meta["repetition"], "warmup": meta["warmup"],
                  "tool": meta["tool"], "host": first.get("host"), "group": meta.get("group"),
                  "started_utc": first.get("started_utc"),
                  **{f: meta["cell"].get(f) for f in factors}}
        try:
            measurements = tool.parse(_read(sdir / "stdout"), _read(sdir / "stderr"), source=source)
        except (ParseError, FileNotFoundError) as exc:
            quarantine.append({**common, "source": source, "reason": str(exc)})
            continue
        batch.add(common, measurements, parser_version=tool.parser_version, source=source)
        if batch.rows >= BATCH_ROWS:
            tables.append(batch.table())
            batch = _Batch()
    tables.append(batch.table())
    table = pa.concat_tables(tables, promote_options="permissive")
    order = BASE_COLUMNS[:10] + factors + BASE_COLUMNS[10:]
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
    for col in ("campaign", "run_id", "tool", "host", "metric", "unit", "source"):
        if col in df:
            df[col] = df[col].astype("string")
    return df, pd.DataFrame(quarantine)


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

    def add(self, common: dict[str, Any], measurements: list[Measurement], *, parser_version: int, source: str) -> None:
        """Append one sample's ``measurements``; ``common`` holds the values its rows share.

        A row is ``{**common, **measurement.as_row(), "summary", "parser_version", "source"}``
        (a dim may override a common value); columns appear in the order keys first appear.
        """
        n = len(measurements)
        if not n:
            return
        dims = [m.dims for m in measurements]
        dim_keys = dict.fromkeys(key for d in dims for key in d)
        own = {"metric": [m.metric for m in measurements], "value": [m.value for m in measurements],
               "unit": [m.unit for m in measurements]}
        last = {"summary": [bool(d.get("summary", not d)) for d in dims],
                "parser_version": [parser_version] * n, "source": [source] * n}
        for key in dict.fromkeys([*common, *own, *dims[0], *last, *dim_keys]):
            if key in last:
                values = last[key]
            elif key in dim_keys:
                values = ([d.get(key, v) for d, v in zip(dims, own[key])] if key in own
                          else [d.get(key, common.get(key)) for d in dims])
            else:
                values = own[key] if key in own else [common[key]] * n
            self._extend(key, values)
        self.rows += n
        for column in self.columns.values():
            if len(column) < self.rows:
                column.extend([None] * (self.rows - len(column)))

    def table(self) -> pa.Table:
        """The rows so far as an Arrow table (column types inferred; all-missing columns are null)."""
        return pa.table({name: pa.array(values) for name, values in self.columns.items()})


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def write(raw_dir: str | Path, out_dir: str | Path) -> dict[str, Path]:
    """Write the tidy table (Parquet + CSV), the quarantine list and a lineage record."""
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    df, quarantine = frame(raw_dir)
    name = raw_dir.name
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"parquet": out_dir / f"{name}.parquet", "csv": out_dir / f"{name}.csv",
             "quarantine": out_dir / f"{name}.quarantine.csv", "lineage": out_dir / f"{name}.lineage.json"}
    table = pa.Table.from_pandas(df, preserve_index=False)  # what DataFrame.to_parquet writes
    _atomic(paths["parquet"], lambda p: pyarrow.parquet.write_table(table, p))
    _atomic(paths["csv"], lambda p: pyarrow.csv.write_csv(table, p))
    _atomic(paths["quarantine"], lambda p: quarantine.to_csv(p, index=False))
    manifest = raw_dir / store.MANIFEST
    lineage = {"output": [p.name for k, p in paths.items() if k != "lineage"], "generator": "perflab.tidy.write",
               "perflab": __version__, "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "inputs": {"raw_dir": raw_dir.as_posix(), "manifest_sha256": store.sha256_file(manifest),
                          "samples": int(df["run_id"].nunique()) if len(df) else 0,
                          "quarantined": len(quarantine)},
               "parsers": {t: int(v) for t, v in df.groupby("tool")["parser_version"].first().items()} if len(df) else {}}
    _atomic(paths["lineage"], lambda p: p.write_text(json.dumps(lineage, indent=1) + "\n"))
    return paths


def _atomic(path: Path, write_fn) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    write_fn(tmp)
    os.replace(tmp, path)


def load(processed: str | Path) -> pd.DataFrame:
    """Read a tidy table written by :func:`write` (Parquet keeps the types)."""
    return pd.read_parquet(processed)
