"""The pipeline's profile from a Snakemake log: job time per rule, and the run's wall time against the sum of
its jobs.

Usage: ``python benchmarks/bench_pipeline.py LOG [--write]`` prints the table of a run's log (``.snakemake/log/
*.snakemake.log``) and, with ``--write``, puts it into benchmarks/README.md between the ``profile`` markers;
``run.py --only pipeline --pipeline-log LOG`` gives the wall-time row. By default nothing here runs the
pipeline: it reads a finished run. ``run.py --only pipeline --pipeline-run DIR`` runs ``snakemake`` in DIR (a
fresh clone with nothing generated: 10-30 minutes) and adds its CPU time (user + system of Snakemake and
every process it waited for). A job's time is from its start line to its ``Finished`` line (whole seconds,
as Snakemake stamps them), so it includes any wait inside the job (the measurement lock, a loaded machine).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from measure import ROOT, Result, write_section

README = Path(__file__).with_name("README.md")
MARKERS = ("<!-- profile: written by benchmarks/bench_pipeline.py -->", "<!-- end of profile -->")
#: One row for the analyses: one rule each, all the same kind of job (a notebook template run by papermill).
FAMILIES = {"analysis_": "analysis_* (one notebook each)"}
_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
_START = re.compile(r"^(?:local)?rule (\w+):$")
_JOBID = re.compile(r"^\s+jobid: (\d+)$")
_FINISHED = re.compile(r"^Finished job(?:id)?:? (\d+)")
_ELAPSED = re.compile(r"^Elapsed time: (?:(\d+) days?, )?(\d+):(\d\d):(\d\d(?:\.\d+)?)")
_CORES = re.compile(r"^Provided cores: (\d+)")


@dataclass(frozen=True)
class Profile:
    """A finished run: seconds per job grouped by rule, its wall seconds and the cores it was given."""

    jobs: dict[str, list[float]]
    wall: float
    cores: int | None

    def job_sum(self) -> float:
        """The seconds of every job added up."""
        return sum(sum(times) for times in self.jobs.values())


def read(log: Path) -> Profile:
    """The profile of the run that wrote the Snakemake ``log``; a job without a ``Finished`` line is left out."""
    started: dict[str, tuple[str, datetime]] = {}
    jobs: dict[str, list[float]] = {}
    stamp = first = last = None
    rule = None
    wall = None
    cores = None
    for line in log.read_text(errors="replace").splitlines():
        if m := _STAMP.match(line):
            stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
            first, last = first or stamp, stamp
        elif (m := _START.match(line)) and stamp is not None:
            rule = m.group(1)
        elif (m := _JOBID.match(line)) and rule is not None and stamp is not None:
            started[m.group(1)] = (rule, stamp)
            rule = None
        elif (m := _FINISHED.match(line)) and m.group(1) in started and stamp is not None:
            name, start = started.pop(m.group(1))
            if name != "all":
                family = next((shown for prefix, shown in FAMILIES.items() if name.startswith(prefix)), name)
                jobs.setdefault(family, []).append((stamp - start).total_seconds())
        elif m := _ELAPSED.match(line):
            days, hours, minutes, seconds = m.groups()
            wall = timedelta(days=int(days or 0), hours=int(hours), minutes=int(minutes),
                             seconds=float(seconds)).total_seconds()
        elif m := _CORES.match(line):
            cores = int(m.group(1))
    if wall is None:
        wall = (last - first).total_seconds() if first and last else 0.0
    return Profile(jobs, wall, cores)


def table(profile: Profile) -> str:
    """Markdown: rule, jobs, total, mean and share of the job time, the largest total first."""
    total = profile.job_sum() or 1.0
    rows = ["| rule | jobs | total | mean | share of job time |", "|---|---:|---:|---:|---:|"]
    for name, times in sorted(profile.jobs.items(), key=lambda kv: -sum(kv[1])):
        rows.append(f"| `{name}` | {len(times)} | {sum(times):.0f} s | {sum(times) / len(times):.1f} s | "
                    f"{100 * sum(times) / total:.0f} % |")
    rows.append(f"| all jobs | {sum(len(t) for t in profile.jobs.values())} | {profile.job_sum():.0f} s | | 100 % |")
    return "\n".join(rows)


def latest_log(root: Path = ROOT) -> Path | None:
    """The newest Snakemake log under ``root``, if any."""
    logs = sorted((root / ".snakemake" / "log").glob("*.snakemake.log"))
    return logs[-1] if logs else None


def run_pipeline(tree: Path, cores: int | None = None) -> tuple[Path, float]:
    """Run ``snakemake`` in ``tree`` on ``cores`` (default: every CPU); its log and CPU seconds (user + system of
    Snakemake and every process it waited for). A failed run stops the benchmark with its last output."""
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([snakemake, "--cores", str(cores or os.cpu_count() or 1), "--rerun-incomplete"], cwd=tree,
                          capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"snakemake in {tree} exited {done.returncode}: {(done.stdout + done.stderr)[-1500:]}")
    log = latest_log(tree)
    if log is None:
        sys.exit(f"snakemake in {tree} left no log in .snakemake/log/")
    return log, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def results(log: Path | None = None, run: Path | None = None, cores: int | None = None) -> list[Result]:
    """The wall-time row of the run that wrote ``log`` (default: this checkout's newest), with the sum of its jobs;
    with ``run``, of a run of the pipeline in that tree started here, with its CPU time. No row without a log."""
    cpu = None
    if run is not None:
        started = time.strftime("%H:%M UTC", time.gmtime())
        log, cpu = run_pipeline(run, cores)
    log = log or latest_log()
    if log is None:
        return []
    found = read(log)
    on = f" on {found.cores} cores" if found.cores else ""
    spent = (f"CPU {cpu:.0f} s ({cpu / max(found.wall, 1):.2f} CPUs busy on average), run here at {started}"
             if cpu is not None else "CPU not in the log")
    return [Result("pipeline wall time (from a Snakemake log)", f"{found.wall:.0f} s", "<= 600 s",
                   found.wall <= 600, f"sum of its {sum(len(t) for t in found.jobs.values())} jobs "
                   f"{found.job_sum():.0f} s ({found.job_sum() / max(found.wall, 1):.2f}x the wall time{on}); "
                   f"{spent}; read from {log.name}")]


def write_readme(profile: Profile, log: Path) -> None:
    """Replace the table between :data:`MARKERS` in the README with ``profile``'s (appended when missing)."""
    cores = f" on {profile.cores} cores" if profile.cores else ""
    body = "\n".join([MARKERS[0], f"From `{log.name}`: wall time {profile.wall:.0f} s{cores}, the jobs' "
                                  f"{profile.job_sum():.0f} s.", "", table(profile), MARKERS[1]])
    write_section(README, MARKERS, body)


def main() -> None:
    """Print the profile of the log named on the command line; ``--write`` also puts it into the README."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log", type=Path, nargs="?", help="a Snakemake log (default: this checkout's newest)")
    p.add_argument("--write", action="store_true", help="write the table into benchmarks/README.md")
    args = p.parse_args()
    log = args.log or latest_log()
    if log is None:
        p.error("no Snakemake log in .snakemake/log/: name one")
    profile = read(log)
    print(table(profile))
    print(f"wall {profile.wall:.0f} s, jobs {profile.job_sum():.0f} s")
    if args.write:
        write_readme(profile, log)
        print(f"table written to {README.relative_to(README.parents[1])}")


if __name__ == "__main__":
    main()
