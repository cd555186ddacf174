"""Study 003 (OpenStack vs OpenNebula): Tables 2 and 3 recomputed from the published tables, a rerun's
summaries through the same tables, and the rerun kept for real hosts (nothing runs on the lab)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perflab import campaign as campaign_mod, study
from perflab.report import platforms

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "003-openstack-opennebula"
PUB = ROOT / "data" / "raw" / "published"
LEVELS = ["native", "stacka", "stackb"]


def _analysis(name: str) -> study.Analysis:
    s = next(s for s in study.discover(ROOT) if s.id == "003-openstack-opennebula")
    return next(a for a in s.analyses if a.name == name)


def _published(name: str) -> tuple[dict, pd.DataFrame]:
    params = _analysis(name).parameters
    levels = params.get("levels", LEVELS)
    summaries = platforms.published_summaries(ROOT / params["published"], groups=params["published_groups"])
    return params, platforms.table(summaries, levels=levels, pair=("stacka", "stackb"))


def test_published_table2_recomputed_with_bonferroni_over_its_rows_and_intervals_to_match():
    _, tab = _published("003-openstack-opennebula-table2")
    assert list(tab["name"])[:2] == ["LINPACK CPU", "IPerf Throughput"] and len(tab) == 10
    assert tab.attrs["correction"] == "Bonferroni" and tab.attrs["family"] == 10
    assert tab.attrs["level"] == pytest.approx(1 - 0.05 / 10)  # the intervals are adjusted as the p-values are
    iperf = tab.set_index("name").loc["IPerf Throughput"]
    # OpenNebula 920.77 vs OpenStack 666.85 Mbit/s: +38.1 %, OpenNebula better, p far below 0.001
    assert iperf["better"] == "stackb" and iperf["p_adjusted"] < 1e-6
    assert iperf["rel_diff"] == pytest.approx(920.77 / 666.85 - 1, abs=1e-12)
    assert iperf["rel_diff_ci_low"] < iperf["rel_diff"] < iperf["rel_diff_ci_high"]
    assert (tab["p_adjusted"] >= tab["p"]).all()


def test_published_table3_keeps_unreadable_rows_out_of_the_family():
    _, tab = _published("003-openstack-opennebula-table3")
    assert len(tab) == 64
    assert tab.attrs["family"] == int(np.isfinite(tab["p"]).sum()) < 64
    assert tab.loc[tab["name"] == "OMP FT 2", "p"].isna().all()


def test_a_real_hosts_rerun_goes_through_the_same_tables_as_the_published_one(tmp_path):
    """The rerun on machines with KVM (real-hosts/) fills Table 2's layout and the in-kind comparison;
    here the published summaries, OpenNebula's iperf halved, stand for such a rerun's."""
    params, pub = _published("003-openstack-opennebula-table2")
    summaries = platforms.published_summaries(ROOT / params["published"], groups=params["published_groups"])
    iperf = (summaries["name"] == "IPerf Throughput") & (summaries["group"] == "stackb")
    summaries.loc[iperf, "mean"] /= 2
    rerun = platforms.table(summaries, levels=LEVELS, pair=("stacka", "stackb"))
    out = platforms.write(name="t003", rerun=rerun, published=pub, levels=LEVELS, labels=params["labels"],
                          pair=("stacka", "stackb"), native="native", paper_dir=tmp_path, title="Table 2",
                          inputs=[], generator="test")
    text = out["rerun"].read_text()
    assert "LINPACK CPU" in text and "$p$ Bonferroni" in text and "adjusted as the p-values are" in text
    kind = platforms.in_kind(rerun, pub, pair=("stacka", "stackb"), native="native").set_index("name")
    # the seed finds OpenNebula better on iperf; the halved "rerun" finds OpenStack better: a disagreement
    assert kind.loc["IPerf Throughput", "better_rerun"] == "stacka" and not kind.loc["IPerf Throughput", "agree"]
    assert "\\plset{t003/rows}{10}" in out["macros"].read_text()


def test_nothing_of_the_study_runs_on_the_lab_and_its_rerun_waits_on_real_hosts_at_the_seeds_sizes():
    s = next(s for s in study.discover(ROOT) if s.id == "003-openstack-opennebula")
    assert not s.campaigns, "no setting of one kernel stands for a cloud stack (campaigns/README.md)"
    hpcc = campaign_mod.load(STUDY / "real-hosts" / "kvm-hpcc.yaml")
    assert hpcc.doc["benchmark"]["params"]["n"] == 6000 and hpcc.repetitions == 40  # the seed's N and runs


def test_the_published_table3_is_one_long_table_its_interval_level_in_the_header():
    """64 rows: one longtable (never four numbered parts); Bonferroni's adjusted level said in the header, as the note."""
    params, tab = _published("003-openstack-opennebula-table3")
    tex = platforms.table_latex(tab, levels=params["levels"], labels=params["labels"], pair=("stacka", "stackb"),
                                caption="Table 3", label="tab:t3")
    level = f"{100 * tab.attrs['level']:.4g}\\,\\%"
    assert "\\pllong" in tex and "rows 1--" not in tex and "\\plfloat" not in tex
    assert f"{{[}}{level} CI{{]}}" in tex and f"Fieller's {level} interval" in tex and "[95\\,\\% CI]" not in tex
