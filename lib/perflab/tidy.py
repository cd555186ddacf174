"""Tidy tables: raw samples -> one row per sample and metric, typed, with units and lineage.

The boolean ``summary`` column tells a sample's summary values (what a user reports; rows
without extra dimensions, unless a parser says otherwise with a ``summary`` dimension)
from detail rows such as per-stream or per-interval values. The ``group`` column is the
sample's host group (an integer; missing for campaigns without groups).

The raw directory is verified against its manifest first; a sample whose output does not
parse is quarantined with the reason, never turned into a number. Outputs are written
next to each other in ``data/processed/``: ``<campaign>.parquet`` (typed), ``<campaign>.csv``
(for reviewers), ``<campaign>.quarantine.csv`` and ``<campaign>.lineage.json``.
"""

from __future__ import annotations

import fnmatch
import json
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd

from . import __version__, fingerprint, records, store, tools
from .tools.base import ParseError

#: Columns every tidy table starts with, in this order; factor and dimension columns follow.
BASE_COLUMNS = ["campaign", "run_id", "block", "position", "repetition", "warmup", "tool", "host",
                "group", "started_utc", "metric", "summary", "value", "unit"]


class TidyError(RuntimeError):
    """The raw data cannot be turned into a tidy table (altered, missing or empty)."""


def frame(raw_dir: str | Path, *, verify: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Parse every stored sample of a campaign; return (tidy rows, quarantined samples)."""
    raw_dir = Path(raw_dir)
    if not (raw_dir / "campaign.json").exists():
        raise TidyError(f"{raw_dir}: no campaign.json; is this a campaign's raw directory? "
                        "Run the experiment first (`perflab run CAMPAIGN.yaml`).")
    if verify:
        problems = store.verify(raw_dir)
        if problems:
            raise TidyError(f"{raw_dir}: raw data does not match {store.MANIFEST}:\n  " + "\n  ".join(problems[:20])
                            + "\nRestore the original files (raw data is never edited) before analysing.")
    campaign = records.read_campaign(raw_dir / "campaign.json")
    factors = list(campaign.spec["factors"])
    rows: list[dict[str, Any]] = []
    quarantine: list[dict[str, Any]] = []
    sample_dirs = sorted(p for p in (raw_dir / "samples").iterdir() if not p.name.startswith(".")) \
        if (raw_dir / "samples").is_dir() else []
    for sdir in sample_dirs:
        meta = records.read_sample(sdir / "meta.json")
        tool = tools.get(meta.tool)
        source = sdir.relative_to(raw_dir.parent).as_posix() + "/stdout"
        first = meta.commands[0] if meta.commands else {}
        common = {"campaign": meta.campaign, "run_id": meta.run_id, "block": meta.block,
                  "position": meta.position, "repetition": meta.repetition, "warmup": meta.warmup,
                  "tool": meta.tool, "host": first.get("host"), "group": meta.group,
                  "started_utc": first.get("started_utc"),
                  **{f: meta.cell.get(f) for f in factors}}
        try:
            measurements = tool.parse(_read(sdir / "stdout"), _read(sdir / "stderr"), source=source)
        except (ParseError, FileNotFoundError) as exc:
            quarantine.append({**common, "source": source, "reason": str(exc)})
            continue
        for m in measurements:
            summary = bool(m.dims.get("summary", not m.dims))
            rows.append({**common, **m.as_row(), "summary": summary, "parser_version": tool.parser_version,
                         "source": source})
    df = pd.DataFrame(rows)
    if df.empty:
        df = pd.DataFrame(columns=BASE_COLUMNS + factors)
    extra = [c for c in df.columns if c not in BASE_COLUMNS and c not in factors]
    df = df[BASE_COLUMNS[:10] + factors + BASE_COLUMNS[10:] + extra]
    df = df.astype({"block": "int64", "position": "int64", "repetition": "int64", "warmup": "bool", "summary": "bool",
                    "value": "float64", "group": "Int64"})
    df["started_utc"] = pd.to_datetime(df["started_utc"], utc=True)
    for col in ("campaign", "run_id", "tool", "host", "metric", "unit", "source"):
        if col in df:
            df[col] = df[col].astype("string")
    return df.sort_values(["block", "position", "metric"], kind="stable").reset_index(drop=True), pd.DataFrame(quarantine)


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
    _atomic(paths["parquet"], lambda p: df.to_parquet(p, index=False))
    _atomic(paths["csv"], lambda p: df.to_csv(p, index=False))
    _atomic(paths["quarantine"], lambda p: quarantine.to_csv(p, index=False))
    manifest = raw_dir / store.MANIFEST
    lineage = {"output": [p.name for k, p in paths.items() if k != "lineage"], "generator": "perflab.tidy.write",
               "perflab": __version__, "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "inputs": {"raw_dir": raw_dir.as_posix(), "manifest_sha256": store.sha256_file(manifest),
                          "samples": int(df["run_id"].nunique()) if len(df) else 0,
                          "quarantined": len(quarantine)},
               "parsers": {t: int(v) for t, v in df.groupby("tool")["parser_version"].first().items()} if len(df) else {},
               "planned": records.read_campaign(raw_dir / "campaign.json").planned,
               "host_fact_differences": [d["text"] for d in fact_differences(raw_dir)]}
    _atomic(paths["lineage"], lambda p: p.write_text(json.dumps(lineage, indent=1) + "\n"))
    return paths


def _atomic(path: Path, write_fn) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    write_fn(tmp)
    os.replace(tmp, path)


def load(processed: str | Path) -> pd.DataFrame:
    """Read a tidy table written by :func:`write` (Parquet keeps the types)."""
    return pd.read_parquet(processed)


def fact_differences(raw_dir: str | Path) -> list[dict[str, Any]]:
    """Host facts that changed during a campaign or differ between its hosts, from ``blocks/*/differences*.json``.

    Each item has ``kind`` (``changed``: before/after one block; ``between_blocks``: since
    the previous block; ``between_hosts``), ``block``, ``key``, ``hosts``, ``before``,
    ``after`` and ``text`` (a sentence naming the fact). Only the facts of
    :data:`perflab.fingerprint.MATCH_KEYS` count (kernel, CPU model, MTU, tool versions, ...).
    """
    found: dict[tuple, dict[str, Any]] = {}
    for path in sorted(Path(raw_dir).glob("blocks/*/differences*.json")):
        record = json.loads(path.read_text())
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


def check_comparable(raw_dir: str | Path, *, expected: tuple[str, ...] = (), refuse: bool = True) -> list[str]:
    """Refuse (or, with ``refuse=False``, return as warnings) host facts that changed during a campaign.

    A comparison of cells is only sound when they ran under the same host facts; a fact
    that changed between or within blocks is named in the error. ``expected`` lists fact
    patterns that change on purpose (e.g. ``net.*.mtu`` when MTU is a factor). Facts that
    differ between hosts (say client and server kernels) are always returned as warnings.
    """
    problems, warnings = [], []
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
