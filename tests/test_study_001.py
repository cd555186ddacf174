"""Study 001 (UNNOBA Ceph thesis): published data, its Ceph outputs parsed, short lab runs, chapter tables."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers import ROOT_ONLY
from perflab import campaign as campaign_mod, inventory, labspec, runner, store, study, tidy
from perflab.hosts import lab as lab_mod
from perflab.yamlfile import _Loader as Yaml12Loader  # YAML 1.2 booleans: `on:` stays a key
from perflab.report import sweep
from perflab.tools import ceph
from perflab.tools.base import ParseError

ROOT = Path(__file__).resolve().parents[1]
PUB = ROOT / "data/raw/published"
STUDY = ROOT / "studies/001-unnoba-ceph"
MAP = {"hdd": "hdd-emulated", "ssd": "ssd-emulated"}


def _pub(name: str) -> pd.DataFrame:
    return pd.read_csv(PUB / f"001-unnoba-ceph-{name}.csv", dtype=str, keep_default_na=False)


# --- published data -----------------------------------------------------------------------

def test_published_files_are_declared_and_sealed():
    declared = next(s for s in study.discover(ROOT) if s.id == "001-unnoba-ceph").published
    sums = dict(reversed(line.split("  ")) for line in (PUB / "MANIFEST.sha256").read_text().splitlines())
    for path in [*declared, "data/raw/published/001-unnoba-ceph-ORIGIN.md"]:
        name = Path(path).name
        assert hashlib.sha256((ROOT / path).read_bytes()).hexdigest() == sums[name], name


def test_block_size_tables_give_the_thesis_conclusions():
    bs = _pub("fio-bs").astype({"bandwidth_mib_s": float, "iops": float})
    assert len(bs) == 64 and set(bs["bs"]) == {"4k", "16k", "64k", "128k", "256k", "512k", "1m", "4m"}

    def best(device, rw):
        part = bs[(bs["device"] == device) & (bs["rw"] == rw)]
        return part.loc[part["bandwidth_mib_s"].idxmax(), ["bs", "bandwidth_mib_s"]].tolist()

    # Section 10.1-10.2: HDD seq write 196 MiB/s at 1 MiB, seq read 309 MiB/s at 16 KiB, random best at 4 MiB;
    # SSD seq write 497 MiB/s at 1 MiB.
    assert best("hdd", "write") == ["1m", 196.0]
    assert best("hdd", "read") == ["16k", 309.0]
    assert best("hdd", "randwrite")[0] == best("hdd", "randread")[0] == "4m"
    assert best("ssd", "write") == ["1m", 497.0]
    # The author says SSD random I/O peaks at 256 KiB; the table's 4 MiB values are higher (digest §8).
    assert best("ssd", "randread") == ["4m", 393.0]


def test_block_size_tables_obey_littles_law_only_for_sequential_io():
    """16 I/Os in flight (4 jobs x iodepth 4): IOPS x mean latency should be 16. The sequential rows
    agree (all but HDD write 1m); the random rows do not (ratios 0.02-0.83): their latency cannot be
    the mean total latency at 16 in flight (a finding of this rerun, see the chapter)."""
    bs = _pub("fio-bs")
    lit = sweep.littles_law_published(bs, factor="bs", series="device", facet="rw", series_map=MAP)
    ok = (lit["ratio"] - 1).abs() <= 0.25
    seq = lit["rw"].isin(["read", "write"])
    assert ok[seq].sum() == 31 and not ok[seq & (lit["device"] == "hdd-emulated") & (lit["rw"] == "write")
                                         & (lit["bs"] == "1m")].any()
    assert ok[~seq].sum() == 4 and (lit[~seq]["ratio"] < 0.84).all()


def test_headline_values_and_their_inconsistencies():
    v = _pub("values").astype({"value": float})
    get = lambda item, q: v[(v["item"] == item) & (v["quantity"] == q)]["value"].item()  # noqa: E731
    assert get("iperf3 10G same switch", "throughput") == 9.40e9
    assert get("ping 10G", "rtt_avg") == pytest.approx(163e-6)
    # dd: 5368709120 bytes in the printed 27 s is 199 MB/s, not the printed 202 MB/s (flagged).
    assert 5368709120 / get("dd raw hdd", "elapsed") / 1e6 == pytest.approx(198.8, abs=0.1)
    assert v[(v["item"] == "dd raw hdd") & (v["quantity"] == "throughput")]["uncertain"].item() == "true"
    # OSD bench: IOPS = bytes/s / 4 MiB (Figs. 79-80).
    for osd in ("osd.71 ssd", "osd.29 hdd"):
        assert get(f"osd bench {osd}", "bandwidth") / 4194304 == pytest.approx(get(f"osd bench {osd}", "iops"), rel=1e-9)
    # SSD RBD clients (Figs. 118-120): Little's law at jobs x depth.
    for jobs, depth in ((8, 32), (16, 16), (16, 32), (32, 4)):
        item = f"fio rbd testssd {jobs}x{depth}"
        assert get(item, "iops") * get(item, "lat_mean") / (jobs * depth) == pytest.approx(1, abs=0.25)


# --- the thesis's Ceph outputs ----------------------------------------------------------------

def test_ceph_outputs_parse_to_the_thesis_numbers():
    rados = {m.metric: m.value for m in ceph.RadosBench().parse(
        (ROOT / "tests/fixtures/ceph/seed001_fig93_rados_write.txt").read_text())}
    assert rados["bandwidth"] / 2**20 == pytest.approx(345.548)  # "Bandwidth (MB/sec): 345.548" is MiB/s
    assert rados["iops_reported"] == 86 and rados["lat_mean"] == pytest.approx(0.185056)
    assert rados["ops"] * 4194304 / rados["runtime"] / 2**20 == pytest.approx(345.548, abs=1e-3)
    assert rados["mean_in_flight"] == pytest.approx(16, abs=0.1)  # rados bench's default 16 concurrent ops
    rbd = {m.metric: m.value for m in ceph.RbdBench().parse(
        (ROOT / "tests/fixtures/ceph/seed001_fig102_rbd_write_seq.txt").read_text())}
    assert rbd["iops"] == pytest.approx(80.1475) and rbd["ops"] == 512


@pytest.mark.parametrize("fixture, parser", [("seed001_fig84_rados_write_ocr_split.txt", ceph.RadosBench),
                                             ("seed001_fig102_rbd_four_runs.txt", ceph.RbdBench),
                                             ("seed001_fig79_osd_bench_ocr.txt", ceph.CephOsdBench)])
def test_damaged_ceph_outputs_are_refused(fixture, parser):
    with pytest.raises(ParseError):
        parser().parse((ROOT / "tests/fixtures/ceph" / fixture).read_text(), source=fixture)


def test_committed_ceph_outputs_csv_is_what_the_parsers_give():
    tool = importlib.util.spec_from_file_location("ceph_outputs", STUDY / "tools/ceph_outputs.py")
    module = importlib.util.module_from_spec(tool)
    tool.loader.exec_module(module)
    assert module.csv_text(ROOT) == (PUB / "001-unnoba-ceph-ceph-outputs.csv").read_text()


# --- the chapter's tables from the committed raw data ---------------------------------------

def _analysis(name: str):
    s = next(s for s in study.discover(ROOT) if s.id == "001-unnoba-ceph")
    return next(a for a in s.analyses if a.name == name)


def test_queue_depth_sweep_from_committed_raw_data():
    """The sweep measured for the record (Q1, Q2): the SSD-like device, 40 samples per cell."""
    params = _analysis("unnoba-confirm-qd-iops").parameters
    df, quarantine = tidy.frame(ROOT / "data/raw/unnoba-confirm-qd")
    assert quarantine.empty
    result = sweep.analyse(df, metric="iops", factor="iodepth", series="device", facet="rw", select=params["select"],
                           sum_over="direction", published=_pub("fio-qd"), published_column="iops",
                           series_map=params["series_map"], published_littles=True)
    planned = campaign_mod.load(STUDY / "campaigns/unnoba-confirm-qd.yaml")
    assert planned.repetitions >= 40 and (result.summary["n"] == planned.repetitions).all()
    assert len(result.summary) == 8 and set(result.summary["device"]) == {"ssd-emulated"}
    rerun = result.littles[result.littles["source"] == "rerun"]
    assert len(rerun) == 8 and ((rerun["ratio"] - 1).abs() <= 0.25).all()  # fio kept its queue full
    # In kind: the emulated SSD's IOPS rise with queue depth like the thesis's SSD (positive rank correlation).
    ssd = result.kind[result.kind["device"] == "ssd-emulated"]
    assert len(ssd) == 2 and (ssd["spearman"] > 0).all()
    kind = sweep.kind_table(result, xlabel="queue depth", caption="c", label="l")
    assert "Spearman" in kind and "not a test of agreement" in kind  # rho on a few levels describes their order
    # Little's-law headers on two lines, so that the table stands upright
    assert "\\plhead{jobs\\\\{}$\\times$ QD}" in sweep.littles_table(result, caption="c", label="l")


# --- short runs on the lab --------------------------------------------------------------------

NAME = f"u{os.getpid() % 100000}"
CAMPAIGNS = {
    "unnoba-fio-qd": {"factors": {"rw": ["randwrite"], "iodepth": [1, 8]}},
    "unnoba-confirm-qd": {"params": {"runtime": 1}, "factors": {"rw": ["randwrite"], "iodepth": [1, 8]}},
    "unnoba-confirm-grid": {"params": {"runtime": 1}, "factors": {"numjobs": [1, 2], "iodepth": [4]}},
    "unnoba-confirm-bs": {"params": {"runtime": 1}, "factors": {"rw": ["randwrite"], "bs": ["64k", "1m"]}},
    "unnoba-confirm-dd": {"params": {"count": 8}},
}


@pytest.fixture(scope="module")
def unnoba_lab():
    doc = yaml.safe_load((ROOT / "labs/001-unnoba-ceph.yaml").read_text())
    doc["lab"] = NAME
    for dev in doc["hosts"]["h1"]["devices"].values():
        dev["size"] = "64M"
    try:
        lab = lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=yaml.safe_dump(doc)))
        yield inventory.load(lab.inventory_path)
    finally:
        lab_mod.down(NAME)


def test_every_lab_campaign_of_the_study_has_a_short_run():
    """Every campaign of the study on its disk-and-network lab (the Ceph lab's have tests of their own)."""
    declared = {c.id for s in study.discover(ROOT) if s.id == "001-unnoba-ceph" for c in s.campaigns
                if c.inventory == "labfile:labs/001-unnoba-ceph.yaml"}
    assert declared == set(CAMPAIGNS)


@ROOT_ONLY
@pytest.mark.lab
@pytest.mark.parametrize("campaign", sorted(CAMPAIGNS))
def test_campaign_short_run(campaign, unnoba_lab, tmp_path):
    text = (STUDY / "campaigns" / f"{campaign}.yaml").read_text().replace("/run/perflab/unnoba/", f"/run/perflab/{NAME}/")
    doc = yaml.load(text, Loader=Yaml12Loader)
    doc["benchmark"].setdefault("params", {}).update(CAMPAIGNS[campaign].get("params", {}))
    if "runtime" in doc["benchmark"]["params"]:
        doc["benchmark"]["params"]["size"] = "8M"
    doc["factors"].update(CAMPAIGNS[campaign].get("factors", {}))
    doc.update(repetitions=1, warmups=0, fingerprints=False)
    path = tmp_path / f"{campaign}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    summary = runner.run(campaign_mod.load(path), unnoba_lab, tmp_path / "raw", stream=io.StringIO())
    assert summary.complete, summary.failed
    assert store.verify(tmp_path / "raw" / campaign) == []
    df, quarantine = tidy.frame(tmp_path / "raw" / campaign)
    assert quarantine.empty, quarantine.to_dict("records")
    if campaign.startswith("unnoba-fio"):
        iops = df[(df["metric"] == "iops") & df["job"].isna()]
        hdd = iops[iops["device"] == "hdd-emulated"]
        assert len(hdd) and (hdd["value"] < 250).all(), "the blkio throttle (200 write IOPS) did not hold"
    if campaign == "unnoba-fio-qd":
        ratio = df[(df["metric"] == "littles_law_ratio") & df["job"].isna()]["value"]
        assert len(ratio) == 4 and ((ratio - 1).abs() <= 0.25).all()
    if "services" in doc:  # the throttle service removed its limits when it stopped
        rules = Path("/sys/fs/cgroup/blkio/blkio.throttle.write_iops_device")
        devices = {line.split()[0] for line in rules.read_text().splitlines()} if rules.exists() else set()
        hdd_dev = next(d for h in unnoba_lab.values() for name, d in (h.devices or {}).items() if name == "hdd")
        majmin = os.stat(hdd_dev["device"]).st_rdev
        assert f"{os.major(majmin)}:{os.minor(majmin)}" not in devices


def test_the_rbd_cache_level_named_after_the_seed_study_is_shown_as_what_it_is():
    """The campaign's cache level ``seed`` (the seed study's client cache) is relabelled in every analysis and ratio,
    so that no figure or table shows a level called "seed"."""
    s = study.load("studies/001-unnoba-ceph", ROOT)
    rbd = [a for a in s.analyses if a.campaign == "unnoba-ceph-rbd"]
    assert len(rbd) == 4
    for a in rbd:
        assert a.parameters["relabel"] == {"cache": {"seed": "on (64 MiB)"}}, a.name
        levels = {spec[side]["cache"] for spec in a.parameters["ratios"] for side in ("numerator", "denominator")}
        assert levels == {"off", "on (64 MiB)"}, a.name
    from perflab.stats._input import counted
    assert (counted(1, "warm-up row"), counted(32, "warm-up row"), counted(2, "cell@block pair")) == (
        "1 warm-up row", "32 warm-up rows", "2 cell@block pairs")


def test_the_relabelled_cache_level_gives_macro_keys_the_paper_can_hold():
    """The rbd analyses' cells, ``on (64 MiB)`` among their levels, are written as inline values: a level that cannot
    stand in a macro key is its slug there (the pipeline stopped on ``.../cell/hdd/on (64 MiB)/mean`` before)."""
    from perflab.report import factorial, macros

    a = next(a for a in study.load("studies/001-unnoba-ceph", ROOT).analyses if a.name == "unnoba-ceph-rbd-read-seq")
    p = a.parameters
    df, _ = tidy.frame(ROOT / "data/raw" / a.campaign)
    result = factorial.analyse(df, metric=p["metric"], factors=p["factors"], quantity=p["quantity"],
                               select=p.get("select"), relabel=p.get("relabel"))
    values = factorial.values(result, name=a.name, scale=p["scale"], digits=p["digits"], ratios=p["ratios"])
    assert f"{a.name}/cell/hdd/on-64-mib/mean" in values and f"{a.name}/cell/hdd/off/mean" in values
    assert "\\plset{" + f"{a.name}/cell/ssd/on-64-mib/mean" + "}" in macros.render(values)
