"""Designs: cells from factors, and the order of runs (RMIT or sequential) with run ids.

Under RMIT (randomized multiple interleaved trials) every block runs each cell once, in an
order shuffled afresh per block from a generator seeded with (seed, block), so the order
is reproducible from the recorded seed. Warm-up blocks come first and are flagged. A
campaign with host groups runs the same schedule once per group; those run ids end in ``-g<k>``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping

import numpy as np

from .spec import Campaign


@dataclass(frozen=True)
class Cell:
    """One combination of factor levels."""

    index: int
    levels: Mapping[str, Any]

    @property
    def slug(self) -> str:
        """A short readable id, e.g. ``parallel-4``."""
        raw = "_".join(f"{k}-{v}" for k, v in self.levels.items())
        return re.sub(r"[^A-Za-z0-9_.-]", "", raw)[:80] or f"cell{self.index}"


@dataclass(frozen=True)
class Run:
    """One planned sample: a cell, its repetition, and its place in the schedule."""

    run_id: str
    cell: Cell
    repetition: int
    warmup: bool
    block: int
    position: int
    group: int | None = None


def cells(factors: Mapping[str, tuple], crossing: str = "grid",
          exclude: tuple[Mapping[str, Any], ...] = ()) -> list[Cell]:
    """The cells of a design: the cross product of the factors' levels, or their zip, less the ``exclude``d ones.

    A cell is excluded when it matches every factor -> level pair of one ``exclude`` item.
    """
    names = list(factors)
    combos = zip(*factors.values()) if crossing == "zip" else itertools.product(*factors.values())
    kept = [dict(zip(names, combo)) for combo in combos]
    kept = [levels for levels in kept if not any(all(levels[k] == v for k, v in e.items()) for e in exclude)]
    return [Cell(i, levels) for i, levels in enumerate(kept)]


def run_id(campaign: str, cell: Cell, repetition: int, warmup: bool, seed: int) -> str:
    """A stable id from campaign, cell, repetition and seed, readable at a glance."""
    key = json.dumps([campaign, dict(cell.levels), repetition, warmup, seed], sort_keys=True, default=str)
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    return f"{cell.slug}-{'w' if warmup else 'r'}{repetition:03d}-{digest}"


def schedule(spec: Campaign) -> list[Run]:
    """Every run of the campaign in execution order, warm-ups first; with groups, group 0's runs, then group 1's, ...

    Every group gets the same order; its run ids carry the suffix ``-g<k>`` (ids without groups are unchanged).
    """
    if spec.seed is None:
        raise ValueError(f"{spec.source}: campaign {spec.name} has no seed yet; perflab run draws one "
                         "(or write `seed:` in the campaign file)")
    runs = _schedule(spec)
    if not spec.groups:
        return runs
    return [replace(r, run_id=f"{r.run_id}-g{k}", group=k) for k in range(len(spec.groups)) for r in runs]


def _schedule(spec: Campaign) -> list[Run]:
    grid = cells(spec.factors, spec.crossing, spec.exclude)
    runs: list[Run] = []
    if spec.design == "sequential":
        for cell in grid:
            reps = [(r, True) for r in range(spec.warmups)] + [(r, False) for r in range(spec.repetitions)]
            for rep, warm in reps:
                runs.append(Run(run_id(spec.name, cell, rep, warm, spec.seed), cell, rep, warm, len(runs), 0))
        return runs
    blocks = [(r, True) for r in range(spec.warmups)] + [(r, False) for r in range(spec.repetitions)]
    for block, (rep, warm) in enumerate(blocks):
        order = np.random.default_rng([spec.seed, block]).permutation(len(grid))
        for position, idx in enumerate(order):
            cell = grid[int(idx)]
            runs.append(Run(run_id(spec.name, cell, rep, warm, spec.seed), cell, rep, warm, block, position))
    return runs
