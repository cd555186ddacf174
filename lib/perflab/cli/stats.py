"""``perflab compare``, ``recheck`` and ``compare-runs``: the statistics stage from the command line.

``register(subparsers)`` adds the subcommands to the ``perflab`` parser. This module imports no
statistics (no pandas, scipy or statsmodels), so ``--help`` and argument errors answer at once;
a handler imports :mod:`perflab.cli.stats_commands` when it runs and returns the exit code (0 done,
2 the input cannot be analysed, with one clear message).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Callable

from ..stats.names import DEFAULT_RUN_SESOI, PER_RUN, TEST_NAMES


def _handler(name: str) -> Callable[[argparse.Namespace], int]:
    """The subcommand handler ``name`` of :mod:`perflab.cli.stats_commands`, imported when it is called."""
    def run(args: argparse.Namespace) -> int:
        return int(getattr(importlib.import_module("perflab.cli.stats_commands"), name)(args))
    return run


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``compare``, ``recheck`` and ``compare-runs`` subcommands to the ``perflab`` parser."""
    p = subparsers.add_parser("compare", help="describe and compare groups of a metric",
                              description="Describe each group of --by and compare them with a named "
                                          "test (Welch's t by default), the effect that matches it, and "
                                          "assumption checks as diagnostics.")
    p.add_argument("data", type=Path, help="tidy table (CSV or Parquet)")
    p.add_argument("--metric", required=True,
                   help="value column, or a value of the tidy 'metric' column (then 'value' is used)")
    p.add_argument("--by", required=True, help="column whose values are the groups")
    p.add_argument("--paired-by", help="column pairing runs across groups (e.g. block under RMIT)")
    p.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--test", choices=sorted(TEST_NAMES),
                   help="welch (default), student, mannwhitney; paired: paired-t (default), wilcoxon. "
                        "With 3+ groups the matching omnibus and its post-hoc run (welch: Welch's ANOVA + "
                        "Games-Howell; student: ANOVA + Tukey; mannwhitney: Kruskal-Wallis + Dunn)")
    p.add_argument("--where", action="append", metavar="COL=VALUE",
                   help="keep rows whose dimension COL is VALUE (empty: no value; '*': any value); "
                        "repeatable. Without it a tidy table's summary rows are used")
    p.add_argument("--per-run", choices=sorted(PER_RUN),
                   help="aggregate several selected rows of a run (e.g. intervals) into one value")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=_handler("_compare_cmd"))

    r = subparsers.add_parser("recheck", help="recheck published p-values and percentages",
                              description="Recompute published p-values from mean, sd and n under "
                                          "Student's and Welch's t, and stated percentages.")
    r.add_argument("published", type=Path, nargs="+",
                   help="CSV(s) with columns name, group, mean, sd, n, published_p")
    r.add_argument("--claims", type=Path, help="CSV of stated percentages (see docs/statistics.md)")
    r.add_argument("--json", action="store_true", help="print JSON instead of tables")
    r.set_defaults(func=_handler("_recheck_cmd"))

    c = subparsers.add_parser("compare-runs", help="per cell and metric, a new run of a campaign against an old one",
                              description="The change of each cell's mean (NEW against OLD) with its Bonferroni-"
                                          "adjusted interval, and whether it exceeds the SESOI (each question's, "
                                          "on its within: cells, or --sesoi). Prints both runs' contention and "
                                          "steal; refuses runs on different host facts or under platform noise "
                                          "that differs beyond the quiet bounds. With --also-old/--also-new, "
                                          "the run is a level of variance (mixed model).")
    c.add_argument("old", type=Path, help="raw directory of the old run (e.g. a superseded run's checkout)")
    c.add_argument("new", type=Path, help="raw directory of the new run")
    c.add_argument("--metric", action="append", help="metric to compare (repeatable; default: the questions' metrics)")
    c.add_argument("--sesoi", type=float, help=f"relative SESOI for every metric (default: the questions', else "
                                               f"{DEFAULT_RUN_SESOI})")
    c.add_argument("--where", action="append", metavar="COL=VALUE",
                   help="keep rows whose dimension COL is VALUE, as for compare (default: the questions' selection)")
    c.add_argument("--level", type=float, default=0.95, help="family confidence level (default 0.95)")
    c.add_argument("--allow-host-change", action="store_true", help="compare runs whose host facts differ")
    c.add_argument("--allow-contention-change", action="store_true",
                   help="compare runs whose steal or CPU outside the lab differ beyond the bounds, the difference stated")
    c.add_argument("--also-old", action="append", type=Path, metavar="DIR",
                   help="another run on the old side (repeatable): the run becomes a level of variance")
    c.add_argument("--also-new", action="append", type=Path, metavar="DIR",
                   help="another run on the new side (repeatable): the run becomes a level of variance")
    c.add_argument("--json", action="store_true", help="print JSON instead of lines")
    c.set_defaults(func=_handler("_compare_runs_cmd"))


def main(argv: list[str] | None = None) -> int:
    """Run the two subcommands without the rest of ``perflab`` (``python -m perflab.cli.stats``)."""
    parser = argparse.ArgumentParser(prog="perflab-stats")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
