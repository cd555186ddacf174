"""Designs: the order of a campaign's runs (RMIT or sequential) with run ids.

Under RMIT (randomized multiple interleaved trials) every block runs each cell once, in an
order shuffled afresh per block from a generator seeded with (seed, block), so the order
is reproducible from the recorded seed. Warm-up blocks come first and are flagged. A
campaign with host groups runs the same schedule once per group; those run ids end in ``-g<k>``.

The shuffle is numpy's ``default_rng([seed, block]).permutation(n)`` (SeedSequence, PCG64,
Fisher-Yates with masked rejection), written out here in plain Python so that planning
imports no numpy: the order for a seed is the one every recorded campaign was run in
(``tests/test_design_order.py`` checks both against each other and the committed ledgers).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping

from . import Campaign, Cell, from_doc


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


def run_id(campaign: str, cell: Cell, repetition: int, warmup: bool, seed: int) -> str:
    """A stable id from campaign, cell, repetition and seed, readable at a glance."""
    key = json.dumps([campaign, dict(cell.levels), repetition, warmup, seed], sort_keys=True, default=str)
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    return f"{cell.slug}-{'w' if warmup else 'r'}{repetition:03d}-{digest}"


#: The form of :func:`run_id` with :func:`schedule`'s group suffix: cell slug, ``r``/``w`` and repetition, digest.
_RUN_ID = re.compile(r"^(?P<cell>.+)-(?P<kind>[rw])\d{3}-[0-9a-f]{8}(?P<group>-g\d+)?$")


def measured_cell(run_id: str) -> str | None:
    """The cell (its slug, and ``-g<k>`` with host groups) a measured sample's run id belongs to.

    None for a warm-up's id or an id not made by :func:`run_id`.
    """
    m = _RUN_ID.match(run_id)
    return f"{m['cell']}{m['group'] or ''}" if m and m["kind"] == "r" else None


def schedule(spec: Campaign) -> list[Run]:
    """Every run of the campaign in execution order, warm-ups first; with groups, group 0's runs, then group 1's, ...

    Every group gets the same order; its run ids carry the suffix ``-g<k>`` (ids without groups are unchanged).
    """
    if spec.seed is None:
        raise ValueError(f"{spec.source}: campaign {spec.name} has no seed yet; perflab run draws one "
                         "(or write `seed:` in the campaign file)")
    runs = _schedule(spec, spec.seed)
    if not spec.groups:
        return runs
    return [replace(r, run_id=f"{r.run_id}-g{k}", group=k) for k in range(len(spec.groups)) for r in runs]


#: The fields of a campaign document that decide its schedule (the others may no longer validate under today's
#: rules, so a recorded campaign's schedule is recomputed from these alone).
SCHEDULE_FIELDS = ("campaign", "benchmark", "hosts", "factors", "crossing", "exclude", "repetitions", "warmups",
                   "seed", "design", "groups", "params")


def planned(doc: Mapping[str, Any], source: str) -> list[str]:
    """The run ids, in order, that a recorded campaign document (``campaign.json``'s ``spec``) plans from its seed."""
    return [r.run_id for r in schedule(from_doc({k: v for k, v in doc.items() if k in SCHEDULE_FIELDS}, source))]


def _schedule(spec: Campaign, seed: int) -> list[Run]:
    grid = spec.cells()
    runs: list[Run] = []
    if spec.design == "sequential":
        for cell in grid:
            reps = [(r, True) for r in range(spec.warmups)] + [(r, False) for r in range(spec.repetitions)]
            for rep, warm in reps:
                runs.append(Run(run_id(spec.name, cell, rep, warm, seed), cell, rep, warm, len(runs), 0))
        return runs
    blocks = [(r, True) for r in range(spec.warmups)] + [(r, False) for r in range(spec.repetitions)]
    for block, (rep, warm) in enumerate(blocks):
        order = permutation([seed, block], len(grid))
        for position, idx in enumerate(order):
            cell = grid[idx]
            runs.append(Run(run_id(spec.name, cell, rep, warm, seed), cell, rep, warm, block, position))
    return runs


_M32, _M64, _M128 = 2**32 - 1, 2**64 - 1, 2**128 - 1
#: PCG64's 128-bit LCG multiplier.
_PCG_MULT = (2549297995355413924 << 64) + 4865540595714422341


def _seed_words(entropy: list[int]) -> list[int]:
    """numpy's ``SeedSequence(entropy).generate_state(4, uint64)``: four 64-bit words from non-negative ints."""
    words = [(v >> (32 * k)) & _M32 for v in entropy for k in range(max(1, (v.bit_length() + 31) // 32))]
    hash_const = 0x43B0D7E5

    def hashmix(value: int) -> int:
        nonlocal hash_const
        value ^= hash_const
        hash_const = (hash_const * 0x931E8875) & _M32
        value = (value * hash_const) & _M32
        return value ^ (value >> 16)

    def mix(x: int, y: int) -> int:
        result = (0xCA01F9DD * x - 0x4973F715 * y) & _M32
        return result ^ (result >> 16)

    pool = [hashmix(words[i] if i < len(words) else 0) for i in range(4)]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for word in words[4:]:
        for dst in range(4):
            pool[dst] = mix(pool[dst], hashmix(word))
    out, hash_const = [], 0x8B51F9DD
    for value in pool + pool:
        value ^= hash_const
        hash_const = (hash_const * 0x58F38DED) & _M32
        value = (value * hash_const) & _M32
        out.append(value ^ (value >> 16))
    return [out[i] | out[i + 1] << 32 for i in range(0, 8, 2)]


def permutation(entropy: list[int], n: int) -> list[int]:
    """The indices ``0..n-1`` in the order of numpy's ``default_rng(entropy).permutation(n)``, without numpy."""
    s_hi, s_lo, i_hi, i_lo = _seed_words(entropy)
    inc = ((i_hi << 64 | i_lo) << 1 | 1) & _M128
    state = ((inc + (s_hi << 64 | s_lo)) * _PCG_MULT + inc) & _M128  # numpy: step, add the seed, step
    spare: int | None = None  # numpy hands out a 64-bit output as two 32-bit ones, low half first

    def next64() -> int:
        nonlocal state
        state = (state * _PCG_MULT + inc) & _M128
        x, rot = ((state >> 64) ^ state) & _M64, state >> 122
        return (x >> rot | x << (-rot & 63)) & _M64

    def next32() -> int:
        nonlocal spare
        if spare is not None:
            value, spare = spare, None
            return value
        value = next64()
        spare = value >> 32
        return value & _M32

    order = list(range(n))
    for i in range(n - 1, 0, -1):
        mask = (1 << i.bit_length()) - 1
        draw = next32 if i <= _M32 else next64
        j = draw() & mask
        while j > i:
            j = draw() & mask
        order[i], order[j] = order[j], order[i]
    return order
