"""One metric across the levels of one factor: row selection, description, tests and run-order checks.

:func:`select_rows` picks one value per run from a tidy table (or a plain column of any
table) and refuses what cannot be compared: blank group labels, several rows per run,
mixed units. :func:`analyse` describes each level and compares every level with the first
(the baseline) with a named test (Welch's t by default), Holm-adjusting the p-values
when there is more than one comparison, and runs the run-order checks of
:mod:`perflab.stats.drift`; :func:`verdict` turns all of them into one plain sentence.
Formatting (figures, LaTeX) belongs to :mod:`perflab.report.levels`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ._input import StatsInputError, check_labels, counted, p_text, shapiro_p
from .blocked import blocked_compare, has_blocks
from .compare import Comparison, compare
from .describe import COLUMNS as DESCRIBE_COLUMNS, describe
from .drift import BlockEffect, block_effect, drift, flag_outliers
from .multi import adjust_pvalues
from .names import PER_RUN

#: ``select`` value meaning "any non-empty value of this dimension".
ANY = "*"
#: Significance level of the run-order checks behind :func:`verdict`.
CHECK_ALPHA = 0.05


@dataclass
class Selection:
    """Rows of one metric, one per run: ``data[value]`` holds the values, in ``unit`` (None if unknown)."""

    data: pd.DataFrame
    value: str
    unit: str | None
    notes: list[str] = field(default_factory=list)


@dataclass
class LevelsResult:
    """What :func:`analyse` found for one metric across the levels of one factor."""

    metric: str
    factor: str
    unit: str | None
    data: pd.DataFrame
    summary: pd.DataFrame
    comparisons: list[Comparison]
    p_adjusted: list[float]
    checks: pd.DataFrame
    block: BlockEffect | None
    verdict: str
    notes: list[str] = field(default_factory=list)


def _dimensions(df: pd.DataFrame) -> list[str]:
    """The dimension columns of a tidy table (after ``unit``), or every column of another table."""
    start = df.columns.get_loc("unit") + 1 if "unit" in df.columns else 0
    return [c for c in df.columns[start:] if c not in ("parser_version", "source", "value", "metric", "run_id")]


def _keep(data: pd.DataFrame, column: str, value: Any) -> pd.DataFrame:
    """Rows whose ``column`` matches ``value`` (as text, or as a number: "2" matches 2.0);
    None or "" for empty, :data:`ANY` for non-empty."""
    text = data[column].astype(str).str.strip().where(data[column].notna(), "")
    if value is None or str(value) == "":
        return data[text == ""]
    if str(value) == ANY:
        return data[text != ""]
    same = text == str(value).strip()
    try:
        same |= pd.to_numeric(data[column], errors="coerce") == float(value)
    except (TypeError, ValueError):
        pass
    return data[same]


def select_rows(df: pd.DataFrame, metric: str, select: Mapping[str, Any] | None = None, *,
                per_run: str | None = None, source: str = "table") -> Selection:
    """The measured (non-warm-up) values of ``metric``, one per run.

    ``metric`` is a value of a tidy table's ``metric`` column (then ``value`` holds the
    numbers) or the name of a numeric column. Without ``select`` a tidy table's summary
    rows are kept; ``select`` maps dimension columns to the value to keep (None or "": the
    dimension must be empty; ``"*"``: any non-empty value), e.g. ``{"direction": "read",
    "job": None}`` for fio's totals or ``{"interval_start": "*", "stream": None}`` for
    iperf3's per-interval sums. Several rows per run are refused unless ``per_run``
    ("mean" or "median") aggregates them. Rows of different units are refused.
    ``source`` (the file) names the data in errors.
    """
    if "metric" in df.columns and "value" in df.columns and (df["metric"] == metric).any():
        data, value = df[df["metric"] == metric], "value"
    elif metric in df.columns and metric != "metric":
        data, value = df, metric
    else:
        known = sorted(df["metric"].dropna().astype(str).unique()) if "metric" in df.columns else []
        raise StatsInputError(f"{source}, metric {metric!r}", "a value of the 'metric' column or a column name",
                              "neither", f"Use one of the metrics {known}" if known else
                              f"Use one of the columns {list(df.columns)}.")
    notes: list[str] = []
    if "warmup" in data.columns and data["warmup"].astype(bool).any():
        notes.append(f"excluded {counted(int(data['warmup'].astype(bool).sum()), 'warm-up row')}")
        data = data[~data["warmup"].astype(bool)]
    if select is None:
        if "summary" in data.columns:
            data = data[data["summary"].astype(bool)]
    else:
        for column, wanted in select.items():
            if column not in data.columns:
                raise StatsInputError(f"{source}, select", "dimension columns of the table", f"no column {column!r}",
                                      f"Use one of {_dimensions(df)}.")
            data = _keep(data, column, wanted)
    if data.empty:
        raise StatsInputError(f"{source}, metric {metric!r}", "measured rows", f"none with select={select}",
                              "Check the metric and the selected dimensions.")
    if "unit" in data.columns:
        units = sorted(data["unit"].dropna().astype(str).unique())
        if len(units) > 1:
            raise StatsInputError(f"{source}, column 'unit' of metric {metric!r}", "one unit",
                                  f"{units}", "Select the rows of one metric (values in different units "
                                  "cannot be pooled).")
        unit = units[0] if units else None
    else:
        unit = None
    if "run_id" in data.columns and data["run_id"].duplicated().any():
        if per_run is None:
            varying = [c for c in _dimensions(data) if data[c].nunique(dropna=False) > 1]
            raise StatsInputError(f"{source}, metric {metric!r}", "one value per run",
                                  f"several rows for run {data.loc[data['run_id'].duplicated(), 'run_id'].iloc[0]!r}",
                                  f"Select one row per run on {varying} (select / --where), or aggregate "
                                  "them with per_run / --per-run mean|median.")
        if per_run not in PER_RUN:
            raise StatsInputError(f"{source}, per_run", f"one of {sorted(PER_RUN)}", repr(per_run),
                                  "Use one of the listed aggregations.")
        counts = data.groupby("run_id", sort=False)[value].size()
        varying = [c for c in _dimensions(data) if data.groupby("run_id")[c].nunique(dropna=False).max() > 1]
        firsts = data.drop_duplicates("run_id").set_index("run_id")
        firsts[value] = data.groupby("run_id", sort=False)[value].agg(PER_RUN[per_run])
        firsts[varying] = None  # the aggregated dimensions (e.g. interval_start) no longer apply
        notes.append(f"{per_run} of {int(counts.min())}-{int(counts.max())} rows per run")
        data = firsts.reset_index()
    return Selection(data.copy(), value, unit, notes)


def analyse(df: pd.DataFrame, *, metric: str, factor: str, level: float = 0.95,
            select: Mapping[str, Any] | None = None, per_run: str | None = None, test: str | None = None,
            source: str = "table") -> LevelsResult:
    """Describe ``metric`` per level of ``factor`` and compare every level with the first.

    The rows are :func:`select_rows` of ``metric``. When the rows carry a ``block`` column
    in which blocks hold every level (an RMIT schedule), each comparison is the paired t
    on the block differences (:func:`~perflab.stats.blocked.blocked_compare`); otherwise,
    or when ``test`` names an independent-groups test of
    :data:`~perflab.stats.compare.TEST_NAMES`, Welch's t by default. With more than one
    comparison the p-values are Holm-adjusted (many-to-one, not all pairs).
    """
    sel = select_rows(df, metric, select, per_run=per_run, source=source)
    data, name = sel.data, factor
    if factor not in data.columns:
        raise StatsInputError(f"{source}, factor", "a column of the table", repr(factor), f"Use one of {list(df.columns)}.")
    check_labels(data[factor], factor, source)
    data = data.rename(columns={sel.value: "value"}) if sel.value != "value" else data
    if factor in DESCRIBE_COLUMNS:
        data[f"{factor}_level"] = data[factor]
        factor = f"{factor}_level"
    summary = describe(data, "value", factor, level=level, source=source)
    levels = list(summary[factor])

    def values(lv: Any) -> np.ndarray:
        return data.loc[data[factor] == lv, "value"].to_numpy()

    blocked = test is None and has_blocks(data, factor)
    if blocked:
        comparisons = [blocked_compare(data, "value", factor, "block", levels[0], other, level=level,
                                       labels=(f"{name}={levels[0]}", f"{name}={other}")) for other in levels[1:]]
    else:
        comparisons = [compare(values(levels[0]), values(other), test=test, level=level,
                               labels=(f"{name}={levels[0]}", f"{name}={other}")) for other in levels[1:]]
    raw_p = [c.p_value for c in comparisons]
    p_adjusted = list(adjust_pvalues(raw_p, "holm")) if len(raw_p) > 1 else raw_p
    table = checks(data, factor)
    block = _block_effect(data, factor)
    return LevelsResult(metric, factor, sel.unit, data, summary, comparisons, p_adjusted, table, block,
                        verdict(table, block, factor=factor), sel.notes)


def checks(data: pd.DataFrame, factor: str) -> pd.DataFrame:
    """Per level, in run order: normality, serial dependence, trend, change in level and spread, outliers."""
    flagged = flag_outliers(data, "value", factor)
    order = [c for c in ("block", "position") if c in flagged.columns]
    rows = []
    for level_, sub in (flagged.sort_values(order) if order else flagged).groupby(factor, sort=True):
        d = drift(sub["value"]) if len(sub) >= 4 else None
        nan = float("nan")
        rows.append({factor: level_, "n": len(sub), "shapiro_p": shapiro_p(sub["value"].to_numpy()),
                     "lag1_autocorr": d.lag1_autocorr if d else nan,
                     "ljung_box_lags": d.ljung_box_lags if d else 0,
                     "ljung_box_p": d.ljung_box_p if d else nan,
                     "trend": d.trend if d else "n < 4", "mann_kendall_p": d.mann_kendall_p if d else nan,
                     "level_change_p": d.level_change_p if d else nan,
                     "change_at": d.change_at + 1 if d else 0,
                     "variance_windows": d.variance_windows if d else 0,
                     "variance_change_p": d.variance_change_p if d else nan,
                     "outliers": int(sub["outlier"].sum()), "flags": d.flags(CHECK_ALPHA) if d else []})
    return pd.DataFrame(rows)


def _block_effect(data: pd.DataFrame, factor: str) -> BlockEffect | None:
    """The block effect, or None when the design has no complete blocks to test."""
    if "block" not in data.columns:
        return None
    try:
        return block_effect(data, "value", factor, "block")
    except StatsInputError:
        return None


def verdict(table: pd.DataFrame, block: BlockEffect | None, *, factor: str, alpha: float = CHECK_ALPHA) -> str:
    """One plain-text sentence on independence, derived from every run-order check and the block effect.

    All the checks (four per level with enough runs, and the block effect's two tests) are
    one family: they are Holm-adjusted together, so that on independent, identically
    distributed data the sentence flags something in at most ``alpha`` of campaigns
    (``tests/test_stats_verdict_simulation.py``). It never claims independence when a
    check flags; when none flags it says so, and that the checks cannot prove independence.
    """
    named: list[tuple[str, float]] = []
    for r in table.to_dict("records"):
        if r["n"] < 4:
            continue
        lags = r["ljung_box_lags"]
        named += [(f"{factor} = {r[factor]}: serial dependence (Ljung-Box up to lag {lags}", r["ljung_box_p"]),
                  (f"{factor} = {r[factor]}: a monotonic trend (Mann-Kendall", r["mann_kendall_p"]),
                  (f"{factor} = {r[factor]}: a change in level after run {r['change_at']} of {r['n']} (CUSUM",
                   r["level_change_p"]),
                  (f"{factor} = {r[factor]}: a change in spread across {r['variance_windows']} windows "
                   "(Brown-Forsythe", r["variance_change_p"])]
    if block is not None:
        named += [("the block (round) shifts the values (two-way ANOVA", block.anova_p),
                  ("the block (round) shifts the values (Friedman", block.friedman_p)]
    ps = [p for _, p in named]
    adjusted = list(adjust_pvalues(ps, "holm")) if ps else []
    parts = [f"{text}, Holm-adjusted {p_text(q)})" for (text, _), q in zip(named, adjusted) if q < alpha]
    serial = any(q < alpha for (text, _), q in zip(named, adjusted) if "block" not in text)
    shifted = any(q < alpha for (text, _), q in zip(named, adjusted) if "block" in text)
    short = [str(r[factor]) for r in table.to_dict("records") if r["n"] < 4]
    if not parts and len(short) == len(table):
        return ("The run-order checks need at least 4 runs per level, which no level has"
                + (", and no block effect is detected" if block is not None else "")
                + ": independence is unchecked, so the p-values and intervals rest on an untested assumption.")
    if not parts:
        return ("No run-order check flags serial dependence, a trend, a change in level or in spread"
                + (", or a block effect" if block is not None else "")
                + (f" (levels {', '.join(short)} have too few runs to check)" if short else "")
                + f" after Holm adjustment over the {len(ps)} checks: nothing seen contradicts the tests' "
                  "assumption of independent draws, though these checks cannot prove it.")
    consequences = []
    if serial:
        consequences.append("within a level the samples are not independent draws, so the p-values and "
                            "intervals of a test that assumes them are unreliable (too small and too narrow "
                            "under positive serial dependence)")
    if shifted:
        consequences.append("the machine's conditions moved between rounds; the blocked analysis, which "
                            "compares cells within a round, removes that shift, while an unpaired test counts "
                            "it as noise and loses power (its p-values are then too large, not too small)")
    return "Run-order checks flag " + "; ".join(parts) + ". So " + "; and ".join(consequences) + "."
