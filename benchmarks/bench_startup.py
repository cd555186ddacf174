"""Start-up: `perflab --help`, every subcommand's `--help` and `perflab plan` against their 0.5 s
target, `snakemake -n` against Snakemake's own start-up, all in one interleaved run.

Floors: `python -c pass` for perflab, `snakemake --version` for the dry run. The dry run's target is for a
built tree (nothing to do): give one with ``tree`` (``run.py --tree DIR``); in a fresh checkout it plans
every job.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from measure import ROOT, Result, check, interleaved, ratios, spread

ROUNDS = 7
TARGET_SECONDS = 0.5
TARGET_SNAKEMAKE_RATIO = 2.0


def subcommands() -> list[str]:
    """Every subcommand of ``perflab`` (plugins' included), as its parser lists them."""
    import argparse

    from perflab.cli import parser

    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def results(rounds: int = ROUNDS, tree: Path | None = None) -> list[Result]:
    """Time the commands in ``rounds`` interleaved rounds (`snakemake -n` in ``tree``, default this checkout);
    one :class:`Result` per metric."""
    python = sys.executable
    snakemake = str(Path(python).with_name("snakemake"))
    cpu: dict[str, list[float]] = {}
    helps = subcommands()
    where = Path(tree or ROOT).resolve()
    dry_run = [snakemake, "-n", "--cores", "1", "--quiet", "--snakefile", str(where / "Snakefile"), "--directory", str(where)]
    times = interleaved({
        "python": [python, "-c", "pass"],
        "help": [python, "-m", "perflab.cli", "--help"],
        "plan": [python, "-m", "perflab.cli", "plan", "studies/iperf3-streams/campaigns/iperf3-streams.yaml"],
        **{f"{name} --help": [python, "-m", "perflab.cli", name, "--help"] for name in helps},
        "snakemake --version": [snakemake, "--version"],
        "snakemake -n": dry_run,
    }, rounds, cpu=cpu)
    floor = f"floor `python -c pass` {spread(times['python'])}"
    out = []
    for key, shown in (("help", "--help"), *((f"{n} --help", f"{n} --help") for n in helps), ("plan", "plan <campaign>")):
        met, missed = check(statistics.median(times[key]), TARGET_SECONDS)
        out.append(Result(f"`perflab {shown}` wall time", spread(times[key]), f"<= {TARGET_SECONDS} s", met,
                          f"{missed}CPU {spread(cpu[key])}; {floor}"))
    dry = ratios(times["snakemake -n"], times["snakemake --version"])
    dry_cpu = ratios(cpu["snakemake -n"], cpu["snakemake --version"])
    met, missed = check(statistics.median(dry), TARGET_SNAKEMAKE_RATIO)
    place = f"in the built tree {tree}" if tree else "in this checkout (a fresh one plans every job)"
    out.append(Result("`snakemake -n` / `snakemake --version`", spread(dry, "x"), f"<= {TARGET_SNAKEMAKE_RATIO}x",
                      met, f"{missed}CPU ratio {spread(dry_cpu, 'x')}; `snakemake -n` {spread(times['snakemake -n'])} "
                           f"{place}, `snakemake --version` {spread(times['snakemake --version'])}"))
    return out


def main() -> None:
    """Print each start-up metric beside its target."""
    for result in results():
        print(result.line())


if __name__ == "__main__":
    main()
