"""Run every benchmark of perflab itself and write the results table into benchmarks/README.md.

Usage: ``python benchmarks/run.py [--only startup,tidy,overhead,dispatch,estimates,pairs,pipeline]
[--no-write] [--rounds N] [--tree DIR] [--pipeline-log LOG | --pipeline-run DIR]``. The lab benchmarks
(dispatch, estimates, pairs) need root and are skipped, with a note, otherwise. ``--tree`` names a built tree
for `snakemake -n` with nothing to do (startup); ``pipeline`` reads a finished run's Snakemake log
(``--pipeline-log``, default this checkout's newest) and runs the pipeline only when asked (``--pipeline-run``,
in a fresh clone). Every metric is printed beside its target; the README table between the ``results``
markers is replaced.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import time
from pathlib import Path
from typing import Any

from measure import Result, markdown, write_section

#: Benchmark name -> module; each module has ``results() -> list[Result]``.
BENCHMARKS = {"startup": "bench_startup", "tidy": "bench_tidy", "overhead": "bench_overhead",
              "dispatch": "bench_dispatch", "estimates": "bench_estimates", "pairs": "bench_pairs",
              "pipeline": "bench_pipeline"}
NEEDS_ROOT = {"dispatch", "estimates", "pairs"}
README = Path(__file__).with_name("README.md")
MARKERS = ("<!-- results: written by benchmarks/run.py -->", "<!-- end of results -->")


def run(names: list[str], options: dict[str, dict[str, Any]] | None = None) -> tuple[list[Result], list[str]]:
    """The results of the benchmarks ``names`` (``options``: keyword arguments of a benchmark's ``results``),
    and notes on those skipped."""
    results: list[Result] = []
    skipped = []
    for name in names:
        if name in NEEDS_ROOT and os.geteuid() != 0:
            skipped.append(f"{name}: skipped (needs root for the lab)")
            continue
        start = time.perf_counter()
        found = importlib.import_module(BENCHMARKS[name]).results(**(options or {}).get(name, {}))
        for result in found:
            print(result.line(), flush=True)
        print(f"  ({name}: {time.perf_counter() - start:.0f} s)", flush=True)
        results += found
    return results, skipped


def write_readme(results: list[Result], skipped: list[str], load: tuple[float, float]) -> None:
    """Replace the table between :data:`MARKERS` in the README with ``results``; ``load``: 1-min load at start, end."""
    machine = (f"{os.cpu_count()} CPUs, {platform.machine()}, Linux {platform.release()}, "
               f"1-min load {load[0]:.1f} at the start of the run and {load[1]:.1f} at its end")
    body = "\n".join([MARKERS[0], f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine}.",
                      "", markdown(results), *(f"\n{s}" for s in skipped), MARKERS[1]])
    write_section(README, MARKERS, body)


def main() -> None:
    """Run the benchmarks chosen on the command line (default: all) and write the README table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(BENCHMARKS), help=f"comma-separated subset of {', '.join(BENCHMARKS)}")
    p.add_argument("--no-write", action="store_true", help="print only; leave the README alone")
    p.add_argument("--rounds", type=int, help="rounds of the start-up timings (default: bench_startup.ROUNDS)")
    p.add_argument("--tree", type=Path, help="a built tree for `snakemake -n` with nothing to do (default: here)")
    p.add_argument("--pipeline-log", type=Path, help="the Snakemake log of a finished run for the pipeline row")
    p.add_argument("--pipeline-run", type=Path, metavar="DIR",
                   help="run the pipeline in DIR (a fresh clone, nothing generated) for the pipeline row, with its CPU")
    args = p.parse_args()
    names = args.only.split(",")
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        p.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    start_load = os.getloadavg()[0]
    startup = {"tree": args.tree, **({"rounds": args.rounds} if args.rounds else {})}
    results, skipped = run(names, {"startup": startup, "pipeline": {"log": args.pipeline_log, "run": args.pipeline_run}})
    if not args.no_write:
        write_readme(results, skipped, (start_load, os.getloadavg()[0]))
        print(f"table written to {README.relative_to(README.parents[1])}")


if __name__ == "__main__":
    main()
