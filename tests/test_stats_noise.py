"""The pre-registered sensitivity analysis: a blocked comparison adjusted for the within-block steal difference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perflab import questions
from perflab.report import latex, verdicts
from perflab.stats.noise import block_differences, steal_adjusted
from perflab.stats.verdict import decide


def _blocked(*, effect: float, steal_cost: float, extra_steal: float, blocks: int = 40, seed: int = 7) -> pd.DataFrame:
    """Two cells per block; level b is ``effect`` (relative) above a at equal steal; every unit of steal costs
    ``steal_cost`` of the value (relative), and b's samples see ``extra_steal`` more steal than a's (a busier guest
    loses more)."""
    rng = np.random.default_rng(seed)
    rows = []
    for blk in range(blocks):
        drift = rng.normal(0, 2.0)  # the block's shift, common to both cells
        for level in ("a", "b"):
            steal = float(np.clip(rng.uniform(0.0, 0.2) + (extra_steal if level == "b" else 0.0), 0, 1))
            value = 100 * (1 + (effect if level == "b" else 0.0)) * (1 - steal_cost * steal) + drift + rng.normal(0, 0.5)
            rows.append({"block": blk, "level": level, "value": value, "contention_steal": steal})
    return pd.DataFrame(rows)


def _decided(df: pd.DataFrame, expected: str = "higher", sesoi: float = 0.05):
    primary = decide(df, value="value", factor="level", a="a", b="b", expected=expected, sesoi=sesoi)
    return primary, steal_adjusted(df, primary, value="value", factor="level", a="a", b="b", expected=expected)


def test_a_planted_steal_effect_is_recovered_and_the_verdict_marked_sensitive():
    # b is 10 % faster at equal steal, but sees 10 points more steal, each costing 0.8 % of the value: the
    # primary comparison sees almost nothing; at the samples' mean steal (0.15) b is 8.8 above a's 92
    df = _blocked(effect=0.10, steal_cost=0.8, extra_steal=0.10)
    primary, adj = _decided(df)
    assert primary.verdict != "supported" and abs(primary.rel_diff) < 0.03, "the steal hides the effect"
    assert adj is not None and adj.blocks == 40
    assert adj.rel_diff == pytest.approx(8.8 / 92, abs=0.01) and adj.ci_low > 0.05
    # the slope: (b - a) falls by about 84 per unit of steal difference (88 and 80 per unit in b and a)
    assert adj.per_steal_point == pytest.approx(-84 / 100 / 92, rel=0.1)
    assert adj.verdict == "supported" and adj.sensitive


def test_without_a_steal_effect_the_adjustment_agrees_with_the_primary_verdict():
    df = _blocked(effect=0.10, steal_cost=0.0, extra_steal=0.10)
    primary, adj = _decided(df)
    assert primary.verdict == adj.verdict == "supported" and not adj.sensitive
    assert adj.rel_diff == pytest.approx(primary.rel_diff, abs=0.02)


def test_the_adjustment_needs_blocks_with_steal_and_a_blocked_decision():
    df = _blocked(effect=0.10, steal_cost=1.0, extra_steal=0.0, blocks=6)
    primary, _ = _decided(df)
    assert steal_adjusted(df.assign(contention_steal=np.nan), primary, value="value", factor="level", a="a",
                          b="b", expected="higher") is None, "no steal recorded: no adjustment"
    welch = decide(df, value="value", factor="level", a="a", b="b", expected="higher", sesoi=0.05, test="welch")
    assert steal_adjusted(df, welch, value="value", factor="level", a="a", b="b", expected="higher") is None
    two = df[df["block"] < 2]
    assert len(block_differences(two, value="value", factor="level", a="a", b="b")) == 2
    assert steal_adjusted(two, decide(two, value="value", factor="level", a="a", b="b", expected="higher",
                                      sesoi=0.05), value="value", factor="level", a="a", b="b",
                          expected="higher") is None, "two blocks leave no degree of freedom for the slope"


def test_the_verdict_table_shows_the_adjusted_estimate_beside_the_primary_and_marks_a_sensitive_verdict():
    df = _blocked(effect=0.10, steal_cost=0.8, extra_steal=0.10)
    q = questions.Question(id="Q1", study="s", claim="b is faster", campaign="c", metric="value", factor="level",
                           baseline="a", versus="b", expected="higher", sesoi=0.05, sesoi_source="x",
                           sesoi_reason="x", n=40)
    primary, _ = _decided(df)
    results = [(q, primary, "")]
    adjusted = verdicts.sensitivity(results, lambda c: df.assign(metric="value", summary=True, run_id=range(len(df))))
    assert set(adjusted) == {"Q1"} and adjusted["Q1"].sensitive
    tex = verdicts.table_tex("s", results, caption="c", label="tab:v", adjusted=adjusted)
    assert f"Change\\\\{{}}{{[}}{latex.level_text(primary.ci_level)} CI{{]}}" in tex and "Levels of" not in tex
    assert "steal-adj." in tex and f"s: {latex.percent_change(adjusted['Q1'].rel_diff)}" in tex and "$^\\dagger$\\\\{}(supported)" in tex and verdicts.SENSITIVE in tex
    plain = verdicts.table_tex("s", results, caption="c", label="tab:v")
    body = plain.split("s: the change")[0]
    assert "$^\\dagger$" not in body and "s: \\num" not in body, "without the analysis: no mark, no estimate"
    values = verdicts.values("s", results, adjusted=adjusted)
    assert values["s/verdict/Q1/sensitive"] == verdicts.SENSITIVE and values["s/verdict/Q1/adjusted/verdict"] == "supported"
    assert f"Q1 ({primary.verdict}; adjusted" in values["s/verdicts/noise"] and verdicts.SENSITIVE in values["s/verdicts/noise"]
