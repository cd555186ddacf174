"""perflab.report.scenarios: scenarios against a baseline per panel, paired by the RMIT blocks when the
design has them, Welch's t otherwise."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from perflab.report import scenarios

ORDER = ["alone", "stress"]


def _samples(shift: np.ndarray, *, blocks: bool = True) -> pd.DataFrame:
    """Eight blocks of one 'alone' and one 'stress' sample at one frame size; ``shift`` moves both of a block."""
    rows = []
    for b, s in enumerate(shift):
        rows.append({"run_id": f"a{b}", "block": b, "frame": "64", "scenario": "alone", "value": 100.0 + s})
        rows.append({"run_id": f"s{b}", "block": b, "frame": "64", "scenario": "stress",
                     "value": 98.0 + s + (0.1 if b % 2 else -0.1)})
    df = pd.DataFrame(rows)
    return df if blocks else df.drop(columns="block")


def test_blocks_cancel_a_shift_of_the_machine_between_rounds():
    shift = np.array([0.0, 9.0, -7.0, 4.0, -3.0, 8.0, -5.0, 1.0])  # each round moves both cells together
    blocked = scenarios.analyse({"t": _samples(shift)}, panel="frame", scenario="scenario", baseline="alone",
                                order=ORDER)
    welch = scenarios.analyse({"t": _samples(shift, blocks=False)}, panel="frame", scenario="scenario",
                              baseline="alone", order=ORDER)
    b, w = (r[r["scenario"] == "stress"].iloc[0] for r in (blocked, welch))
    assert bool(b["blocked"]) and not bool(w["blocked"])
    a, s = (_samples(shift).query(f"scenario == '{x}'").sort_values("block")["value"].to_numpy() for x in ORDER)
    assert b["p"] == pytest.approx(stats.ttest_rel(s, a).pvalue, rel=1e-9)
    assert w["p"] == pytest.approx(stats.ttest_ind(s, a, equal_var=False).pvalue, rel=1e-9)
    assert b["p"] < 1e-6 < 0.05 < w["p"]  # the -2 % is clear within blocks and lost in the rounds' spread
    assert b["mde"] < 0.01 < w["mde"]


def test_the_table_names_the_test_it_used():
    shift = np.arange(8.0)
    metric = [scenarios.Metric(key="t", label="T")]
    for blocks, words in ((True, "paired t on the differences within the RMIT blocks"), (False, "p: Welch's t")):
        result = scenarios.analyse({"t": _samples(shift, blocks=blocks)}, panel="frame", scenario="scenario",
                                   baseline="alone", order=ORDER)
        text = scenarios.table(result, metric, panel="frame", panel_label="Frame", scenario="scenario",
                               caption="c", label="l")
        assert words in text
        # a mean above its interval, a change above its adjusted interval: columns narrow enough to stand upright
        assert re.search(r"\\plcell\{\\num\{[\d.]+\}\\\\\{\}\[", text)
        assert re.search(r"\\plcell\{\\num\{[+-][\d.]+\}\\,\\%\\\\\{\}\[", text)


def test_each_panel_level_gets_its_own_table_named_in_its_caption():
    """Two frame sizes: two tables (labels l, l-2), each caption naming its frame, no frame column; one frame size:
    one table, the frame said in the note. Loss with zeros: no mean interval below 0, no change below -100 %."""
    shift = np.arange(8.0)
    two = pd.concat([_samples(shift), _samples(shift).assign(frame="1518", value=lambda d: d["value"] * 3)])
    metric = [scenarios.Metric(key="t", label="T", unit="u")]
    result = scenarios.analyse({"t": two}, panel="frame", scenario="scenario", baseline="alone", order=ORDER)
    text = scenarios.table(result, metric, panel="frame", panel_label="Frame", scenario="scenario", caption="UDP",
                           label="tab:l", panel_unit="B")
    assert re.findall(r"\\caption\{([^}]*)\}\\label\{([^}]*)\}", text) == [("UDP: Frame 64 B", "tab:l"),
                                                                            ("UDP: Frame 1518 B", "tab:l-2")]
    assert "& Frame &" not in text and "Frame &" not in text.split("\\midrule")[0]
    one = scenarios.table(scenarios.analyse({"t": _samples(shift)}, panel="frame", scenario="scenario",
                                            baseline="alone", order=ORDER),
                          metric, panel="frame", panel_label="Frame", scenario="scenario", caption="UDP",
                          label="tab:o", panel_unit="B")
    assert one.count("\\caption{") == 1 and "Frame 64 B; n = 8 samples in every cell." in one
    loss = _samples(shift).assign(value=[0.0] * 10 + [0.3, 0.0, 0.0, 0.4, 0.1, 2.0])
    res = scenarios.analyse({"loss": loss}, panel="frame", scenario="scenario", baseline="alone", order=ORDER)
    assert (res["ci_low"] >= 0).all() and (res["rel_low"].dropna() >= -1).all()


def test_a_share_in_percent_changes_by_points_not_by_a_ratio_of_near_zero_means():
    """A neighbour's CPU load from 0.15 % idle to 89 % busy: a ratio (+58 000 %) says nothing a reader can use;
    the table and the inline value give the difference of means in percentage points with the paired t's
    interval (here exactly scipy's on the block differences, at Bonferroni's level for one comparison)."""
    rng = np.random.default_rng(7)
    idle = 0.0015 + rng.normal(0, 0.0001, 8)
    busy = 0.89 + rng.normal(0, 0.002, 8)
    rows = [{"run_id": f"{s}{b}", "block": b, "frame": "64", "scenario": s, "value": v}
            for s, xs in (("alone", idle), ("stress", busy)) for b, v in enumerate(xs)]
    metric = [scenarios.Metric(key="nb", label="Neighbour CPU", unit="%", scale=0.01)]
    result = scenarios.analyse({"nb": pd.DataFrame(rows)}, panel="frame", scenario="scenario", baseline="alone",
                               order=ORDER)
    r = result[result["scenario"] == "stress"].iloc[0]
    d = busy - idle
    half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    assert (r["diff"], r["diff_low"], r["diff_high"]) == pytest.approx((d.mean(), d.mean() - half, d.mean() + half))
    text = scenarios.table(result, metric, panel="frame", panel_label="Frame", scenario="scenario", caption="c",
                           label="l")
    points = f"{100 * d.mean():.1f}"
    assert f"\\num{{+{points}}}\\,pp" in text and "percentage points (pp)" in text
    assert "\\,\\%\\\\{}[" not in text, "no relative change for a share"
    inline = scenarios.values(result, metric, name="n", panel="frame", scenario="scenario")
    assert inline["n/nb/64/stress/change"] == f"\\num{{+{points}}}\\,pp"
    assert inline["n/nb/64/stress/mde"].endswith("\\,pp")


def test_zero_in_every_sample_of_both_cells_is_no_change_with_no_p_not_plus_zero_percent_at_p_one():
    """No loss at all, alone or beside the neighbour: the table says "same" (no ratio of zeros, no p of a test
    that cannot run), its note says why, and the inline value says it in words."""
    zero = _samples(np.zeros(8)).assign(value=0.0)
    metric = [scenarios.Metric(key="loss", label="Loss", unit="%", scale=1.0)]
    result = scenarios.analyse({"loss": zero}, panel="frame", scenario="scenario", baseline="alone", order=ORDER)
    r = result[result["scenario"] == "stress"].iloc[0]
    assert bool(r["identical"]) and r["diff"] == 0.0 and np.isnan(r["rel_diff"]) and np.isnan(r["p_adjusted"])
    text = scenarios.table(result, metric, panel="frame", panel_label="Frame", scenario="scenario", caption="c",
                           label="l")
    stress_row = next(line for line in text.splitlines() if "& stress &" in line)
    assert "} & same & -- & --" in stress_row and "1.00" not in text
    assert "no change, and nothing for a test to weigh" in text
    inline = scenarios.values(result, metric, name="n", panel="frame", scenario="scenario")
    assert inline["n/loss/64/stress/change"].startswith("none") and "n/loss/64/stress/p-adj" not in inline
    assert inline["n/loss/comparisons"] == "0"


def test_a_scenario_the_campaign_did_not_measure_gets_no_place_on_the_axis():
    """order names idle, the campaign measured alone and stress only: two ticks, stress keeps its marker of order."""
    order = ["alone", "idle", "stress"]
    samples = {"t": _samples(np.arange(8.0))}
    result = scenarios.analyse(samples, panel="frame", scenario="scenario", baseline="alone", order=order)
    fig = scenarios.figure(samples, result, [scenarios.Metric(key="t", label="T")], panel="frame",
                           panel_label="Frame", scenario="scenario", order=order)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["alone", "stress"]
    assert ax.get_xlim() == (-0.5, 1.5)
    stress = [line for line in ax.get_lines() if line.get_xdata().size and abs(line.get_xdata()[0] - 1) < 0.2]
    caps = {"_"}  # the interval's caps
    assert stress and {line.get_marker() for line in stress} - caps == {scenarios.style.look(2)["marker"]}


def test_the_headers_say_the_levels_of_the_mean_and_of_the_adjusted_intervals():
    """The means' 95 % intervals, the changes' Bonferroni-adjusted ones (two frame sizes, two comparisons: 97.5 %)."""
    metric = [scenarios.Metric(key="t", label="T", unit="u")]
    two = pd.concat([_samples(np.arange(8.0)), _samples(np.arange(8.0)).assign(frame="1518")])
    result = scenarios.analyse({"t": two}, panel="frame", scenario="scenario", baseline="alone", order=ORDER)
    text = scenarios.table(result, metric, panel="frame", panel_label="Frame", scenario="scenario", caption="UDP",
                           label="tab:l")
    level = f"{100 * result['ci_level'].dropna().iloc[0]:.4g}"
    assert "Mean\\\\{}{[}95\\,\\% CI{]}" in text and f"Change\\\\{{}}{{[}}{level}\\,\\% CI{{]}}" in text
    assert level == "97.5" and "adj. CI" not in text and "\\,\\%" in scenarios._mde_cell(result.iloc[1], metric[0])


def test_the_figure_names_the_metrics_it_does_not_draw_in_lower_case_mid_sentence():
    """Out of order and reordering all zero: the line under the panels says them as words of its sentence
    ("out of order and reordering"), an acronym kept (UDP loss)."""
    samples = {"t": _samples(np.arange(8.0))}
    samples.update({k: _samples(np.zeros(8)).assign(value=0.0) for k in ("ooo", "reord", "loss")})
    metrics = [scenarios.Metric(key="t", label="Throughput"), scenarios.Metric(key="ooo", label="Out of order"),
               scenarios.Metric(key="reord", label="Reordering"), scenarios.Metric(key="loss", label="UDP loss")]
    result = scenarios.analyse(samples, panel="frame", scenario="scenario", baseline="alone", order=ORDER)
    fig = scenarios.figure(samples, result, metrics, panel="frame", panel_label="Frame", scenario="scenario",
                           order=ORDER)
    assert len(fig.axes) == 1
    assert fig.get_supxlabel() == ("Not drawn: out of order, reordering and UDP loss, zero or missing in every "
                                   "sample.")
