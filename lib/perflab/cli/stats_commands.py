"""What ``perflab compare``, ``recheck`` and ``compare-runs`` do: read the tables, run the statistics, print.

:mod:`perflab.cli.stats` declares the subcommands' arguments without importing any of this (so their
``--help`` and argument errors answer at once); each handler returns the exit code (0 done, 2 the input
cannot be analysed, with one clear message).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..formats import questions as record_format, records, tables as data_tables
from ..stats._input import StatsInputError, json_value, p_text, plain
from ..stats.compare import Comparison, compare
from ..stats.describe import describe
from ..stats.levels import select_rows
from ..stats.multi import OMNIBUS_FOR_TEST, Omnibus, omnibus
from ..stats.names import DEFAULT_RUN_SESOI
from ..stats.published import load_claims, load_published, recheck, recheck_claims

#: Units that get an SI prefix in printed output (values are never changed in JSON).
PREFIXABLE = ("bit/s", "B/s", "bit", "B", "op/s", "FLOP/s", "Hz", "pkt/s")
PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def _dump(payload: dict[str, Any]) -> str:
    """Strict JSON of a payload of plain values and DataFrames: NaN as null, ±inf as "inf"/"-inf"."""
    def convert(v: Any) -> Any:
        return v.to_dict(orient="records") if isinstance(v, pd.DataFrame) else v
    return json.dumps(json_value(plain({k: convert(v) for k, v in payload.items()})), indent=1,
                      allow_nan=False, default=str)


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV or Parquet table (by extension), with an error naming the file."""
    path = Path(path)
    try:
        return data_tables.load(path)
    except (OSError, ValueError) as exc:
        raise StatsInputError(str(path), "a readable CSV or Parquet table", f"{type(exc).__name__}: {exc}",
                              "Check the path (perflab tidy writes data/processed/<campaign>.parquet).") from None


def number(value: float, digits: int = 4) -> str:
    """``value`` with ``digits`` significant digits in fixed notation (e-notation only beyond 1e15 or
    below 1e-6); nan as "n/a", ±inf as "inf"/"-inf"."""
    if value is None or math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= 15 or magnitude < -6:
        return f"{value:.{digits - 1}e}"
    return f"{value:.{max(0, digits - 1 - magnitude)}f}"


def display_unit(values: pd.Series, unit: str | None) -> tuple[float, str]:
    """(divisor, label) that print ``values`` of ``unit`` with an SI prefix when the unit takes one."""
    if not unit:
        return 1.0, ""
    peak = float(values.abs().median()) if len(values) else 0.0
    if unit in PREFIXABLE:
        for factor, prefix in PREFIXES:
            if peak >= factor:
                return factor, prefix + unit
    return 1.0, unit


def _where(items: list[str] | None, source: str) -> dict[str, str] | None:
    """``--where COL=VALUE`` options as a select mapping (None when there are none)."""
    if not items:
        return None
    out = {}
    for item in items:
        if "=" not in item:
            raise StatsInputError(f"{source}, --where {item!r}", "COLUMN=VALUE (VALUE empty: the dimension is "
                                  "empty; '*': any value)", "no '='", "Write e.g. --where stream= .")
        column, value = item.split("=", 1)
        out[column.strip()] = value.strip()
    return out


def _pair_blocks(rows: pd.DataFrame, value: str, by: str, block: str, source: str,
                 ) -> tuple[dict[str, pd.Series], list[str]]:
    """Values per group aligned by block; incomplete blocks are dropped and reported."""
    if rows.duplicated([by, block]).any():
        dup = rows.loc[rows.duplicated([by, block]), [by, block]].iloc[0].tolist()
        raise StatsInputError(f"{source}, --paired-by {block}", f"one value per ({by}, {block})",
                              f"several for {dup}", "Aggregate repetitions within a block first.")
    wide = rows.pivot(index=block, columns=by, values=value)
    complete = wide.dropna()
    notes = [f"dropped {len(wide) - len(complete)} incomplete block(s)"] if len(complete) < len(wide) else []
    return {str(g): complete[g] for g in complete.columns}, notes


def _print_comparison(c: Comparison, factor: float, unit: str) -> None:
    """The comparison in words: test, effect with its interval in the unit and in %, p, effect sizes, diagnostics."""
    u = f" {unit}" if unit else ""
    pct = f"{100 * c.level:g} %"
    print(f"\n{c.labels[1]} vs {c.labels[0]}: {c.test}; {c.reason}")
    print(f"  {c.effect}: {number(c.estimate / factor)}{u}, {pct} CI [{number(c.estimate_ci[0] / factor)}, "
          f"{number(c.estimate_ci[1] / factor)}]{u}")
    print(f"  relative: {number(100 * c.rel_diff, 3)} %, {pct} CI [{number(100 * c.rel_diff_ci[0], 3)} %, "
          f"{number(100 * c.rel_diff_ci[1], 3)} %] ({c.rel_diff_ci_method})")
    df = "" if math.isnan(c.df) else f", df = {number(c.df, 3)}"
    print(f"  statistic = {number(c.statistic)}{df}, {p_text(c.p_value)}; Hedges' g = {number(c.hedges_g, 3)}, "
          f"Cliff's delta = {number(c.cliffs_delta, 3)}")
    for note in c.notes:
        print(f"  note: {note}")


def _print_omnibus(o: Omnibus, by: str, factor: float, unit: str, level: float) -> None:
    """The omnibus test and the rows of the post-hoc it ran."""
    u = f" ({unit})" if unit else ""
    df = f"df = {number(o.df_num, 3)}" + ("" if math.isnan(o.df_denom) else f", {number(o.df_denom, 3)}")
    print(f"\nOmnibus: {o.test}; {o.reason}; statistic = {number(o.statistic)}, {df}, {p_text(o.p_value)}")
    print(f"Post-hoc: {o.posthoc}; difference b - a{u} with {100 * level:g} % CI, adjusted p")
    for r in o.pairs:
        ci = "" if math.isnan(r["ci_low"]) else f" [{number(r['ci_low'] / factor)}, {number(r['ci_high'] / factor)}]"
        diff = "" if math.isnan(r["diff"]) else f"{number(r['diff'] / factor)}{ci}, "
        print(f"  {by}={r['group_b']} vs {by}={r['group_a']}: {diff}{p_text(r['p_adjusted'])}")


def _compare_cmd(args: argparse.Namespace) -> int:
    """Describe the groups of ``--by`` and compare them: two groups with ``--test``, more with the
    matching omnibus test and its post-hoc."""
    source = str(args.data)
    paired = bool(args.paired_by)
    try:
        sel = select_rows(read_table(args.data), args.metric, _where(args.where, source),
                          per_run=args.per_run, source=source)
        rows, value, notes = sel.data, sel.value, sel.notes
        if args.by not in rows.columns:
            raise StatsInputError(f"{source}, --by", "a column name", repr(args.by), f"Use one of {list(rows.columns)}.")
        desc = describe(rows, value, args.by, level=args.level, source=source)
        if paired:
            if args.paired_by not in rows.columns:
                raise StatsInputError(f"{source}, --paired-by", "a column name", repr(args.paired_by),
                                      f"Use one of {list(rows.columns)} (usually 'block').")
            groups, more = _pair_blocks(rows, value, args.by, args.paired_by, source)
            notes += more
        else:
            groups = {str(g): sub[value] for g, sub in rows.groupby(args.by, sort=True)}
        result: Comparison | None = None
        overall: Omnibus | None = None
        if len(groups) < 2:
            raise StatsInputError(f"{source}, --by {args.by}", "at least two groups to compare",
                                  f"one group ({args.by} = {next(iter(groups), 'none')})",
                                  "Choose a --by column whose values differ, or widen --where.")
        if len(groups) == 2:
            (a, xa), (b, xb) = groups.items()
            result = compare(xa, xb, test=args.test, paired=paired, level=args.level,
                             labels=(f"{args.by}={a}", f"{args.by}={b}"))
        else:
            overall = omnibus(groups, test=OMNIBUS_FOR_TEST[args.test] if args.test else None, paired=paired,
                              level=args.level)
    except StatsInputError as exc:
        where = "" if str(exc).startswith(source) else f"{source}, --metric {args.metric}, "
        print(f"perflab compare: error: {where}{exc}", file=sys.stderr)
        return 2
    if args.json:
        print(_dump({"data": source, "metric": args.metric, "unit": sel.unit, "by": args.by,
                     "paired_by": args.paired_by, "where": _where(args.where, source), "per_run": args.per_run,
                     "level": args.level, "notes": notes, "describe": desc, "ci_method": desc.attrs["ci_method"],
                     "comparison": result.as_dict() if result else None,
                     "omnibus": overall.as_dict() if overall else None}))
        return 0
    factor, unit = display_unit(rows[value], sel.unit)
    shown = desc.copy()
    for column in ("mean", "sd", "median", "min", "max", "mean_ci_low", "mean_ci_high", "median_ci_low",
                   "median_ci_high"):
        shown[column] = [number(v / factor) for v in desc[column]]
    shown["cv"] = [number(100 * v, 3) for v in desc["cv"]]
    shown = shown.rename(columns={"cv": "cv_%"})
    print(f"{args.metric} by {args.by}" + (f", paired by {args.paired_by}" if paired else "")
          + (f"; values in {unit}" if unit else "") + (f" ({'; '.join(notes)})" if notes else ""))
    print(f"\nDescription ({100 * args.level:g} % CI: mean {desc.attrs['ci_method']['mean']}, "
          f"median {desc.attrs['ci_method']['median']})")
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(shown.to_string(index=False))
    if result:
        _print_comparison(result, factor, unit)
    if overall:
        _print_omnibus(overall, args.by, factor, unit, args.level)
    return 0


def _recheck_cmd(args: argparse.Namespace) -> int:
    """Recheck published p-values (and, with --claims, stated percentages)."""
    try:
        tables = [load_published(p) for p in args.published]
        checked = pd.concat([recheck(t) for t in tables], ignore_index=True)
        claims = None
        if args.claims:
            claims = recheck_claims(load_claims(args.claims), pd.concat(tables, ignore_index=True))
    except StatsInputError as exc:
        print(f"perflab recheck: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(_dump({"published": [str(p) for p in args.published], "recheck": checked,
                     "claims": claims if claims is not None else None}))
        return 0
    columns = ["name", "group_a", "group_b", "published_p", "p_student", "p_welch", "status"]
    with pd.option_context("display.width", 200, "display.max_rows", 500, "display.max_colwidth", 60):
        print(checked[columns].to_string(index=False))
        print(f"\n{int(checked['flag'].sum())} of {len(checked)} comparison(s) flagged: "
              "neither Student's nor Welch's t reproduces the published p.")
        if claims is not None:
            shown = ["claim", "line", "kind", "stated"] + [c for c in claims.columns if c.startswith("pct_")] \
                + ["reproduced_by", "status"]
            print()
            print(claims[shown].to_string(index=False))
            print(f"\n{int(claims['flag'].sum())} of {len(claims)} claim(s) flagged: no formula reproduces them.")
    return 0


def _run_targets(new_dir: Path) -> list[Any]:
    """The questions of the new run's campaign (questions.json, else the study) as comparisons of two runs: each
    its metric, row selection, ``within:`` cells and SESOI (:class:`perflab.stats.runs.Target`)."""
    from .. import questions
    from ..stats.runs import Target
    record = new_dir / questions.RECORD
    if record.is_file():
        frozen = questions.read_record(record)["questions"]
    else:
        camp = records.read_campaign(new_dir / "campaign.json")
        text = questions.for_campaign_file(camp.source, camp.campaign) if camp.source else None
        frozen = record_format.parse(text, camp.source)["questions"] if text else []
    return [Target(q["id"], q["metric"], float(q["sesoi"]), q.get("select") or None, dict(q.get("within") or {}))
            for q in frozen]


def _compare_runs_cmd(args: argparse.Namespace) -> int:
    """Per question (or metric) and cell, NEW against OLD: the change with its interval and whether it exceeds the
    SESOI, after both runs' contention side by side."""
    from .. import tidy
    from ..evidence import contention_changes, host_changes
    from ..stats.runs import Target, compare_runs
    changed = host_changes(args.old, args.new)
    if changed and not args.allow_host_change:
        print(f"perflab compare-runs: error: {args.new} ran on different host facts than {args.old}: "
              f"{'; '.join(changed[:3])}. Compare runs of the same machine, or pass --allow-host-change.",
              file=sys.stderr)
        return 2
    try:
        side_by_side, noisy = contention_changes(args.old, args.new)
    except (OSError, ValueError) as exc:
        print(f"perflab compare-runs: error: {exc}", file=sys.stderr)
        return 2
    if noisy and not args.allow_contention_change:
        print("\n".join(side_by_side), file=sys.stderr)
        print(f"perflab compare-runs: error: {args.new} and {args.old} ran under different platform noise: "
              f"{'; '.join(noisy)}. Compare runs measured under the same contention, or pass "
              "--allow-contention-change to compare them with the difference stated.", file=sys.stderr)
        return 2
    try:
        targets = _run_targets(args.new)
        if args.metric:
            asked = {t.metric for t in targets}
            targets = [t for t in targets if t.metric in args.metric] + [
                Target(m, m, DEFAULT_RUN_SESOI) for m in dict.fromkeys(args.metric) if m not in asked]
        if args.where:
            where = _where(args.where, str(args.new))
            targets = [replace(t, select=where) for t in targets]
        if args.sesoi is not None:
            targets = [replace(t, sesoi=args.sesoi) for t in targets]
        if not targets:
            raise StatsInputError(f"{args.new}", "--metric, or questions declaring the campaign's metrics",
                                  "neither", "Name the metric(s) to compare with --metric.")
        olds = [tidy.frame(d)[0] for d in [args.old, *(args.also_old or [])]]
        news = [tidy.frame(d)[0] for d in [args.new, *(args.also_new or [])]]
        table = compare_runs(olds, news, targets=targets, level=args.level)
    except (StatsInputError, OSError, ValueError) as exc:
        print(f"perflab compare-runs: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(json_value({"old": str(args.old), "new": str(args.new), "host_changes": changed,
                                     "contention": side_by_side, "contention_changes": noisy,
                                     "rows": table.to_dict("records")}), indent=1))
        return 0
    for note in changed:
        print(f"host change (allowed): {note}")
    print("\n".join(side_by_side))
    for note in noisy:
        print(f"qualified: {note}; the changes below may be the platform's, not the system's")
    for _, r in table.iterrows():
        cell = ", ".join(f"{k}={r[k]}" for k in table.columns[table.columns.get_loc("metric") + 1:
                                                               table.columns.get_loc("n_old")])
        what = f"{r['question']} ({r['metric']})" if r["question"] else r["metric"]
        runs = f"; runs {r['runs_old']}/{r['runs_new']}, {r['model']}" if r["runs_old"] + r["runs_new"] > 2 else ""
        print(f"{what} [{cell}]: {number(100 * r['change'], 3)} % "
              f"[{number(100 * r['ci_low'], 3)}, {number(100 * r['ci_high'], 3)}] ({100 * r['ci_level']:.4g} % CI, "
              f"Bonferroni{runs}), {p_text(r['p_adjusted'])} adj.; SESOI ±{100 * r['sesoi']:g} %: {r['status']}")
    return 0
