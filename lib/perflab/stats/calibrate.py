"""Offered-rate calibration: per packet size, the highest offered rate a path forwards with little loss.

A calibration campaign offers each size a ladder of rates (e.g. packets per second) through the
path alone. :func:`ladder` reads the ladder from the campaign's labelled levels (each sets a UDP
payload ``length`` and a ``bitrate``); :func:`highest_rates` takes one loss value per sample and
returns, per size, the highest rung whose mean loss is below a threshold with every lower rung
below it too (so a lucky rung above a failing one does not count), together with the distance
to the next rung: the calibration's step, i.e. its resolution.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ._input import StatsInputError

#: Bytes of a frame that are not UDP payload: Ethernet header 14 + FCS 4 + IPv4 20 + UDP 8.
UDP_FRAME_OVERHEAD = 46
#: iperf3's rate suffixes (powers of 1000, as iperf3 reads ``-b``).
_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_RATE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)\s*$")


def bits_per_second(bitrate: str | float | int) -> float:
    """An iperf3 ``-b`` value ("2880K", "40M", 37280000) in bits per second."""
    if isinstance(bitrate, (int, float)) and not isinstance(bitrate, bool):
        return float(bitrate)
    m = _RATE_RE.match(str(bitrate))
    if m is None:
        raise StatsInputError("bitrate", "a number with an optional K, M, G or T suffix (iperf3 -b)",
                              repr(bitrate), "Write the rate as iperf3 reads it, e.g. 40M or 37280000.")
    return float(m.group(1)) * _SUFFIX[m.group(2).lower()]


def packets_per_second(bitrate: str | float | int, length: int) -> float:
    """The datagram rate of an iperf3 UDP flow offering ``bitrate`` of ``length``-byte payloads."""
    if not length > 0:
        raise StatsInputError("length", "a positive UDP payload length in bytes", repr(length),
                              "Pass the campaign's length (-l).")
    return bits_per_second(bitrate) / (8.0 * length)


def bitrate_for(pps: float, length: int) -> int:
    """The iperf3 ``-b`` value (bits/s of payload, rounded) offering ``pps`` datagrams of ``length`` bytes."""
    return int(round(pps * 8 * length))


def ladder(levels: Sequence[Mapping[str, Any]], *, overhead: int = UDP_FRAME_OVERHEAD) -> pd.DataFrame:
    """The rungs of a calibration factor: per labelled level its ``label``, ``frame`` (payload +
    ``overhead`` bytes), ``length``, ``bitrate`` (bit/s) and ``pps`` (datagrams/s)."""
    rows = []
    for i, level in enumerate(levels):
        sets = level.get("set", {}) if isinstance(level, Mapping) else {}
        if "length" not in sets or "bitrate" not in sets:
            raise StatsInputError(f"calibration level {i} ({level!r})", "a labelled level setting length and bitrate",
                                  "no length or bitrate", "Write each rung as {label, set: {length, bitrate}}.")
        length = int(sets["length"])
        rows.append({"label": str(level["label"]), "frame": length + overhead, "length": length,
                     "bitrate": bits_per_second(sets["bitrate"]),
                     "pps": packets_per_second(sets["bitrate"], length)})
    return pd.DataFrame(rows)


def highest_rates(samples: pd.DataFrame, *, size: str = "frame", rate: str = "pps", loss: str = "value",
                  threshold: float = 1.0) -> pd.DataFrame:
    """Per ``size``: the calibrated ``rate``, the highest rung whose mean ``loss`` (%) is below
    ``threshold`` while every lower rung's is too.

    ``samples`` has one row per sample. The result has per size: ``rate`` (nan when even the
    lowest rung fails), its mean ``loss`` and ``n``, ``next_rate`` and ``next_loss`` (the first
    failing rung, nan when none fails) and ``step``, the distance from the calibrated rung to the
    next one up (to the one below when it is the top rung).
    """
    missing = [c for c in (size, rate, loss) if c not in samples.columns]
    if missing:
        raise StatsInputError("highest_rates(samples)", f"columns {size!r}, {rate!r} and {loss!r}",
                              f"no column(s) {missing}", "Pass one row per sample with its size, rate and loss.")
    if not math.isfinite(threshold) or threshold <= 0:
        raise StatsInputError("threshold", "a positive loss in %", repr(threshold), "State the loss you accept, e.g. 1.")
    rows = []
    for sz, g in samples.groupby(size, sort=True, observed=True):
        rungs = g.groupby(rate, sort=True)[loss].agg(["mean", "size"]).reset_index()
        rates = rungs[rate].to_numpy(float)
        failing = np.flatnonzero(~(rungs["mean"].to_numpy(float) < threshold))
        first_fail = int(failing[0]) if failing.size else len(rungs)
        row = {size: sz, "rate": np.nan, "loss": np.nan, "n": 0, "next_rate": np.nan, "next_loss": np.nan,
               "step": np.nan, "rungs": len(rungs)}
        if first_fail < len(rungs):
            row.update(next_rate=rates[first_fail], next_loss=float(rungs["mean"].iloc[first_fail]))
        if first_fail > 0:
            k = first_fail - 1
            row.update(rate=rates[k], loss=float(rungs["mean"].iloc[k]), n=int(rungs["size"].iloc[k]))
            if k + 1 < len(rates):
                row["step"] = rates[k + 1] - rates[k]
            elif k > 0:
                row["step"] = rates[k] - rates[k - 1]
        rows.append(row)
    return pd.DataFrame(rows)
