"""The run-order verdict: at most 5 % false alarms on independent, identically distributed data,
and a sentence that says which way each flag moves the p-values; the pre-registered questions' verdict:
"supported" at most alpha of the time whenever the true effect is at most the SESOI, and a power column
that predicts it at twice the SESOI."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

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


# The pre-registered questions' verdict (perflab.stats.verdict): minimum-effect semantics.
SESOI, CV, BLOCKS, DECIDED = 0.05, 0.08, 40, 200


def _question(rng: np.random.Generator, effect: float) -> pd.DataFrame:
    """One campaign of BLOCKS blocks, two cells: b = a × (1 + effect), each sample with CV 8 %."""
    rows = []
    for b in range(BLOCKS):
        rows += [{"block": b, "cell": "a", "v": 100 * (1 + rng.normal(0, CV))},
                 {"block": b, "cell": "b", "v": 100 * (1 + effect) * (1 + rng.normal(0, CV))}]
    return pd.DataFrame(rows)


def _decisions(effect: float, seed: int, expected: str = "higher"):
    from perflab.stats.verdict import decide
    rng = np.random.default_rng(seed)
    return [decide(_question(rng, effect), value="v", factor="cell", a="a", b="b", expected=expected, sesoi=SESOI)
            for _ in range(DECIDED)]


@pytest.mark.parametrize("fraction", [0.0, 0.5, 0.8, 1.0])
def test_supported_at_most_alpha_whenever_the_true_effect_is_at_most_the_sesoi(fraction):
    """Before, "supported" needed only significance: 0.8 × SESOI came out supported in about half the campaigns."""
    words = [d.verdict for d in _decisions(fraction * SESOI, seed=int(100 * fraction) + 7)]
    assert words.count("supported") / DECIDED <= 0.05, words.count("supported")
    assert "equivalent" not in words  # a directional claim is never "equivalent"


def test_the_power_column_predicts_supported_at_twice_the_sesoi():
    """The printed power at the SESOI is the rate of "supported" when the true effect is 2 × SESOI."""
    decided = _decisions(2 * SESOI, seed=11)
    rate = sum(d.verdict == "supported" for d in decided) / DECIDED
    power = float(np.mean([d.power for d in decided]))
    se = math.sqrt(power * (1 - power) / DECIDED)
    print(f"P(supported | 2 x SESOI) = {rate:.2f}, predicted power {power:.2f}")
    assert 0.4 < power < 0.99 and abs(rate - power) <= 4 * se + 0.03


def test_tost_power_is_a_lower_bound_of_equivalent_at_no_effect():
    decided = _decisions(0.0, seed=5, expected="equivalent")
    rate = sum(d.verdict == "equivalent" for d in decided) / DECIDED
    power = float(np.mean([d.power for d in decided]))
    assert rate >= power - 4 * math.sqrt(max(power * (1 - power), 0.01) / DECIDED), (rate, power)
    assert rate > 0.5


def test_a_negligible_change_against_a_directional_claim_is_contradicted_not_equivalent():
    """Claim C15 of study 002 (a neighbour lowers throughput) met by -0.25 % [-0.35, -0.14]."""
    from perflab.stats.verdict import verdict_word
    assert verdict_word(True, -0.0035, -0.0014, "lower", 0.05) == "contradicted"
    assert verdict_word(False, 0.066, 0.176, "higher", 0.10) == "direction only"  # 002 Q11: +12.0 % [6.6, 17.6]
    assert verdict_word(False, 0.12, 0.30, "higher", 0.10) == "supported"
    assert verdict_word(False, -0.30, -0.12, "higher", 0.10) == "contradicted"
    assert verdict_word(False, -0.02, 0.30, "higher", 0.10) == "inconclusive"
    assert verdict_word(False, 0.12, 0.30, "higher", 0.10, "no") == "not testable here"
