"""Change detection across two runs of a campaign (as asv compares two commits).

:func:`compare_runs` takes the tidy tables of an old and a new run and, per cell and
metric, gives the relative change of the mean (new against old) with its interval
(Welch's t and Fieller's interval, both Bonferroni-adjusted over the cells of a metric,
:mod:`perflab.stats.family`) and where it stands against the SESOI: ``exceeds`` (the whole
interval lies beyond ±SESOI), ``within`` (the whole interval lies inside it) or
``unclear``. A question's comparison covers only its ``within:`` cells and takes its own
SESOI (:class:`Target`), so two questions on one metric keep theirs. Where several runs stand on
a side (``old`` or ``new`` a list of tables, e.g. superseded runs of the campaign), the run is a
level of variance (Kalibera & Jones 2013): each cell is compared with a linear mixed model, the
side as fixed effect and the run as random intercept (:func:`perflab.stats.blocked.mixed_model`),
so the runs' spread, not only the samples', makes the interval; a run's samples are not one
population with another run's. :func:`host_changes` lists the host facts
(:data:`perflab.fingerprint.MATCH_KEYS`) that differ between the two runs' first fingerprints,
and :func:`contention_changes` where the two runs' steal or CPU used outside the lab differ by
more than the campaign's quiet bounds (:mod:`perflab.contention`): two runs on different hosts,
or on one host under different platform noise, measure different machines, and the command line
refuses them unless told.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import contention, evidence, fingerprint
from ..formats import fingerprints
from .blocked import mixed_model
from .family import adjusted_level, compare_family, family_rows
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
    return {p.name[len("fingerprint-before-"):-len(".json")]: fingerprints.read(p)
            for p in sorted(blocks[0].glob("fingerprint-before-*.json"))}


def host_changes(old_dir: str | Path, new_dir: str | Path) -> list[str]:
    """The matched host facts that differ between the first fingerprints of two runs, one sentence each."""
    old, new = _first_fingerprints(Path(old_dir)), _first_fingerprints(Path(new_dir))
    out = [f"host {h} is in only one of the runs" for h in sorted(old.keys() ^ new.keys())]
    for host in sorted(old.keys() & new.keys()):
        out += fingerprint.describe([d for d in fingerprint.diff(old[host], new[host])
                                     if any(fnmatch.fnmatchcase(d.key, p) for p in fingerprint.MATCH_KEYS)])
    return out


def contention_changes(old_dir: str | Path, new_dir: str | Path, root: str | Path = "."
                       ) -> tuple[list[str], list[str]]:
    """The two runs' contention side by side (lines) and where they differ beyond the quiet bounds (sentences).

    Differ: the median steal during samples, or the median CPU used outside the lab that is not the lab's
    kernel work, differs between the runs by more than its bound (the runs' own, else the study default).
    """
    evs = [evidence.campaign(Path(d), root) for d in (old_dir, new_dir)]

    def said(ev: evidence.CampaignEvidence) -> dict[str, str]:
        if not ev.recorded:
            return {"steal": "not recorded", "contended": "not recorded", "outside the lab": "not recorded"}
        return {"steal": ev.steal.percent() if ev.steal else "not recorded",
                "contended": f"{ev.contended}/{ev.recorded} (steal {ev.contended_steal}, outside {ev.contended_outside})",
                "outside the lab": ("not separable (format 1)" if ev.outside_cpus_median is None
                                    else f"median {ev.outside_cpus_median:.2f} CPUs")}

    sides = [said(ev) for ev in evs]
    width = max(len(v) for v in sides[0].values()) + 2
    lines = [f"contention  {'old: ' + str(old_dir):<{width + 5}} new: {new_dir}"]
    lines += [f"  {key:<16}{sides[0][key]:<{width}}    {sides[1][key]}" for key in sides[0]]
    differs = []
    steal_bound = next((ev.steal_bound for ev in evs if ev.steal_bound is not None), contention.STUDY_DEFAULT.max_steal)
    old, new = evs
    if old.steal and new.steal and steal_bound is not None and abs(old.steal.median - new.steal.median) * 100 > steal_bound:
        differs.append(f"the median steal differs ({100 * old.steal.median:.1f} % old, {100 * new.steal.median:.1f} % "
                       f"new) by more than the bound of {steal_bound:g} %")
    cpu_bound = next((ev.outside_bound for ev in evs if ev.outside_bound is not None),
                     contention.STUDY_DEFAULT.max_other_cpus)
    if (old.outside_cpus_median is not None and new.outside_cpus_median is not None and cpu_bound is not None
            and abs(old.outside_cpus_median - new.outside_cpus_median) > cpu_bound):
        differs.append(f"the median CPU used outside the lab differs ({old.outside_cpus_median:.2f} old, "
                       f"{new.outside_cpus_median:.2f} new CPUs) by more than the bound of {cpu_bound:g} CPUs")
    return lines, differs


@dataclass(frozen=True)
class Target:
    """What one comparison of two runs is about: a metric (its row selection), the cells (``within``) and the
    SESOI; ``name`` labels its rows (a question's id, or the metric)."""

    name: str
    metric: str
    sesoi: float
    select: Mapping[str, Any] | None = None
    within: Mapping[str, str] = field(default_factory=dict)


def _runs(tables: pd.DataFrame | Sequence[pd.DataFrame]) -> list[pd.DataFrame]:
    return [tables] if isinstance(tables, pd.DataFrame) else list(tables)


def _by_run(tables: list[pd.DataFrame], target: Target, source: str) -> pd.DataFrame:
    """The target's rows of every run of one side, with a ``_run`` column (``source`` and the run's index)."""
    parts = []
    for k, df in enumerate(tables):
        data = select_rows(df, target.metric, target.select or None, per_run="mean", source=source).data
        for factor, level in target.within.items():
            data = data[data[factor].astype(str) == str(level)]
        parts.append(data.assign(_run=f"{source}{k}"))
    return pd.concat(parts, ignore_index=True)


def compare_runs(old: pd.DataFrame | Sequence[pd.DataFrame], new: pd.DataFrame | Sequence[pd.DataFrame],
                 metrics: Sequence[str] | None = None, *, sesoi: Mapping[str, float] | float = 0.05,
                 level: float = 0.95, select: Mapping[str, Mapping[str, object] | None] | None = None,
                 targets: Sequence[Target] | None = None) -> pd.DataFrame:
    """Per target and cell: n, means, relative change new/old − 1 with its adjusted interval, p, adjusted p,
    the SESOI and ``status`` (exceeds / within / unclear); ``runs_old``/``runs_new`` and ``model``.

    ``targets`` (e.g. one per question) or ``metrics`` with ``sesoi`` and ``select`` per metric (as
    :func:`perflab.stats.levels.select_rows` takes it). ``old`` and ``new`` are a run's tidy table or a
    list of runs' tables; with three runs or more in all, a cell is compared by the mixed model of the
    module docstring (``model``: ``run as random effect``), else by Welch's t and Fieller's interval.
    Cells of one side only are left out."""
    olds, news = _runs(old), _runs(new)
    if targets is None:
        targets = [Target(m, m, sesoi.get(m, np.nan) if isinstance(sesoi, Mapping) else float(sesoi),
                          (select or {}).get(m)) for m in metrics or []]
    keys = factors(news[0])
    nested = len(olds) + len(news) >= 3
    rows: list[dict] = []
    for target in targets:
        a, b = _by_run(olds, target, "old"), _by_run(news, target, "new")
        cells: list[tuple[dict, pd.DataFrame, pd.DataFrame]] = []
        for cell, nb in (b.groupby(keys, sort=True) if keys else [((), b)]):
            cell = cell if isinstance(cell, tuple) else (cell,)
            na = a
            for k, v in zip(keys, cell):
                na = na[na[k].astype(str) == str(v)]
            if len(na) < 2 or len(nb) < 2:
                continue
            cells.append(({"question": target.name if target.name != target.metric else "", "metric": target.metric, **dict(zip(keys, cell)), "n_old": len(na), "n_new": len(nb),
                           "runs_old": int(na["_run"].nunique()), "runs_new": int(nb["_run"].nunique()),
                           "mean_old": float(na["value"].mean()), "mean_new": float(nb["value"].mean()),
                           "sesoi": target.sesoi}, na, nb))
        results = _nested(cells, level) if nested else family_rows(compare_family(
            [(na["value"].to_numpy(float), nb["value"].to_numpy(float)) for _, na, nb in cells], level=level))
        for (row, _, _), r in zip(cells, results):
            row.update(change=r["rel_diff"], ci_low=r["ci_low"], ci_high=r["ci_high"], p=r["p"],
                       p_adjusted=r["p_adjusted"], ci_level=r["ci_level"],
                       model="run as random effect" if nested else "Welch t, samples pooled per run")
            s = row["sesoi"]
            row["status"] = ("exceeds" if r["ci_low"] > s or r["ci_high"] < -s else
                             "within" if -s <= r["ci_low"] and r["ci_high"] <= s else "unclear")
            rows.append(row)
    return pd.DataFrame(rows)


def _nested(cells: list[tuple[dict, pd.DataFrame, pd.DataFrame]], level: float) -> list[dict[str, float]]:
    """Per cell, new against old with the run as random intercept (Bonferroni over the cells): relative change,
    interval and p of the side's fixed effect."""
    m = max(1, len(cells))
    adjusted = adjusted_level(level, m)
    out = []
    for row, na, nb in cells:
        both = pd.concat([na.assign(_side="0-old"), nb.assign(_side="1-new")], ignore_index=True)
        fit = mixed_model(both, "value", ["_side"], "_run", level=adjusted).set_index("term")
        term = fit.loc[[t for t in fit.index if "1-new" in str(t)][0]]
        base = row["mean_old"]
        low, high = float(term["ci_low"]) / abs(base), float(term["ci_high"]) / abs(base)
        out.append({"rel_diff": float(term["estimate"]) / abs(base), "ci_low": low, "ci_high": high,
                    "p": float(term["p"]), "p_adjusted": min(1.0, float(term["p"]) * m), "ci_level": adjusted})
    return out
