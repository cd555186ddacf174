"""Tidy at scale: `perflab tidy` (verify and parse from one read of each raw file, Parquet; the CSV
mirror is written only on request) on campaigns of real fio samples (61 rows each) of 10^5 and 10^6
rows: rows/s, peak RSS, and the per-row cost ratio.

Each size is tidied in a fresh process, so its peak RSS (``resource.getrusage``) is its own; a campaign
of 10^6 rows is parsed on every CPU (:data:`perflab.tidy.PARALLEL_SAMPLES`), and its peak and CPU time
count the worker processes too (peak: the largest sum of their resident memory, read every 10 ms). The sizes alternate
when ``--rounds`` is more than 1.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from unittest import mock

from measure import ROOT, Result, check, environment, spread

FIXTURE = ROOT / "tests/fixtures/fio/randread_group_reporting.json"
ROWS_PER_SAMPLE = 61
SIZES = (100_000, 1_000_000)
TARGET_SECONDS = 20.0
TARGET_PEAK_BYTES = 2**30
TARGET_RATIO = 1.2


def campaign(root: Path, samples: int) -> Path:
    """A raw store of ``samples`` copies of a real fio sample (scratch data: written without fsync)."""
    from perflab import __version__, store
    from perflab.formats import records

    s = store.RawStore(root, f"bench{samples}")
    spec = {"campaign": s.campaign, "benchmark": {"tool": "fio"}, "hosts": {"client": "h1"},
            "factors": {"iodepth": [1, 4]}, "repetitions": samples // 2}  # tidy reads the plan from it
    s.begin(records.CampaignRecord(campaign=s.campaign, design_digest="bench", spec=spec, source="bench",
                                   perflab=__version__, python="3", schedule=[], inventory={}))
    out = FIXTURE.read_text()
    with mock.patch("os.fsync"):
        for i in range(samples):
            meta = records.SampleMeta(
                campaign=s.campaign, run_id=f"r{i:07d}", tool="fio", cell={"iodepth": 1 + 3 * (i % 2)}, cell_index=i % 2,
                repetition=i // 2, warmup=False, block=i // 2, position=i % 2, seed=None, attempt=1, status="ok",
                reason=None, roles={}, settle=None, neighbours=[], perflab=__version__,
                commands=[{"host": "h1", "started_utc": "2026-11-22T00:00:00.000Z"}])
            s.put_sample(f"r{i:07d}", {"stdout": out, "stderr": "", "meta.json": meta.to_json()})
    os.sync()  # write the scratch data back now, not while a tidy run is timed
    return s.dir


def _measure_here(raw: Path, out: Path) -> None:
    """Tidy ``raw`` into ``out`` in this process; print seconds (wall and CPU), rows and peak RSS as JSON."""
    import pyarrow.parquet

    from perflab import tidy

    tree = _TreePeak()
    start, cpu = time.perf_counter(), _cpu()
    with tree:
        paths = tidy.write(raw, out)
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    rows = pyarrow.parquet.ParquetFile(paths["parquet"]).metadata.num_rows
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, tree.peak)
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "rows": rows, "peak_bytes": peak}))


class _TreePeak:
    """The largest sum of resident memory of this process and its worker processes, read every 10 ms while
    in the ``with`` block (``VmRSS`` of ``/proc/<pid>/status``; the tree from ``/proc/<pid>/task/*/children``)."""

    def __init__(self) -> None:
        self.peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> "_TreePeak":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._done.wait(0.01):
            self.peak = max(self.peak, sum(_rss(pid) for pid in _tree(os.getpid())))


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for children in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                todo += [int(c) for c in children.read_text().split()]
            except OSError:
                continue
    return found


def _rss(pid: int) -> int:
    """Resident bytes of ``pid`` (0 once it has ended)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _cpu() -> float:
    """CPU seconds of this process and of its ended worker processes."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure(raw: Path, out: Path) -> dict:
    """Seconds (wall and CPU), rows and peak RSS of tidying ``raw`` in a fresh process."""
    done = subprocess.run([sys.executable, __file__, "--measure", str(raw), str(out)], capture_output=True,
                          text=True, env=environment(), cwd=Path(__file__).parent)
    if done.returncode:
        sys.exit(f"tidy of {raw} failed: {done.stderr[-800:]}")
    return json.loads(done.stdout)


def results(rounds: int = 1) -> list[Result]:
    """Tidy both sizes ``rounds`` times, alternating; one :class:`Result` per metric."""
    small, large = SIZES
    runs: dict[int, list[dict]] = {small: [], large: []}
    with tempfile.TemporaryDirectory() as tmp:
        raws = {rows: campaign(Path(tmp), rows // ROWS_PER_SAMPLE) for rows in SIZES}
        for i in range(rounds):
            for rows in (SIZES if i % 2 == 0 else SIZES[::-1]):
                runs[rows].append(measure(raws[rows], Path(tmp) / "out"))
    big = runs[large]
    per_row = {rows: [r["seconds"] / r["rows"] for r in runs[rows]] for rows in SIZES}
    ratio = [b / statistics.median(per_row[small]) for b in per_row[large]]
    shown = f"{big[0]['rows']:,} rows"
    seconds, peak = statistics.median(r["seconds"] for r in big), statistics.median(r["peak_bytes"] for r in big)
    (time_met, time_missed), (peak_met, peak_missed) = check(seconds, TARGET_SECONDS), check(peak, TARGET_PEAK_BYTES)
    ratio_met, ratio_missed = check(statistics.median(ratio), TARGET_RATIO)
    return [
        Result(f"`perflab tidy` of {shown}: wall time", spread([r["seconds"] for r in big]),
               f"<= {TARGET_SECONDS:g} s", time_met,
               f"{time_missed}{statistics.median(r['rows'] / r['seconds'] for r in big):,.0f} rows/s; "
               f"CPU {spread([r['cpu_seconds'] for r in big])}"),
        Result(f"`perflab tidy` of {shown}: peak RSS", spread([r["peak_bytes"] for r in big], "MiB", 2**-20),
               "<= 1024 MiB", peak_met,
               f"{peak_missed}{small:,} rows: {spread([r['peak_bytes'] for r in runs[small]], 'MiB', 2**-20)}"),
        Result(f"tidy cost per row, {large:,} / {small:,} rows", spread(ratio, "x"), f"<= {TARGET_RATIO}x (linear)",
               ratio_met, f"{ratio_missed}{small:,} rows: "
                          f"{statistics.median(r['rows'] / r['seconds'] for r in runs[small]):,.0f} rows/s"),
    ]


def main() -> None:
    """Print each tidy metric beside its target (or, with --measure, measure one tidy run)."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=1, help="tidy runs per size (default 1)")
    p.add_argument("--measure", nargs=2, type=Path, metavar=("RAW", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.measure:
        _measure_here(*args.measure)
        return
    for result in results(args.rounds):
        print(result.line())


if __name__ == "__main__":
    main()
