"""Multi-factor designs and comparisons from summary statistics, against direct scipy/statsmodels calls."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import AnovaRM, anova_lm

from perflab.stats import StatsInputError, compare, load_published, omnibus
from perflab.stats import aligned_rank_anova, cell_means, factorial_anova
from perflab.stats import per_row, published_vs_rerun, welch_from_stats
from perflab.stats.summaries import IN_KIND_NOTE

PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "raw" / "published"


def _grid(rng: np.random.Generator, interaction: float = 0.0, reps: int = 6) -> pd.DataFrame:
    """numjobs x iodepth x 6 repetitions: main effects of both, plus an optional interaction."""
    rows = []
    for numjobs in (1, 4):
        for iodepth in (1, 8, 32):
            mean = 100 + 10 * (numjobs == 4) + 5 * np.log2(iodepth) + interaction * (numjobs == 4) * (iodepth == 32)
            rows += [{"numjobs": numjobs, "iodepth": iodepth, "iops": v} for v in rng.normal(mean, 3, reps)]
    return pd.DataFrame(rows)


def test_factorial_anova_matches_statsmodels_and_states_its_type():
    df = _grid(np.random.default_rng(1), interaction=8.0)
    out = factorial_anova(df, "iops", ["numjobs", "iodepth"]).set_index("term")
    ref = anova_lm(smf.ols("iops ~ C(numjobs) * C(iodepth)", data=df).fit(), typ=2)
    assert out.loc["numjobs:iodepth", "F"] == pytest.approx(ref.loc["C(numjobs):C(iodepth)", "F"])
    assert out.loc["iodepth", "p"] == pytest.approx(ref.loc["C(iodepth)", "PR(>F)"])
    assert out.loc["Residual", "sum_sq"] == pytest.approx(ref.loc["Residual", "sum_sq"])
    assert out.loc["numjobs:iodepth", "p"] < 0.001 and 0 < out.loc["numjobs", "partial_eta_sq"] < 1
    assert out.attrs["anova_type"].startswith("type II")
    three = factorial_anova(df, "iops", ["numjobs", "iodepth"], typ=3)
    assert three.attrs["anova_type"].startswith("type III")
    # balanced design: type II and III agree on the interaction
    assert three.set_index("term").loc["numjobs:iodepth", "F"] == pytest.approx(out.loc["numjobs:iodepth", "F"])


def test_aligned_rank_transform_finds_the_interaction_and_reduces_to_ranks_for_one_factor():
    df = _grid(np.random.default_rng(2), interaction=15.0)
    df["iops"] = np.exp(df["iops"] / 20)  # a monotone, skewing transform
    art = aligned_rank_anova(df, "iops", ["numjobs", "iodepth"]).set_index("term")
    assert list(art.index) == ["numjobs", "iodepth", "numjobs:iodepth"]
    assert art.loc["numjobs:iodepth", "p"] < 0.01 and art.loc["iodepth", "p"] < 0.001
    one = aligned_rank_anova(df, "iops", ["iodepth"]).iloc[0]
    ranks = stats.rankdata(df["iops"])
    ref = stats.f_oneway(*[ranks[df["iodepth"] == lv] for lv in (1, 8, 32)])
    assert one["F"] == pytest.approx(ref.statistic) and one["p"] == pytest.approx(ref.pvalue)


def test_no_interaction_is_not_flagged_and_cell_means_feed_the_plots():
    df = _grid(np.random.default_rng(3))
    assert factorial_anova(df, "iops", ["numjobs", "iodepth"]).set_index("term").loc["numjobs:iodepth", "p"] > 0.05
    cells = cell_means(df, "iops", ["numjobs", "iodepth"])
    assert len(cells) == 6 and (cells["n"] == 6).all()
    assert cells["mean"].iloc[0] == pytest.approx(df[(df.numjobs == 1) & (df.iodepth == 1)]["iops"].mean())
    with pytest.raises(StatsInputError, match="at least 2 values in every cell"):
        aligned_rank_anova(df.drop_duplicates(["numjobs", "iodepth"]), "iops", ["numjobs", "iodepth"])
    with pytest.raises(StatsInputError, match="non-blank group label"):
        factorial_anova(df.assign(numjobs=df["numjobs"].astype(str).replace("4", "")), "iops", ["numjobs"])


def test_welch_from_stats_matches_the_raw_data_comparison():
    rng = np.random.default_rng(4)
    a, b = rng.normal(10, 1, 30), rng.normal(11, 2, 8)
    row = welch_from_stats(a.mean(), a.std(ddof=1), 30, b.mean(), b.std(ddof=1), 8).iloc[0]
    c = compare(a, b)
    assert row["p"] == pytest.approx(c.p_value) and row["t"] == pytest.approx(c.statistic)
    assert (row["diff_ci_low"], row["diff_ci_high"]) == pytest.approx(c.estimate_ci)
    assert (row["rel_diff_ci_low"], row["rel_diff_ci_high"]) == pytest.approx(c.rel_diff_ci)


def test_per_row_tests_over_seed_003_table_3_name_their_correction():
    table = load_published(PUBLISHED / "003-openstack-opennebula-table3-nas.csv")
    out = per_row(table, a="OpenStack", b="OpenNebula")
    assert out.attrs["correction"] == "Holm" and out.attrs["family"] == int(np.isfinite(out["p"]).sum()) > 40
    finite = out.dropna(subset=["p"])
    assert (finite["p_adjusted"] >= finite["p"] - 1e-15).all()
    bt = out.set_index("name").loc["OMP BT 1"]
    ref = stats.ttest_ind_from_stats(249.47, 3.02, 40, 252.74, 1.07, 40, equal_var=False)
    assert bt["p"] == pytest.approx(ref.pvalue) and bt["diff"] == pytest.approx(249.47 - 252.74)
    assert per_row(table, a="OpenStack", b="OpenNebula", correction="bh").attrs["correction"] == "Benjamini-Hochberg"
    with pytest.raises(StatsInputError, match="groups 'OpenStack' and 'AWS'"):
        per_row(table, a="OpenStack", b="AWS")


def test_published_vs_rerun_gives_the_ratio_and_says_in_kind():
    rerun = np.random.default_rng(5).normal(126.0, 2.0, 10)
    row = published_vs_rerun({"mean": 252.74, "sd": 1.07, "n": 40}, rerun)
    assert row["ratio"] == pytest.approx(rerun.mean() / 252.74)
    assert row["ratio_ci_low"] < row["ratio"] < row["ratio_ci_high"] and row["p"] < 0.001
    assert row["note"] == IN_KIND_NOTE and "in kind only" in row["note"]
    assert published_vs_rerun({"mean": 1.0, "sd": 0.1, "n": 5}, [1.0, 1.1], same_setup=True)["note"].startswith("same")


def test_paired_omnibus_defaults_to_repeated_measures_anova_and_runs_its_post_hoc():
    rng = np.random.default_rng(6)
    block = rng.normal(0, 2, 12)
    groups = {g: 50 + shift + block + rng.normal(0, 0.5, 12) for g, shift in (("x", 0.0), ("y", 0.3), ("z", 1.5))}
    result = omnibus(groups, paired=True)
    long = pd.DataFrame([(g, i, v) for g, vals in groups.items() for i, v in enumerate(vals)],
                        columns=["group", "block", "value"])
    ref = AnovaRM(long, "value", "block", within=["group"]).fit().anova_table.iloc[0]
    assert result.test == "repeated-measures ANOVA" and result.statistic == pytest.approx(ref["F Value"])
    assert result.posthoc == "pairwise paired t (Holm-adjusted)" and len(result.pairs) == 3
    pair = next(p for p in result.pairs if (p["group_a"], p["group_b"]) == ("x", "z"))
    raw = stats.ttest_rel(groups["z"], groups["x"])
    assert pair["diff"] == pytest.approx(np.mean(groups["z"] - groups["x"])) and pair["p_adjusted"] >= raw.pvalue
    friedman = omnibus(groups, paired=True, test="friedman")
    assert friedman.p_value == pytest.approx(stats.friedmanchisquare(*groups.values()).pvalue)
    assert {p["method"] for p in friedman.pairs} == {"pairwise Wilcoxon signed-rank (Holm-adjusted)"}


def test_an_interaction_term_in_the_anova_table_is_a_times_sign():
    from perflab.report.factorial import FactorialResult, anova_tex

    df = _grid(np.random.default_rng(1))
    result = FactorialResult(quantity="IOPS", unit="", factors=["numjobs", "iodepth"], data=df, cells=pd.DataFrame(),
                             anova=factorial_anova(df, "iops", ["numjobs", "iodepth"]))
    tex = anova_tex(result, caption="ANOVA", label="tab:a")
    assert "numjobs $\\times$ iodepth" in tex and " x " not in tex
