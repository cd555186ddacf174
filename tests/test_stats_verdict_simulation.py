"""The run-order verdict: at most 5 % false alarms on independent, identically distributed data,
and a sentence that says which way each flag moves the p-values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from perflab.stats.levels import _block_effect, checks, verdict

CAMPAIGNS = 100


def _campaign(rng: np.random.Generator, *, blocks: int = 12, shift: float = 0.0) -> pd.DataFrame:
    rows = []
    for b in range(blocks):
        common = rng.normal(0, shift)
        for pos, lv in enumerate(rng.permutation(3)):
            rows.append({"level": int(lv), "block": b, "position": pos, "value": 10 + common + rng.normal(0, 1)})
    return pd.DataFrame(rows)


def _verdict(df: pd.DataFrame) -> str:
    return verdict(checks(df, "level"), _block_effect(df, "level"), factor="level")


def test_iid_campaigns_raise_at_most_five_percent_false_alarms():
    rng = np.random.default_rng(2027)
    alarms = sum(_verdict(_campaign(rng)).startswith("Run-order checks flag") for _ in range(CAMPAIGNS))
    # the checks are Holm-adjusted as one family; before, about 27 % of such campaigns were flagged
    se = math.sqrt(0.05 * 0.95 / CAMPAIGNS)
    assert alarms / CAMPAIGNS <= 0.05, (alarms, se)


def test_block_shift_is_named_with_the_right_direction():
    text = _verdict(_campaign(np.random.default_rng(1), blocks=20, shift=3.0))
    assert "block (round) shifts the values" in text and "Holm-adjusted" in text
    assert "blocked analysis" in text and "too large, not too small" in text
    assert "overstate" not in text
