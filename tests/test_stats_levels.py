"""perflab.stats.levels: row selection, the analysis of one factor's levels, and the run-order verdict."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perflab.stats import StatsInputError, analyse, select_rows
from perflab.stats.levels import checks


def _campaign(rng: np.random.Generator, *, burst_from: int | None = None, blocks: int = 40) -> pd.DataFrame:
    """A tidy RMIT table of two levels of ``parallel``, one warm-up block, summary and interval rows.

    With ``burst_from`` the blocks from there on run in a burst regime: a lower level with a
    larger, serially dependent spread (as chapter 1's run-order panel shows).
    """
    rows, state = [], {1: 0.0, 4: 0.0}
    for block in range(-1, blocks):
        for position, parallel in enumerate(rng.permutation([1, 4])):
            mean, sd = (40e9, 0.4e9) if parallel == 1 else (42e9, 0.5e9)
            if burst_from is not None and block >= burst_from:
                state[parallel] = 0.6 * state[parallel] + rng.normal(0, 3e9)
                value = mean - 2e9 + state[parallel]
            else:
                value = rng.normal(mean, sd)
            common = {"campaign": "c", "run_id": f"{block}-{parallel}", "block": max(block, 0), "position": position,
                      "warmup": block < 0, "parallel": int(parallel), "metric": "throughput", "unit": "bit/s"}
            rows.append({**common, "summary": True, "value": value, "interval_start": np.nan})
            rows += [{**common, "summary": False, "value": value + d, "interval_start": float(i)}
                     for i, d in enumerate(rng.normal(0, 1e8, 2))]
    return pd.DataFrame(rows)


def test_select_rows_keeps_summary_rows_and_refuses_what_cannot_be_compared():
    df = _campaign(np.random.default_rng(1), blocks=6)
    sel = select_rows(df, "throughput")
    assert len(sel.data) == 12 and sel.unit == "bit/s" and sel.notes == ["excluded 6 warm-up rows"]
    with pytest.raises(StatsInputError, match="several rows for run"):
        select_rows(df, "throughput", {"interval_start": "*"}, source="t.parquet")
    per_run = select_rows(df, "throughput", {"interval_start": "*"}, per_run="median")
    assert len(per_run.data) == 12 and "median of 2-2 rows per run" in per_run.notes
    assert per_run.data["interval_start"].isna().all()  # an aggregated dimension no longer applies
    with pytest.raises(StatsInputError, match=r"t.parquet, select: .*no column 'stream'"):
        select_rows(df, "throughput", {"stream": None}, source="t.parquet")


def test_steady_campaign_gets_no_flag_and_a_careful_sentence():
    result = analyse(_campaign(np.random.default_rng(2)), metric="throughput", factor="parallel")
    assert result.comparisons[0].test == "paired t" and result.unit == "bit/s"  # RMIT blocks: paired
    assert list(result.summary["n"]) == [40, 40]
    assert all(not f for f in result.checks["flags"]), result.checks["flags"].tolist()
    assert result.verdict.startswith("No run-order check flags") and "cannot prove it" in result.verdict


def test_burst_regime_is_flagged_and_independence_is_not_claimed():
    result = analyse(_campaign(np.random.default_rng(3), burst_from=25), metric="throughput", factor="parallel")
    flags = [f for row in result.checks["flags"] for f in row]
    assert any("change in spread" in f for f in flags) and any("change in level" in f for f in flags)
    assert "not independent draws" in result.verdict and "No run-order check" not in result.verdict
    row = result.checks.set_index("parallel").loc[4]
    assert row["ljung_box_lags"] == 8 and row["variance_windows"] == 4
    assert 25 <= row["change_at"] <= 40  # the peak of the CUSUM sits near the regime change


def test_checks_name_too_short_levels():
    df = pd.DataFrame({"parallel": [1, 1, 1, 4, 4, 4, 4, 4], "value": np.arange(8.0), "block": range(8)})
    table = checks(df, "parallel")
    assert table.set_index("parallel").loc[1, "trend"] == "n < 4"


def test_too_few_runs_leave_independence_unchecked_and_say_so():
    result = analyse(_campaign(np.random.default_rng(4), blocks=3), metric="throughput", factor="parallel")
    assert result.verdict.startswith("The run-order checks need at least 4 runs per level")
    assert "independence is unchecked" in result.verdict and "contradicts" not in result.verdict
