"""Start-up: `perflab --help`, every subcommand's `--help` and `perflab plan` against their 0.5 s
target, `snakemake -n` against Snakemake's own start-up, all in one interleaved run.

Floors: `python -c pass` for perflab, `snakemake --version` for the dry run.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from measure import Result, check, interleaved, ratios, spread

ROUNDS = 7
TARGET_SECONDS = 0.5
TARGET_SNAKEMAKE_RATIO = 1.5
#: Subcommands whose `--help` is timed on its own: those whose work needs the statistics stack.
HELPS = ("compare", "recheck", "tidy", "verify")


def results(rounds: int = ROUNDS) -> list[Result]:
    """Time the commands in ``rounds`` interleaved rounds; one :class:`Result` per metric."""
    python = sys.executable
    snakemake = str(Path(python).with_name("snakemake"))
    cpu: dict[str, list[float]] = {}
    times = interleaved({
        "python": [python, "-c", "pass"],
        "help": [python, "-m", "perflab.cli", "--help"],
        "plan": [python, "-m", "perflab.cli", "plan", "studies/iperf3-streams/campaigns/iperf3-streams.yaml"],
        **{f"{name} --help": [python, "-m", "perflab.cli", name, "--help"] for name in HELPS},
        "snakemake --version": [snakemake, "--version"],
        "snakemake -n": [snakemake, "-n", "--cores", "1", "--quiet"],
    }, rounds, cpu=cpu)
    floor = f"floor `python -c pass` {spread(times['python'])}"
    out = []
    for key, shown in (("help", "--help"), *((f"{n} --help", f"{n} --help") for n in HELPS), ("plan", "plan <campaign>")):
        met, missed = check(statistics.median(times[key]), TARGET_SECONDS)
        out.append(Result(f"`perflab {shown}` wall time", spread(times[key]), f"<= {TARGET_SECONDS} s", met,
                          f"{missed}CPU {spread(cpu[key])}; {floor}"))
    dry = ratios(times["snakemake -n"], times["snakemake --version"])
    dry_cpu = ratios(cpu["snakemake -n"], cpu["snakemake --version"])
    met, missed = check(statistics.median(dry), TARGET_SNAKEMAKE_RATIO)
    out.append(Result("`snakemake -n` / `snakemake --version`", spread(dry, "x"), f"<= {TARGET_SNAKEMAKE_RATIO}x",
                      met, f"{missed}CPU ratio {spread(dry_cpu, 'x')}; `snakemake -n` {spread(times['snakemake -n'])}, "
                           f"`snakemake --version` {spread(times['snakemake --version'])}"))
    return out


def main() -> None:
    """Print each start-up metric beside its target."""
    for result in results():
        print(result.line())


if __name__ == "__main__":
    main()
