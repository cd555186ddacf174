"""Pilot runs: a few repetitions of a campaign, then what the planned n can detect.

A pilot runs the campaign with ``repetitions`` lowered (its raw data goes to its own root,
``data/pilot/`` by default, never mixed with the campaign's), estimates each cell's
coefficient of variation, and reports per cell the minimum detectable effect at the
campaign's planned n and the n needed for a target half-width of the mean's CI.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Mapping, TextIO

import pandas as pd

from . import runner, stats, tidy, tools
from .errors import UserError
from .inventory import HostEntry
from .campaign import Campaign


class PilotError(UserError, ValueError):
    """A pilot cannot be run or summarised as asked."""


def pilot_campaign(spec: Campaign, repetitions: int) -> Campaign:
    """The campaign ``spec`` cut to ``repetitions`` per cell, renamed ``<name>-pilot``."""
    if repetitions < 2:
        raise PilotError(f"a pilot needs at least 2 repetitions per cell to estimate a CV; got {repetitions}")
    name = f"{spec.name}-pilot"
    return dataclasses.replace(spec, name=name, repetitions=repetitions,
                               doc={**spec.doc, "campaign": name, "repetitions": repetitions})


def summarize(df: pd.DataFrame, factors: list[str], *, metric: str, n: int, alpha: float = 0.05,
              power: float = 0.8, halfwidth: float = 0.01) -> pd.DataFrame:
    """Per cell: n, mean, CV, minimum detectable effect at ``n`` runs, runs for a ``halfwidth`` CI."""
    data = df[(df["metric"] == metric) & df["summary"] & ~df["warmup"]]
    if data.empty:
        raise PilotError(f"the pilot has no summary rows of metric {metric!r}; "
                         f"metrics present: {sorted(df['metric'].unique())}")
    return stats.plan(stats.describe(data, "value", factors), n, alpha=alpha, power=power, halfwidth=halfwidth)


def run(spec: Campaign, entries: Mapping[str, HostEntry], raw_root: str | Path, *, repetitions: int = 5,
        metric: str | None = None, halfwidth: float = 0.01, stream: TextIO | None = None,
        wait: float | None = None) -> pd.DataFrame:
    """Run the pilot (or resume it) and return :func:`summarize` for the campaign's planned n.

    The pilot measures under the machine's measurement lock, as any campaign (``wait`` as for
    :func:`perflab.runner.run`).
    """
    pilot = pilot_campaign(spec, repetitions)
    runner.run(pilot, entries, raw_root, stream=stream, wait=wait)
    df, _ = tidy.frame(Path(raw_root) / pilot.name)
    metric = metric or tools.get(spec.tool).primary_metric
    if metric is None:
        summary_rows = df[df["summary"]]
        if summary_rows.empty:
            raise PilotError(f"the pilot of {spec.name} produced no summary rows; see data in {raw_root}/{pilot.name}")
        metric = str(summary_rows["metric"].iloc[0])
    table = summarize(df, list(spec.factors), metric=metric, n=spec.repetitions, halfwidth=halfwidth)
    table.attrs["metric"] = metric
    return table


def format_table(table: pd.DataFrame, factors: list[str]) -> str:
    """The pilot result as aligned text for the terminal."""
    plan = table.attrs.get("plan", {})
    head = (f"metric {table.attrs.get('metric', '?')}: minimum detectable relative effect at n = {plan.get('n')} "
            f"per cell (alpha {plan.get('alpha')}, power {plan.get('power')}), and runs needed for a "
            f"±{100 * plan.get('halfwidth', 0):g} % CI of the mean")
    shown = table[[*factors, "n", "mean", "cv", "mde", "n_halfwidth"]].copy()
    shown["cv"] = (100 * shown["cv"]).map("{:.2f} %".format)
    shown["mde"] = (100 * shown["mde"]).map("{:.2f} %".format)
    shown["mean"] = shown["mean"].map("{:.4g}".format)
    return head + "\n" + shown.rename(columns={"n": "pilot n", "mde": "MDE", "n_halfwidth": "n for CI"}).to_string(index=False)
