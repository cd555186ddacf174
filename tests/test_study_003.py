"""Study 003 (OpenStack vs OpenNebula): the platform levels' setup on the lab, a short run of each
benchmark, and Tables 2 and 3 regenerated from the committed raw data and the published tables."""

from __future__ import annotations

import dataclasses
import io
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import ROOT_ONLY, leftovers
from perflab import campaign as campaign_mod, inventory, lab as lab_mod, labspec, runner, store, study, tidy
from perflab.report import platforms

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "003-openstack-opennebula"
PUB = ROOT / "data" / "raw" / "published"
LAB_FILE = ROOT / "labs" / "003-cloud.yaml"
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


def test_chapter_tables_from_committed_raw_data(tmp_path):
    params = _analysis("003-openstack-opennebula-table2").parameters
    rows = [platforms.Benchmark.from_mapping(b) for b in params["benchmarks"]]
    tables = {c: tidy.frame(ROOT / "data" / "raw" / c)[0] for c in {b.campaign for b in rows}}
    rerun = platforms.table(platforms.rerun_summaries(tables, rows, factor="platform", levels=LEVELS),
                            levels=LEVELS, pair=("stacka", "stackb"))
    n = campaign_mod.load(STUDY / "campaigns" / "003-iperf.yaml").repetitions
    assert len(rerun) == 10 and (rerun[[f"n_{lv}" for lv in LEVELS]] == n).all().all()
    assert (rerun[[f"mean_{lv}" for lv in LEVELS]] > 0).all().all()
    _, pub = _published("003-openstack-opennebula-table2")
    out = platforms.write(name="t003", rerun=rerun, published=pub, levels=LEVELS, labels=params["labels"],
                          pair=("stacka", "stackb"), native="native", paper_dir=tmp_path, title="Table 2",
                          inputs=[], generator="test")
    text = out["rerun"].read_text()
    assert "LINPACK CPU" in text and "$p$ Bonferroni" in text and "adjusted as the p-values are" in text
    assert text.count(r"\\") >= 11
    kind = platforms.in_kind(rerun, pub, pair=("stacka", "stackb"), native="native")
    assert set(kind["better_rerun"]) <= {"stacka", "stackb", "none"}
    assert "\\plset{t003/rows}{10}" in out["macros"].read_text()


# --- on the lab: each platform level's setup, and one short run of each benchmark -------------

@pytest.fixture(scope="module")
def cloud():
    """labs/003-cloud.yaml under a name unique to this test process; removed (and checked gone) at the end."""
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    name = f"c{os.getpid() % 100000}"
    text = LAB_FILE.read_text().replace("lab: cloud3", f"lab: {name}")
    try:
        up = lab_mod.bring_up(labspec.load(LAB_FILE, text=text))
        yield name, inventory.load(up.inventory_path)
    finally:
        lab_mod.down(name)
        assert leftovers(name) == [], f"lab {name} left things behind"


def _in(lab: str, host: str, *argv: str) -> str:
    return subprocess.run(["ip", "netns", "exec", f"perflab-{lab}-{host}", *argv], check=True,
                          capture_output=True, text=True, timeout=30).stdout


@ROOT_ONLY
def test_platform_levels_setup(cloud):
    name, inv = cloud
    h2 = inv["h2"].addresses
    # native: h2 on h1's own link, no router; stack-a and stack-b: through r1
    assert " via " not in _in(name, "h1", "ip", "route", "get", h2["native"])
    for level in ("stacka", "stackb"):
        assert f"via {inv['r1'].addresses['lan']}" in _in(name, "h1", "ip", "route", "get", h2[level])
    # stack-a: a 1450-byte MTU and NAT on r1; stack-b: MTU 1500, no NAT
    assert "mtu 1450" in _in(name, "h2", "ip", "link", "show", "eth0")
    assert "mtu 1500" in _in(name, "h2", "ip", "link", "show", "eth1")
    rules = lab_mod.router_counters(name, "r1")
    assert "masquerade stacka" in rules and "masquerade stackb" not in rules
    # storage: stack-a's loop device reads its image with O_DIRECT (cache=none), stack-b's does not
    dio = {dev: subprocess.run(["losetup", "--noheadings", "-O", "DIO", e["device"]], check=True,
                               capture_output=True, text=True).stdout.strip()
           for dev, e in inv["h1"].devices.items()}
    assert dio == {"cnone": "1", "cwback": "0"}


@ROOT_ONLY
@pytest.mark.parametrize("campaign", ["003-hpcc", "003-iperf", "003-iozone"])
def test_short_run_of_each_benchmark(cloud, campaign, tmp_path):
    name, inv = cloud
    text = (STUDY / "campaigns" / f"{campaign}.yaml").read_text().replace("/cloud3/", f"/{name}/")
    text = text.replace("size: 32M", "size: 4M").replace("duration: 2,", "duration: 1,")
    full = campaign_mod.load(STUDY / "campaigns" / f"{campaign}.yaml", text=text)
    # a short copy, not the study's campaign: no quiet gate and no monitor rule of study campaigns
    short = dataclasses.replace(full, repetitions=1, warmups=0, fingerprints=False, source=str(tmp_path / "c.yaml"),
                                doc={**full.doc, "repetitions": 1, "warmups": 0, "fingerprints": False})
    summary = runner.run(short, inv, tmp_path, stream=io.StringIO())
    assert summary.complete, summary.failed
    assert store.verify(tmp_path / campaign) == []
    df, quarantine = tidy.frame(tmp_path / campaign)
    assert quarantine.empty, quarantine.to_dict("records")
    params = _analysis("003-openstack-opennebula-table2").parameters
    rows = [platforms.Benchmark.from_mapping(b) for b in params["benchmarks"] if b["campaign"] == campaign]
    means = platforms.rerun_summaries({campaign: df}, rows, factor="platform", levels=LEVELS)
    assert (means["n"] == 1).all() and (means["mean"] > 0).all()
