"""Change detection across two runs of a campaign (as asv compares two commits).

:func:`compare_runs` takes the tidy tables of an old and a new run and, per cell and
metric, gives the relative change of the mean (new against old) with its interval
(Welch's t and Fieller's interval, both Bonferroni-adjusted over the cells of a metric,
:mod:`perflab.stats.family`) and where it stands against the SESOI: ``exceeds`` (the whole
interval lies beyond ±SESOI), ``within`` (the whole interval lies inside it) or
``unclear``. :func:`host_changes` lists the host facts (:data:`perflab.fingerprint.MATCH_KEYS`)
that differ between the two runs' first fingerprints: two runs on different hosts measure
different machines, and the command line refuses them unless told.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import fingerprint
from .family import compare_family, family_rows
from .levels import select_rows

#: Where a tidy table's dimension columns begin and end (the factors sit between them).
_FIRST, _LAST = "started_utc", "metric"


def factors(df: pd.DataFrame) -> list[str]:
    """A tidy table's factor columns (between ``started_utc`` and ``metric``)."""
    cols = list(df.columns)
    if _FIRST not in cols or _LAST not in cols:
        return []
    return cols[cols.index(_FIRST) + 1:cols.index(_LAST)]


def _first_fingerprints(raw_dir: Path) -> dict[str, dict]:
    """Host -> the fingerprint taken before the run's first block."""
    blocks = sorted((p for p in (raw_dir / "blocks").glob("*") if p.name.lstrip("-").isdigit()), key=lambda p: int(p.name))
    if not blocks:
        return {}
    return {p.name[len("fingerprint-before-"):-len(".json")]: json.loads(p.read_text())
            for p in sorted(blocks[0].glob("fingerprint-before-*.json"))}


def host_changes(old_dir: str | Path, new_dir: str | Path) -> list[str]:
    """The matched host facts that differ between the first fingerprints of two runs, one sentence each."""
    old, new = _first_fingerprints(Path(old_dir)), _first_fingerprints(Path(new_dir))
    out = [f"host {h} is in only one of the runs" for h in sorted(old.keys() ^ new.keys())]
    for host in sorted(old.keys() & new.keys()):
        out += fingerprint.describe([d for d in fingerprint.diff(old[host], new[host])
                                     if any(fnmatch.fnmatchcase(d.key, p) for p in fingerprint.MATCH_KEYS)])
    return out


def compare_runs(old: pd.DataFrame, new: pd.DataFrame, metrics: Sequence[str], *,
                 sesoi: Mapping[str, float] | float = 0.05, level: float = 0.95,
                 select: Mapping[str, Mapping[str, object] | None] | None = None) -> pd.DataFrame:
    """Per metric and cell: n, means, relative change new/old − 1 with its adjusted interval, p, adjusted p,
    the SESOI and ``status`` (exceeds / within / unclear). ``select`` maps a metric to its row selection
    (as :func:`perflab.stats.levels.select_rows` takes it). Cells of one run only are left out."""
    keys = factors(new)
    rows: list[dict] = []
    pairs: list[tuple] = []
    for metric in metrics:
        bound = sesoi.get(metric, np.nan) if isinstance(sesoi, Mapping) else float(sesoi)
        where = (select or {}).get(metric)
        a = select_rows(old, metric, where, per_run="mean", source="old").data
        b = select_rows(new, metric, where, per_run="mean", source="new").data
        start = len(pairs)
        for cell, nb in (b.groupby(keys, sort=True) if keys else [((), b)]):
            cell = cell if isinstance(cell, tuple) else (cell,)
            na = a
            for k, v in zip(keys, cell):
                na = na[na[k].astype(str) == str(v)]
            if len(na) < 2 or len(nb) < 2:
                continue
            rows.append({"metric": metric, **dict(zip(keys, cell)), "n_old": len(na), "n_new": len(nb),
                         "mean_old": float(na["value"].mean()), "mean_new": float(nb["value"].mean()), "sesoi": bound})
            pairs.append((na["value"].to_numpy(float), nb["value"].to_numpy(float)))
        for row, r in zip(rows[start:], family_rows(compare_family(pairs[start:], level=level))):
            row.update(change=r["rel_diff"], ci_low=r["ci_low"], ci_high=r["ci_high"], p=r["p"],
                       p_adjusted=r["p_adjusted"], ci_level=r["ci_level"])
            s = row["sesoi"]
            row["status"] = ("exceeds" if r["ci_low"] > s or r["ci_high"] < -s else
                             "within" if -s <= r["ci_low"] and r["ci_high"] <= s else "unclear")
    return pd.DataFrame(rows)
