"""A campaign's planned values as inline values for the paper (``<campaign>/plan/...``).

Prose never types a repetition count, a duration or a seed: it cites these, taken from the
campaign file through :meth:`perflab.campaign.Campaign.planned` and the runner's estimate.
"""

from __future__ import annotations

from pathlib import Path

from ..campaign import Campaign, load
from ..files import slug
from ..runner import plan
from . import macros
from .latex import escape_latex


def values(campaign: Campaign) -> dict[str, str]:
    """Inline-value keys ``<campaign>/plan/...``: ``repetitions``, ``warmups``, ``seed``, ``design``, ``cells``,
    ``samples``, ``estimated-minutes``, every fixed tool parameter as ``params/<name>`` and every factor's
    levels as ``levels/<factor>``, each a LaTeX string."""
    planned, key = campaign.planned(), f"{campaign.name}/plan"
    out = {f"{key}/repetitions": str(planned["repetitions"]), f"{key}/warmups": str(planned["warmups"]),
           f"{key}/seed": "drawn at run time" if planned["seed"] is None else str(planned["seed"]),
           f"{key}/design": "RMIT" if planned["design"] == "rmit" else escape_latex(planned["design"]),
           f"{key}/cells": str(planned["cells"]), f"{key}/samples": str(planned["samples"]),
           f"{key}/estimated-minutes": f"{plan(campaign)['estimated_seconds'] / 60:.0f}"}
    for name, value in planned["params"].items():
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            out[f"{key}/params/{slug(name)}"] = escape_latex(str(value))
    for factor, levels in planned["factors"].items():
        out[f"{key}/levels/{slug(factor)}"] = ", ".join(escape_latex(str(v)) for v in levels)
    return out


def write(out: str | Path, campaign_file: str | Path) -> Path:
    """Write the planned values of the campaign in ``campaign_file`` to the macro file ``out``, with its lineage
    (``perflab plan --macros``; the pipeline writes every campaign's in one process)."""
    return macros.write(out, values(load(campaign_file)), inputs=[str(campaign_file)], generator="perflab plan --macros")


def write_all(pairs: list[str]) -> None:
    """:func:`write` for each ``campaign file, macro file`` pair of the flat list ``pairs``."""
    for campaign_file, out in zip(pairs[::2], pairs[1::2], strict=True):
        write(out, campaign_file)

