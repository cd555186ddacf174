"""``perflab compare`` and ``perflab recheck``: the statistics stage from the command line.

``register(subparsers)`` adds both subcommands to the ``perflab`` parser; each handler
returns the exit code (0 done, 2 the input cannot be analysed, with one clear message).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from itertools import combinations
from pathlib import Path
from typing import Any

import pandas as pd

from ._input import StatsInputError, plain
from .compare import compare
from .describe import describe
from .multi import omnibus
from .published import load_claims, load_published, recheck, recheck_claims
from .table import comparison_table


def _json_safe(value: Any) -> Any:
    """Replace NaN and ±inf (not valid JSON) by None, recursively."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _dump(payload: dict[str, Any]) -> str:
    """Strict JSON (no NaN) of a payload holding plain values and DataFrames."""
    def convert(v: Any) -> Any:
        return v.to_dict(orient="records") if isinstance(v, pd.DataFrame) else v
    return json.dumps(_json_safe(plain({k: convert(v) for k, v in payload.items()})), indent=1,
                      allow_nan=False, default=str)


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV or Parquet table (by extension), with an error naming the file."""
    path = Path(path)
    try:
        return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise StatsInputError(str(path), "a readable CSV or Parquet table", f"{type(exc).__name__}: {exc}",
                              "Check the path (perflab tidy writes data/processed/<campaign>.parquet).") from None


def select_metric(df: pd.DataFrame, metric: str, source: str) -> tuple[pd.DataFrame, str, list[str]]:
    """Return (rows, value column, notes) for ``metric``: a column, or a value of a tidy ``metric`` column.

    In a tidy table the rows of that metric are kept, warm-up rows are dropped, and a
    run with several rows for the metric is refused (pick one summary per run).
    """
    notes: list[str] = []
    if metric in df.columns:
        rows, column = df, metric
    elif {"metric", "value"} <= set(df.columns) and (df["metric"] == metric).any():
        rows, column = df[df["metric"] == metric], "value"
    else:
        known = sorted(df["metric"].astype(str).unique()) if "metric" in df.columns else []
        raise StatsInputError(f"{source}, --metric", "a column name or a value of the 'metric' column",
                              repr(metric), f"Use one of the columns {list(df.columns)}"
                              + (f" or metrics {known}" if known else "") + ".")
    if "warmup" in rows.columns and rows["warmup"].astype(bool).any():
        notes.append(f"excluded {int(rows['warmup'].astype(bool).sum())} warm-up row(s)")
        rows = rows[~rows["warmup"].astype(bool)]
    if "run_id" in rows.columns and rows["run_id"].duplicated().any():
        dup = rows.loc[rows["run_id"].duplicated(), "run_id"].iloc[0]
        raise StatsInputError(f"{source}, metric {metric!r}", "one value per run",
                              f"several rows for run {dup!r} (per-interval or per-stream values)",
                              "Choose a per-run summary metric, or filter the table first.")
    return rows, column, notes


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


def _compare_cmd(args: argparse.Namespace) -> int:
    """Describe the groups of ``--by`` and compare them (all pairs, Holm-corrected, when k > 2)."""
    source = str(args.data)
    try:
        rows, value, notes = select_metric(read_table(args.data), args.metric, source)
        if args.by not in rows.columns:
            raise StatsInputError(f"{source}, --by", "a column name", repr(args.by),
                                  f"Use one of {list(rows.columns)}.")
        desc = describe(rows, value, args.by, level=args.level)
        if args.paired_by:
            if args.paired_by not in rows.columns:
                raise StatsInputError(f"{source}, --paired-by", "a column name", repr(args.paired_by),
                                      f"Use one of {list(rows.columns)} (usually 'block').")
            groups, more = _pair_blocks(rows, value, args.by, args.paired_by, source)
            notes += more
        else:
            groups = {str(g): sub[value] for g, sub in rows.groupby(args.by, sort=True)}
        paired = bool(args.paired_by)
        results = [compare(groups[a], groups[b], paired=paired, level=args.level, labels=(a, b))
                   for a, b in combinations(groups, 2)]
        table = comparison_table(results, correction=args.correction)
        overall = omnibus(groups, paired=paired) if len(groups) > 2 else None
    except StatsInputError as exc:
        print(f"perflab compare: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(_dump({"data": source, "metric": args.metric, "by": args.by, "paired_by": args.paired_by,
                     "level": args.level, "notes": notes, "describe": desc,
                     "ci_method": desc.attrs["ci_method"],
                     "omnibus": overall.as_dict() if overall else None,
                     "comparisons": [r.as_dict() for r in results], "table": table}))
        return 0
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(f"{args.metric} by {args.by}" + (f", paired by {args.paired_by}" if paired else "")
              + (f" ({'; '.join(notes)})" if notes else ""))
        print(f"\nDescription (CI {100 * args.level:g} %: mean {desc.attrs['ci_method']['mean']}, "
              f"median {desc.attrs['ci_method']['median']})")
        print(desc.to_string(index=False))
        if overall:
            print(f"\nOmnibus: {overall.test}, statistic {overall.statistic:.4g}, p = {overall.p_value:.3g} "
                  f"({overall.reason})")
        print(f"\nComparisons (p adjusted: {table.attrs['correction']})")
        print(table.to_string(index=False))
        for r in results:
            print(f"  {r.labels[1]} vs {r.labels[0]}: {r.test}; {r.reason}")
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


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``compare`` and ``recheck`` subcommands to the ``perflab`` parser."""
    p = subparsers.add_parser("compare", help="describe and compare groups of a metric",
                              description="Describe each group of --by and compare them with a named "
                                          "test, effect sizes and corrected p-values.")
    p.add_argument("data", type=Path, help="tidy table (CSV or Parquet)")
    p.add_argument("--metric", required=True,
                   help="value column, or a value of the tidy 'metric' column (then 'value' is used)")
    p.add_argument("--by", required=True, help="column whose values are the groups")
    p.add_argument("--paired-by", help="column pairing runs across groups (e.g. block under RMIT)")
    p.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--correction", default="holm", choices=["holm", "bh", "bonferroni", "none"],
                   help="multiple-comparison correction over all pairs (default holm)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=_compare_cmd)

    r = subparsers.add_parser("recheck", help="recheck published p-values and percentages",
                              description="Recompute published p-values from mean, sd and n under "
                                          "Student's and Welch's t, and stated percentages.")
    r.add_argument("published", type=Path, nargs="+",
                   help="CSV(s) with columns name, group, mean, sd, n, published_p")
    r.add_argument("--claims", type=Path, help="CSV of stated percentages (see docs/statistics.md)")
    r.add_argument("--json", action="store_true", help="print JSON instead of tables")
    r.set_defaults(func=_recheck_cmd)


def main(argv: list[str] | None = None) -> int:
    """Run the two subcommands without the rest of ``perflab`` (``python -m perflab.stats.cli``)."""
    parser = argparse.ArgumentParser(prog="perflab-stats")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
