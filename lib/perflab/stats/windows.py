"""Jitter and loss in fixed windows of a sample, from a UDP receiver's interval reports.

Seed 002 read iperf's jitter in five 10-s windows of each 600-s run (90-100, 190-200,
290-300, 390-400 and 490-500 s) and averaged the 15 values of 3 runs. :func:`seed_windows`
scales those windows to a sample of another length (a 6-s sample: 0.9-1.0, ..., 4.9-5.0 s);
:func:`window_values` gives, per sample and window, the mean of the interval jitters whose
interval lies in the window and the window's loss (lost / sent datagrams); an interval belongs
to a window when its midpoint does, so iperf's slightly late interval ends do not matter.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ._input import StatsInputError

#: Seed 002's jitter windows in a 600-s run, seconds (seed line 58).
SEED_WINDOWS: tuple[tuple[float, float], ...] = ((90, 100), (190, 200), (290, 300), (390, 400), (490, 500))
#: Length of the seed's runs, seconds (seed line 57).
SEED_DURATION = 600.0
#: Columns :func:`window_values` needs: one row per sample and interval.
INTERVAL_COLUMNS = ("run_id", "interval_start", "interval_end", "jitter", "lost_packets", "packets")


def seed_windows(duration: float | None) -> list[tuple[float, float]]:
    """Seed 002's windows scaled from its 600-s runs to samples of ``duration`` seconds."""
    if duration is None or not duration > 0:
        raise StatsInputError("seed_windows(duration)", "a positive duration in seconds", repr(duration),
                              "Pass the sample length (the campaign's benchmark.params.duration).")
    f = float(duration) / SEED_DURATION
    return [(a * f, b * f) for a, b in SEED_WINDOWS]


def window_values(intervals: pd.DataFrame, windows: Sequence[tuple[float, float]]) -> pd.DataFrame:
    """Per sample (``run_id``) and window: mean interval jitter (s), loss (%) and intervals used.

    ``intervals`` has the columns of :data:`INTERVAL_COLUMNS` (other columns, e.g. factors,
    are carried along when constant within a sample). A window no interval falls in is
    refused: its value would be silently missing.
    """
    missing = [c for c in INTERVAL_COLUMNS if c not in intervals.columns]
    if missing:
        raise StatsInputError("window_values(intervals)", f"columns {list(INTERVAL_COLUMNS)}",
                              f"no column(s) {missing}", "Pass the interval rows of a UDP receiver (iperf3 -R -i).")
    extra = [c for c in intervals.columns if c not in INTERVAL_COLUMNS
             and intervals.groupby("run_id")[c].nunique(dropna=False).max() <= 1]
    mid = (intervals["interval_start"].astype(float) + intervals["interval_end"].astype(float)) / 2
    rows = []
    for k, (lo, hi) in enumerate(windows):
        inside = intervals[(mid >= lo) & (mid <= hi)]
        got = set(inside["run_id"])
        lacking = sorted(set(intervals["run_id"]) - got)
        if lacking:
            raise StatsInputError(f"window {lo:g}-{hi:g} s", "at least one interval report in every sample",
                                  f"none in {len(lacking)} sample(s), e.g. {lacking[0]}",
                                  "Use an interval (-i) no longer than the window and samples that reach it.")
        for run_id, g in inside.groupby("run_id", sort=True):
            packets = float(g["packets"].sum())
            lost = float(g["lost_packets"].sum())
            row = {"run_id": run_id, "window": k, "window_start": lo, "window_end": hi,
                   "jitter": float(np.mean(g["jitter"].astype(float))),
                   "loss": 100.0 * lost / packets if packets > 0 else np.nan,
                   "intervals": len(g)}
            row.update({c: g[c].iloc[0] for c in extra})
            rows.append(row)
    return pd.DataFrame(rows)
