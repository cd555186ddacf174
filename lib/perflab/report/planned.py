"""A campaign's planned values as inline values for the paper (``<campaign>/plan/...``).

Prose never types a repetition count, a duration or a seed: it cites these, taken from the
campaign file through :meth:`perflab.campaign.Campaign.planned` and the runner's estimate.
"""

from __future__ import annotations

from ..campaign import Campaign
from ..files import slug
from ..runner import plan
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
