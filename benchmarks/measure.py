"""What every benchmark shares: interleaved timing, a metric beside its target, the table.

A benchmark module exposes ``results() -> list[Result]``; ``benchmarks/run.py`` runs them
all and writes the table into ``benchmarks/README.md``. Commands compared with each other
are timed in one interleaved run (round i runs each command once, in a rotating order),
so a busy machine slows all of them alike; a value is the median [min-max] of the rounds.
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

ROOT = Path(__file__).resolve().parents[1]
# Benchmarks measure this checkout's library, whatever else is installed.
sys.path.insert(0, str(ROOT / "lib"))


@dataclass(frozen=True)
class Result:
    """One metric: its measured value, its target and whether the target is met (None: no target)."""

    metric: str
    measured: str
    target: str
    met: bool | None
    note: str = ""

    def line(self) -> str:
        """The result as one aligned text line."""
        verdict = {True: "met", False: "MISSED", None: ""}[self.met]
        return f"{self.metric:<48} {self.measured:<28} target {self.target:<14} {verdict:<6} {self.note}".rstrip()


def environment() -> dict[str, str]:
    """The environment for benchmarked commands: this checkout's ``lib`` first on the module path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "lib"), env.get("PYTHONPATH")) if p)
    return env


def interleaved(commands: Mapping[str, Sequence[str]], rounds: int, *, cwd: Path = ROOT,
                cpu: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    """Wall seconds of each command in each of ``rounds`` rounds, rotating the order every round.

    ``cpu``, when given, receives each run's CPU seconds (user + system): on a shared machine
    they vary less than wall time. A command that fails stops the benchmark with its error
    output: a failed run is no timing.
    """
    names = list(commands)
    times: dict[str, list[float]] = {name: [] for name in names}
    env = environment()
    for i in range(rounds):
        for name in names[i % len(names):] + names[:i % len(names)]:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run(commands[name], cwd=cwd, env=env, capture_output=True, text=True)
            elapsed = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0:
                sys.exit(f"{name}: `{' '.join(commands[name])}` exited {done.returncode}: {done.stderr[-600:]}")
            times[name].append(elapsed)
            if cpu is not None:
                cpu.setdefault(name, []).append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return times


def spread(values: Sequence[float], unit: str = "s", scale: float = 1.0) -> str:
    """``median [min-max]`` of ``values`` x ``scale``, with ``unit``."""
    low, mid, high = min(values) * scale, statistics.median(values) * scale, max(values) * scale
    return f"{mid:.3g} {unit} [{low:.3g}-{high:.3g}]"


def check(value: float, target: float) -> tuple[bool, str]:
    """Whether ``value`` is within an upper-bound ``target``, and a note saying by how much it misses."""
    return value <= target, "" if value <= target else f"missed by {value / target:.2f}x; "


def ratios(numerator: Sequence[float], denominator: Sequence[float]) -> list[float]:
    """Round-by-round ratios of two interleaved series."""
    return [a / b for a, b in zip(numerator, denominator)]


def markdown(results: Sequence[Result]) -> str:
    """The results as a Markdown table: metric, measured, target, verdict, note."""
    rows = ["| metric | measured, median [min-max] | target | met | note |", "|---|---|---|---|---|"]
    for r in results:
        verdict = {True: "yes", False: "**no**", None: ""}[r.met]
        rows.append(f"| {r.metric} | {r.measured} | {r.target} | {verdict} | {r.note} |")
    return "\n".join(rows)


def write_section(readme: Path, markers: tuple[str, str], body: str) -> None:
    """Put ``body`` (which starts and ends with ``markers``) in place of the README's section between them, or
    append it when the README has none."""
    text = readme.read_text()
    pattern = re.compile(re.escape(markers[0]) + ".*?" + re.escape(markers[1]), re.DOTALL)
    text = pattern.sub(lambda _: body, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + body + "\n"
    readme.write_text(text)
