"""Study 002 (a filtering router beside a noisy neighbour): published claims, windowed jitter,
a short run of every scenario on the study's lab, and the chapter's tables from the committed
confirmatory data."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import ROOT_ONLY, leftovers
from perflab import campaign as campaign_mod, inventory, labspec, runner, tidy
from perflab.hosts import lab as lab_mod
from perflab.formats import records
from perflab.report import calibrate as calibrate_report, scenarios, verdicts
from perflab.stats import calibrate, windows
from perflab.stats._input import StatsInputError
from perflab.stats.family import min_detectable
from perflab.stats.verdict import NOT_TESTABLE
from statsmodels.stats.power import TTestIndPower
from perflab.tools import get

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies/002-pfsense-neighbour"
CLAIMS = ROOT / "data/raw/published/002-pfsense-neighbour-claims.csv"
SEED = ROOT / "../shared/seeds/002_b7331ff3ad8d0be7.txt"
FIXTURE = ROOT / "tests/fixtures/iperf3/udp-reverse-60s-windows.json"
ORDER = ["alone", "idle", "stress", "stress+net"]
CALIBRATION = STUDY / "campaigns/pfsense-calibrate.yaml"


def test_claims_are_complete_and_typed():
    rows = list(csv.DictReader(CLAIMS.open(encoding="utf-8")))
    assert [r["claim"] for r in rows] == [f"C{i:02d}" for i in range(1, 25)]
    assert {r["relation"] for r in rows} <= {"equal", "approx", "lt", "up_to", "qualitative"}
    assert {r["rerun"] for r in rows} <= {"yes", "no", "setting"}
    for r in rows:
        if r["relation"] != "qualitative":
            assert all(float(v.split("-")[0]) >= 0 for v in r["value"].split(";")), r["claim"]
    by_id = {r["claim"]: r for r in rows}
    assert by_id["C18"]["value"] == "45" and by_id["C20"]["value"] == "20"  # idle and loaded latency changes


@pytest.mark.skipif(not SEED.exists(), reason="the seed text is not beside the project")
def test_every_claim_quotes_its_line_of_the_seed():
    lines = SEED.read_text(encoding="utf-8").splitlines()
    for r in csv.DictReader(CLAIMS.open(encoding="utf-8")):
        first = r["quote"].split("...")[0].strip()
        assert first in lines[int(r["line"]) - 1], (r["claim"], first)


def test_seed_windows_scale_to_the_sample_length():
    assert windows.seed_windows(600) == [(90, 100), (190, 200), (290, 300), (390, 400), (490, 500)]
    flat = [t for w in windows.seed_windows(6) for t in w]
    assert flat == pytest.approx([0.9, 1.0, 1.9, 2.0, 2.9, 3.0, 3.9, 4.0, 4.9, 5.0])
    with pytest.raises(StatsInputError, match="positive duration"):
        windows.seed_windows(0)


def _fixture_intervals() -> pd.DataFrame:
    rows = [m for m in get("iperf3").parse(FIXTURE.read_text()) if "interval_start" in m.dims]
    frame = pd.DataFrame([{"metric": m.metric, "value": m.value, **m.dims} for m in rows])
    wide = frame.pivot_table(index=["interval_start", "interval_end"], columns="metric", values="value").reset_index()
    return wide.assign(run_id="r1")


def test_windowed_jitter_and_loss_match_hand_computed_values():
    # 60-s fixture: windows 9-10, 19-20, ..., 49-50 s hold intervals 9, 19, 29, 39, 49 (midpoints), whose
    # jitter is 0.1 (i + 1) ms = 1, 2, 3, 4, 5 ms and loss (i mod 3) / 100 = 0, 1, 2, 0, 1 %.
    got = windows.window_values(_fixture_intervals(), windows.seed_windows(60))
    assert got["intervals"].tolist() == [1] * 5
    assert got["jitter"].tolist() == pytest.approx([1e-3, 2e-3, 3e-3, 4e-3, 5e-3], rel=1e-9)
    assert got["loss"].tolist() == pytest.approx([0, 1, 2, 0, 1], abs=1e-12)
    assert got["jitter"].mean() == pytest.approx(3e-3, rel=1e-9)  # the seed's mean of the windows
    assert got["loss"].mean() == pytest.approx(0.8, rel=1e-9)


def test_a_window_without_interval_reports_is_refused():
    # 600-s windows over a 60-s sample: no interval lies in 90-100 s
    with pytest.raises(StatsInputError, match="window 90-100 s"):
        windows.window_values(_fixture_intervals(), windows.seed_windows(600))


def test_out_of_order_comes_from_the_stream():
    got = {m.metric: m.value for m in get("iperf3").parse(FIXTURE.read_text()) if not m.dims}
    assert got["out_of_order"] == 7 and got["loss"] == 1.0


@pytest.fixture(scope="module")
def study_lab():
    """The study's lab under a name unique to this test process; its inventory entries."""
    name = f"p{os.getpid() % 100000}"
    text = (ROOT / "labs/002-pfsense-neighbour.yaml").read_text().replace("lab: pfs002", f"lab: {name}")
    lab = lab_mod.bring_up(labspec.load(f"{name}.yaml", text=text))
    try:
        yield name, inventory.load(lab.inventory_path)
    finally:
        lab_mod.down(name)
    assert leftovers(name) == []


def _short(path: Path, tmp_path: Path, edits: tuple[tuple[str, str], ...], drop: tuple[str, ...]) -> campaign_mod.Campaign:
    """The campaign at ``path`` with each (old, new) of ``edits`` applied and the lines naming ``drop`` left out."""
    text = path.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    text = "\n".join(line for line in text.splitlines() if not any(d in line for d in drop))
    (tmp_path / "c.yaml").write_text(text + "\n")
    return campaign_mod.load(tmp_path / "c.yaml")


@ROOT_ONLY
@pytest.mark.lab
def test_every_scenario_runs_through_the_router_on_the_study_lab(study_lab, tmp_path):
    """One 1-s sample per scenario at 1518-byte frames: the neighbour loads of each scenario ran, the
    UDP flow crossed the firewall host, the metrics the analysis needs are there, and the firewall's
    and the neighbour's cgroups were read around every sample."""
    name, entries = study_lab
    campaign = _short(STUDY / "campaigns/pfsense-confirm-512-1518.yaml", tmp_path,
                      (("repetitions: 40", "repetitions: 1"), ("warmups: 1", "warmups: 0"), ("duration: 6,", "duration: 1,"),
                       ("timeout: 40", "timeout: 20"), ("fingerprints: true", "fingerprints: false")),
                      drop=('label: "512"',))
    before = lab_mod.router_counters(name, "fw")
    assert runner.run(campaign, entries, tmp_path / "raw", stream=open(os.devnull, "w")).complete
    after = lab_mod.router_counters(name, "fw")
    loads = {}
    for sample in (tmp_path / "raw/pfsense-confirm-512-1518/samples").iterdir():
        meta = json.loads((sample / "meta.json").read_text())
        loads[meta["cell"]["scenario"]] = " ".join(str(n) for n in meta.get("neighbours", []))
        got = {m.metric for m in get("iperf3").parse((sample / "stdout").read_text()) if not m.dims}
        assert {"throughput", "loss", "jitter", "out_of_order"} <= got
    assert sorted(loads) == sorted(ORDER)
    assert loads["alone"] == ""
    assert "sleep" in loads["idle"] and "stress-ng" not in loads["idle"]
    assert "stress-ng" in loads["stress"] and "--bidir" not in loads["stress"]
    assert "stress-ng" in loads["stress+net"] and "--bidir" in loads["stress+net"]
    grown = after["filter 0"][0] - before.get("filter 0", (0, 0))[0]
    assert grown > 4 * 7000, grown  # about 4 x 1 s of 7500 datagrams/s hit the UDP accept rule
    tidy.write(tmp_path / "raw/pfsense-confirm-512-1518", tmp_path / "processed")
    df = tidy.load(tmp_path / "processed/pfsense-confirm-512-1518.parquet")
    for host in ("fw", "nb"):
        cpu = scenarios.per_sample(df, scenarios.Metric(key=host, label=host, source="cgroup", name=host),
                                   factors=["frame", "scenario"])
        assert len(cpu) == 4 and (cpu["value"] >= 0).all(), cpu
    nb = scenarios.per_sample(df, scenarios.Metric(key="nb", label="nb", source="cgroup", name="nb"),
                              factors=["scenario"]).set_index("scenario")["value"]
    assert nb["stress"] > nb["alone"]  # stress-ng's CPU worker runs in the neighbour's cgroup, nothing does alone


@ROOT_ONLY
@pytest.mark.lab
def test_a_short_calibration_runs_and_gives_a_rate(study_lab, tmp_path):
    """Two 1-s rungs at 512-byte frames through the firewall alone, turned into a calibrated rate."""
    _, entries = study_lab
    keep = ('"512-5000"', '"512-40000"')
    text = CALIBRATION.read_text()
    drop = tuple(line.strip() for line in text.splitlines() if "label:" in line and not any(k in line for k in keep))
    campaign = _short(CALIBRATION, tmp_path, (("repetitions: 3", "repetitions: 1"), ("duration: 3}", "duration: 1}"),
                                              ("fingerprints: true", "fingerprints: false")), drop=drop)
    assert runner.run(campaign, entries, tmp_path / "raw", stream=open(os.devnull, "w")).complete
    tidy.write(tmp_path / "raw/pfsense-calibrate", tmp_path / "processed")
    df = tidy.load(tmp_path / "processed/pfsense-calibrate.parquet")
    loss = scenarios.per_sample(df, scenarios.Metric(key="loss", label="Loss", name="loss"), factors=["point"])
    rungs = calibrate_report.per_rung(loss, campaign.doc["factors"]["point"], factor="point")
    assert sorted(rungs["pps"]) == pytest.approx([5000, 40000])
    got = calibrate.highest_rates(rungs).iloc[0]
    low, high = (float(rungs.loc[rungs["pps"] == r, "value"].iloc[0]) for r in (5000, 40000))
    expected = np.nan if low >= 1 else 5000 if high >= 1 else 40000
    assert got["frame"] == 512 and got["rungs"] == 2
    assert (np.isnan(expected) and np.isnan(got["rate"])) or got["rate"] == expected, (low, high, got)


@pytest.fixture(scope="module")
def committed(tmp_path_factory) -> Path:
    raw = ROOT / "data/raw/pfsense-confirm-512-1518"
    if not (raw / "MANIFEST.sha256").exists():
        pytest.skip("the confirmatory run's raw data is not committed")
    out = tmp_path_factory.mktemp("processed")
    tidy.write(raw, out)
    return out / "pfsense-confirm-512-1518.parquet"


def _calibrated(name: str, out: Path) -> pd.DataFrame:
    """The calibrated rates per frame size from the committed calibration campaign ``name``."""
    raw = ROOT / "data/raw" / name
    if not (raw / "MANIFEST.sha256").exists():
        pytest.skip(f"the calibration's raw data ({name}) is not committed")
    tidy.write(raw, out)
    loss = scenarios.per_sample(tidy.load(out / f"{name}.parquet"),
                                scenarios.Metric(key="loss", label="Loss", name="loss"), factors=["point"])
    levels = records.read_campaign(raw / "campaign.json").spec["factors"]["point"]
    return calibrate.highest_rates(calibrate_report.per_rung(loss, levels, factor="point")).set_index("frame")


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> pd.DataFrame:
    """The calibrated rates from the committed calibration."""
    return _calibrated("pfsense-calibrate", tmp_path_factory.mktemp("calibration"))


def test_the_campaigns_at_capacity_offer_the_latest_quiet_calibrations_rates(tmp_path):
    """The forwarding capacity measured on the quiet machine by the latest calibration whose data exist:
    pfsense-calibrate-capacity-64 (the 64-byte ladder above pfsense-calibrate-capacity's, whose top rung lost
    nothing), pfsense-calibrate-capacity, pfsense-calibrate-quiet (a rate is replaced before the campaign's
    first sample)."""
    name = next(n for n in ("pfsense-calibrate-capacity-64", "pfsense-calibrate-capacity", "pfsense-calibrate-quiet")
                if (ROOT / "data/raw" / n / "MANIFEST.sha256").exists())
    rates = _calibrated(name, tmp_path)
    for level in campaign_mod.load(STUDY / "campaigns/pfsense-capacity-64.yaml").doc["factors"]["frame"]:
        row = rates.loc[int(level["label"])]
        pps = calibrate.packets_per_second(level["set"]["bitrate"], level["set"]["length"])
        assert row["rate"] > 0 and abs(pps - row["rate"]) <= row["step"], (name, level["label"], pps, row["rate"])


def test_the_campaigns_offer_the_calibrated_rates(calibrated):
    assert calibrated["rate"].notna().all() and (calibrated["n"] == 3).all()
    for name in ("pfsense-confirm-64", "pfsense-confirm-512-1518", "pfsense-confirm-8192", "pfsense-neighbour-60s",
                 "pfsense-neighbour-full"):
        frames = campaign_mod.load(STUDY / f"campaigns/{name}.yaml").doc["factors"]["frame"]
        for level in frames:
            row = calibrated.loc[int(level["label"])]
            pps = calibrate.packets_per_second(level["set"]["bitrate"], level["set"]["length"])
            assert abs(pps - row["rate"]) <= row["step"], (name, level["label"], pps, row["rate"])
            assert int(level["label"]) == level["set"]["length"] + calibrate.UDP_FRAME_OVERHEAD


def test_chapter_tables_from_the_committed_confirmatory_run(committed, tmp_path):
    metrics = [scenarios.Metric(key="throughput", label="Throughput", unit="Mbit/s", scale=1e6, name="throughput"),
               scenarios.Metric(key="jitter", label="Jitter", unit="ms", scale=1e-3, name="jitter"),
               scenarios.Metric(key="fw", label="Firewall CPU", unit="% of a CPU", scale=0.01, source="cgroup", name="fw")]
    df = tidy.load(committed)
    samples = {m.key: scenarios.per_sample(df, m, factors=["frame", "scenario"]) for m in metrics}
    result = scenarios.analyse(samples, panel="frame", scenario="scenario", baseline="alone", order=ORDER)
    reps = campaign_mod.load(STUDY / "campaigns/pfsense-confirm-512-1518.yaml").doc["repetitions"]
    assert len(result) == 3 * 2 * 4 and set(result["n"]) == {reps}
    assert result["blocked"].all(), "an RMIT campaign's scenarios are compared within its blocks"
    tested = result[result["scenario"] != "alone"]
    assert tested["p_adjusted"].notna().all() and (tested["p_adjusted"] >= tested["p"]).all()
    assert (tested["mde"].dropna() > 0).all()
    out = scenarios.write(samples, result, metrics, name="t002", panel="frame", panel_label="Frame",
                          scenario="scenario", order=ORDER, caption="c", source=str(committed), paper_dir=tmp_path)
    text = out["table"].read_text()
    # a row per metric and frame, and again in every further column set of a table split into sets
    assert text.count("stress+net") >= 3 * 2 and "Bonf" in text and "MDE" in text and "RMIT blocks" in text
    assert "\\plset{t002/jitter/1518/stress-net/mean}" in out["macros"].read_text()


def test_minimum_detectable_change_at_the_n_used_matches_statsmodels():
    base, x = np.array([10.0, 11.0, 12.0]), np.array([8.0, 9.0, 10.0])  # SD 1 each, mean of a 11
    # pooled CV 1/11; TTestIndPower at n = 3: d = 3.07 -> MDE 3.07 / 11 (the spread, not the observed effect)
    d = TTestIndPower().solve_power(nobs1=3, alpha=0.05, power=0.8)
    assert abs(min_detectable(base, x) - d / 11) < 1e-9
    assert min_detectable(base, x) == min_detectable(base, base - 2.0)  # independent of the observed change
    assert np.isnan(min_detectable(np.array([1.0, 1.0]), np.array([1.0, 1.0])))


def test_bitrates_and_ladder_are_read_as_iperf3_reads_them():
    assert calibrate.bits_per_second("2880K") == 2.88e6 and calibrate.bits_per_second("40M") == 40e6
    assert calibrate.bits_per_second(37280000) == 37280000.0
    assert calibrate.packets_per_second("40M", 466) == pytest.approx(40e6 / (8 * 466))
    assert calibrate.bitrate_for(2500, 18) == 360000
    with pytest.raises(StatsInputError, match="bitrate"):
        calibrate.bits_per_second("40 Mbit")
    rungs = calibrate.ladder([{"label": "64-2500", "set": {"length": 18, "bitrate": "360000"}},
                              {"label": "8192-500", "set": {"length": 8146, "bitrate": "32584000"}}])
    assert rungs["frame"].tolist() == [64, 8192] and rungs["pps"].tolist() == pytest.approx([2500, 500])
    with pytest.raises(StatsInputError, match="length and bitrate"):
        calibrate.ladder([{"label": "x", "set": {"length": 18}}])


def test_calibrated_rates_match_hand_computed_values():
    rows = [(64, 1000, 0.0), (64, 1000, 0.4),  # mean 0.2
            (64, 2000, 0.6), (64, 2000, 1.2),  # mean 0.9: the highest passing rung below the first failure
            (64, 3000, 1.5), (64, 3000, 0.7),  # mean 1.1: fails
            (64, 4000, 0.1), (64, 4000, 0.1),  # passes, but above a failing rung: not taken
            (512, 1000, 0.0), (512, 2000, 0.5),  # none fails: the top rung, step to the one below
            (1518, 500, 2.0), (1518, 1000, 0.0),  # the lowest rung fails: no rate
            (8192, 100, 0.5), (8192, 200, 1.0)]  # exactly the threshold is not below it
    samples = pd.DataFrame(rows, columns=["frame", "pps", "value"])
    got = calibrate.highest_rates(samples, threshold=1.0).set_index("frame")
    assert got.loc[64, ["rate", "loss", "n", "step", "next_rate", "next_loss", "rungs"]].tolist() == \
        pytest.approx([2000, 0.9, 2, 1000, 3000, 1.1, 4])
    assert got.loc[512, ["rate", "loss", "step"]].tolist() == pytest.approx([2000, 0.5, 1000])
    assert pd.isna(got.loc[512, "next_rate"])
    assert pd.isna(got.loc[1518, "rate"]) and got.loc[1518, "next_rate"] == 500 and got.loc[1518, "n"] == 0
    assert got.loc[8192, ["rate", "step", "next_rate"]].tolist() == pytest.approx([100, 100, 200])
    assert calibrate.highest_rates(samples, threshold=1.2).set_index("frame").loc[64, "rate"] == 4000
    shown = calibrate_report.values(got.reset_index(), name="c", threshold=1.0)
    assert shown["c/64/pps"] == "2000" and shown["c/64/step"] == "1000" and shown["c/64/next-loss"] == "1.1"
    assert "c/1518/pps" not in shown and shown["c/1518/next-pps"] == "500"
    text = calibrate_report.table(got.reset_index(), threshold=1.0, caption="c", label="t")
    assert text.count("\\\\") >= 4 and "2000" in text and "below 1\\,\\%" in text
    with pytest.raises(StatsInputError, match="positive loss"):
        calibrate.highest_rates(samples, threshold=0)
    with pytest.raises(StatsInputError, match="no column"):
        calibrate.highest_rates(samples.rename(columns={"pps": "rate"}))


def test_the_latency_and_fragmented_udp_questions_are_decided_from_the_committed_runs():
    """Q5-Q7 (ping) and Q8 (8192 bytes), declared before their campaigns' data, decided by the blocked test."""
    tables = {c: tidy.frame(ROOT / "data/raw" / c)[0] for c in ("pfsense-confirm-ping", "pfsense-confirm-8192")}
    results = {q.id: d for q, d, _ in verdicts.evaluate(STUDY, ROOT, tables.get) if q.id in {"Q5", "Q6", "Q7", "Q8"}}
    assert all(d is not None and d.n_a == d.n_b == 40 and d.test == "paired t" for d in results.values())
    # fragmented datagrams beside the stressed, talking neighbour: a change well within +-5 %, at an offered rate
    # the firewall forwards whatever the neighbour does, so no verdict on the claim (testable: no)
    assert results["Q8"].verdict == NOT_TESTABLE and -0.05 < results["Q8"].ci_low < results["Q8"].ci_high < 0.05
    # the round-trip times: intervals that hold no change, at 40 blocks, in a family of six (both looks at each claim)
    for q in ("Q5", "Q6", "Q7"):
        assert results[q].verdict == "inconclusive" and results[q].ci_low < 0 < results[q].ci_high, q
        assert results[q].m == 6 and 0 < results[q].power < 0.5, q


def test_the_second_looks_at_the_latency_claims_are_decided_in_the_first_looks_family():
    """Q9-Q11 ask C18, C20, C21 again: Bonferroni over all six looks; Q11's +12 % is not shown to reach 10 %."""
    tables = {c: tidy.frame(ROOT / "data/raw" / c)[0] for c in ("pfsense-latency-idle", "pfsense-latency-loaded")}
    results = {q.id: d for q, d, _ in verdicts.evaluate(STUDY, ROOT, tables.get) if q.id in {"Q9", "Q10", "Q11"}}
    assert all(d.m == 6 and d.ci_level == pytest.approx(1 - 0.05 / 6) for d in results.values())
    assert results["Q9"].verdict == results["Q10"].verdict == "supported"
    assert results["Q11"].verdict == "direction only" and 0 < results["Q11"].ci_low < 0.10 < results["Q11"].ci_high

