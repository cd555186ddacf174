"""Study 000-cedri: its published tables and claims, a short run of its campaigns on its lab file,
and the chapter's tables from the committed raw data."""

from __future__ import annotations

import functools
import hashlib
import io
import math
import os
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers import ROOT_ONLY, leftovers, load_campaign
from perflab import campaign as campaign_mod, inventory, labspec, runner, store, study, tidy
from perflab.hosts import lab as lab_mod
from perflab.report import factorial, hostcpu

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "data" / "raw" / "published"
SEED = ROOT.parent / "shared" / "seeds" / "000_0215f2644d92d7fd.txt"
STUDY = next(s for s in study.discover(ROOT) if s.id == "000-cedri")
ANALYSES = {a.name: a for a in STUDY.analyses}
FILES = ("firewall", "p2p", "link", "nfs")


def table(name: str) -> pd.DataFrame:
    """A published CSV of the study, values as text (the printed precision)."""
    return pd.read_csv(PUBLISHED / f"000-cedri-{name}.csv", dtype=str, keep_default_na=False)


def cell(ref: str) -> float:
    """The published value a claim names: ``table|firewall-or-endpoint|smt|mtu|threads|metric``."""
    src, who, smt, mtu, threads, metric = ref.split("|")
    df = pd.concat([table("firewall").rename(columns={"firewall": "who"}),
                    table("p2p").rename(columns={"endpoint": "who"})])
    hit = df[(df.source_table == src) & (df.who == who) & (df.smt == smt) & (df.mtu == mtu) & (df.threads == threads)
             & (df.metric == metric)]
    assert len(hit) == 1, ref
    return float(hit.value.iloc[0])


def test_published_files_are_in_the_manifest():
    manifest = dict(reversed(line.split("  ", 1)) for line in (PUBLISHED / "MANIFEST.sha256").read_text().splitlines())
    for name in [*(f"000-cedri-{f}.csv" for f in (*FILES, "claims")), "000-cedri-ORIGIN.md"]:
        assert manifest[name] == hashlib.sha256((PUBLISHED / name).read_bytes()).hexdigest(), name


@pytest.mark.parametrize("name", FILES)
def test_every_published_value_is_a_number_with_its_source_line(name):
    df = table(name)
    assert len(df) > 20
    assert pd.to_numeric(df["value"]).notna().all()
    assert df["line"].astype(int).between(1, 1407).all()
    assert set(df["uncertain"]) <= {"true", "false"}
    assert (df.loc[df.uncertain == "true", "note"] != "").all(), "a flagged value needs its note"


@pytest.mark.skipif(not SEED.is_file(), reason="the seed text is not beside the project (../shared/seeds)")
@pytest.mark.parametrize("name", FILES)
def test_every_published_value_is_printed_on_its_line(name):
    lines = SEED.read_text(encoding="utf-8").splitlines()
    for _, row in table(name).iterrows():
        printed = {row.value, row.value.replace(".", ",")}
        assert any(p in lines[int(row.line) - 1] for p in printed), (name, row.to_dict())


def test_thread_means_and_smt_means_follow_from_the_cells():
    df = table("firewall")
    df["v"] = df.value.astype(float)
    per_thread = df[(df.source_table == "Tabela 3.3") & (df.threads != "mean")]
    means = df[(df.source_table == "Tabela 3.3") & (df.threads == "mean")]
    for (fw, smt, mtu), g in per_thread.groupby(["firewall", "smt", "mtu"]):
        printed = means[(means.firewall == fw) & (means.smt == smt) & (means.mtu == mtu)].v.item()
        assert g.v.mean() == pytest.approx(printed, abs=0.0015), (fw, smt, mtu)
    for src, _fw in (("Tabela 3.1", "native"), ("Tabela 3.2", "virtual")):
        t = df[df.source_table == src]
        for (metric, mtu), g in t.groupby(["metric", "mtu"]):
            off, on, both = (g[g.smt == s].v.item() for s in ("off", "on", "both"))
            assert (off + on) / 2 == pytest.approx(both, abs=0.0015), (src, metric, mtu)


def test_table_3_10_repeats_table_3_7_and_is_flagged():
    df = table("p2p")
    a = df[df.source_table == "Tabela 3.7"][["threads", "metric", "value"]].reset_index(drop=True)
    b = df[df.source_table == "Tabela 3.10"][["threads", "metric", "value"]].reset_index(drop=True)
    assert a.equals(b)
    assert (df[df.source_table == "Tabela 3.10"].uncertain == "true").all()


def test_claims_rederived_from_the_tables():
    claims = pd.read_csv(PUBLISHED / "000-cedri-claims.csv", dtype=str, keep_default_na=False)
    reproduced, not_reproduced = [], []
    for _, c in claims.iterrows():
        if c.relation == "max_below":
            src, metric = c.numerator.split("|")[0], c.numerator.split("|")[-1]
            fw = table("firewall")
            values = fw[(fw.source_table == src) & (fw.metric == metric)].value.astype(float)
            ok = values.max() < float(c.stated)
        else:
            q = cell(c.numerator) / cell(c.denominator)
            derived = {"ratio": q, "increase": q - 1, "penalty": 1 - q}[c.relation] * 100
            ok = abs(derived - float(c.stated)) <= 1.0
        (reproduced if ok else not_reproduced).append(c.claim)
    assert not_reproduced == ["C10", "C13"]  # +32 % not 24 %; a firewall load of 1.020 is not below 1.0
    assert len(reproduced) == 11


def test_storage_questions_quote_their_seed_line():
    """ZFS and NFS claims are readings of figures the published tables cannot re-derive: each question names its
    seed line and quotes it (each part of the quote around '[...]' is on that line, emphasis marks aside)."""
    doc = yaml.safe_load((ROOT / STUDY.declaration).read_text())
    quoted = [q for q in doc["questions"] if str(q["claim"]).startswith("seed:")]
    assert {q["campaign"] for q in quoted} == {"cedri-zfs-confirm", "cedri-nfs-confirm", "cedri-nfs-mtu"}
    if not SEED.exists():
        pytest.skip(f"the seed text is not beside the project ({SEED})")
    lines = SEED.read_text().splitlines()
    for q in quoted:
        line = lines[int(q["claim"][5:]) - 1].replace("*", "")
        for part in q["quote"].split("[...]"):
            assert part.strip(" .") in line, (q["id"], part)


def test_each_question_is_planned_at_its_campaigns_repetitions_after_a_declared_pilot():
    """A campaign that decides questions measures their n per cell; the storage campaigns' n is provisional
    until a pilot of the same lab, declared `role: pilot` and measured first, sets it."""
    doc = yaml.safe_load((ROOT / STUDY.declaration).read_text())
    refs = {c.id: c for c in STUDY.campaigns}
    for q in doc["questions"]:
        assert campaign_doc(q["campaign"])["repetitions"] == q["n"], q["id"]
    pilots = {"cedri-zfs-confirm": "cedri-zfs-pilot", "cedri-nfs-confirm": "cedri-nfs-pilot",
              "cedri-nfs-mtu": "cedri-nfs-pilot"}
    for confirm, pilot in pilots.items():
        assert refs[pilot].role == "pilot" and refs[confirm].role is None
        assert refs[pilot].inventory == refs[confirm].inventory == "labfile:labs/000-cedri-storage.yaml"
        assert refs[confirm].planned and refs[pilot].planned
        for q in (q for q in doc["questions"] if q["campaign"] == confirm):
            assert pilot in q["planning"]["note"], q["id"]


# --- the campaigns on the lab ---------------------------------------------------------------


@pytest.fixture(scope="module")
def cedri_lab():
    """The study's lab file under a name of this test process; removed afterwards."""
    name = f"c{os.getpid() % 100000}"
    text = (ROOT / "labs" / "000-cedri.yaml").read_text().replace("lab: cedri", f"lab: {name}")
    try:
        yield name, inventory.load(lab_mod.bring_up(labspec.load(f"{name}.yaml", text=text)).inventory_path)
    finally:
        lab_mod.down(name)
        assert leftovers(name) == []


def campaign_doc(campaign: str) -> dict:
    """The parsed document of one of the study's campaign files (YAML 1.2 booleans)."""
    return dict(campaign_mod.load(ROOT / "studies" / "000-cedri" / "campaigns" / f"{campaign}.yaml").doc)


def short(campaign: str, tmp_path: Path, **changes):
    """The study's campaign file with ``changes`` to its document, loaded from ``tmp_path``."""
    doc = {**campaign_doc(campaign), **changes}
    return load_campaign(yaml.safe_dump(doc, sort_keys=False), tmp_path)


@ROOT_ONLY
@pytest.mark.lab
def test_nat_campaign_runs_on_direct_and_nat_paths_at_both_mtus(cedri_lab, tmp_path):
    name, inv = cedri_lab
    factors = campaign_doc("cedri-nat-confirm")["factors"]
    camp = short("cedri-nat-confirm", tmp_path, repetitions=1, warmups=0, fingerprints=False,
                 benchmark={"tool": "iperf2", "params": {"duration": 1}}, factors={**factors, "parallel": [2]})
    before = {r: lab_mod.router_counters(name, r) for r in ("r1", "r2")}
    summary = runner.run(camp, inv, tmp_path, stream=io.StringIO())
    assert summary.complete, summary.failed
    assert store.verify(tmp_path / "cedri-nat-confirm") == []
    forwarded = {}
    for router, link in (("r1", "nat1500"), ("r2", "nat9000")):
        after = lab_mod.router_counters(name, router)
        forwarded[router] = after[f"masquerade {link}"][0] - before[router][f"masquerade {link}"][0]
    assert all(n > 0 for n in forwarded.values()), forwarded
    df, quarantine = tidy.frame(tmp_path / "cedri-nat-confirm")
    assert quarantine.empty
    params = ANALYSES["cedri-nat-throughput"].parameters
    data, unit, _ = factorial.samples(df, metric="throughput", factors=params["factors"], relabel=params["relabel"])
    assert sorted(zip(data.mtu, data.path)) == [("1500", "direct"), ("1500", "nat"),
                                                ("9000", "direct"), ("9000", "nat")]
    assert (data.value > 0).all() and unit == "bit/s"
    # every lab host of the campaign has its cgroup CPU in every sample; each ran at least its monitor
    cg = df[(df.tool == "cgroup") & (df.metric == "cpu_seconds")]
    assert (cg.groupby("run_id").host.apply(set) == {"h1", "h2", "r1", "r2"}).all()
    assert (cg.value > 0).all()
    # the topology: a NAT cell's router receives every byte iperf moves, the direct path bypasses it
    moved = df[(df.tool == "iperf2") & (df.metric == "bytes") & df.summary].set_index("run_id").value
    rx = df[(df.tool == "procstat") & (df.metric == "net_rx_bytes")].groupby(["run_id", "host"]).value.sum()
    cpu = cg.set_index(["run_id", "host"]).value
    for run_id, cell in df.drop_duplicates("run_id").set_index("run_id")[["mtu", "path"]].iterrows():
        router = {"1500": "r1", "9000": "r2"}[str(cell.mtu)]
        if cell.path.startswith("nat"):
            assert rx[(run_id, router)] >= moved[run_id], run_id
            # ... yet its cgroup does not carry that work: forwarding runs in softirq context and is
            # charged to the process that sent the packet (docs/lab.md), so the chapter cannot give
            # the router a CPU load of its own
            assert cpu[(run_id, router)] < cpu[(run_id, "h1")], run_id
        else:
            assert rx[(run_id, router)] < moved[run_id], run_id
    p = ANALYSES["cedri-nat-hostcpu"].parameters
    roles = hostcpu.role_samples(df, roles=p["roles"], factors=p["factors"], relabel=p["relabel"])
    assert sorted(set(roles.role)) == ["all", "client", "router", "server"] and (roles.per_gbit > 0).all()


@ROOT_ONLY
@pytest.mark.lab
def test_fio_campaign_runs_on_ext4_xfs_and_the_raw_device(cedri_lab, tmp_path):
    _, inv = cedri_lab
    doc = campaign_doc("cedri-fio-confirm")
    camp = short("cedri-fio-confirm", tmp_path, repetitions=1, warmups=0, fingerprints=False, monitors=False,
                 benchmark={**doc["benchmark"], "params": {**doc["benchmark"]["params"], "size": "8M", "numjobs": 2,
                                                           "runtime": 1, "ramp_time": 0}},
                 factors={**doc["factors"], "iodepth": [1, 4]})
    summary = runner.run(camp, inv, tmp_path, stream=io.StringIO())
    assert summary.complete, summary.failed
    df, quarantine = tidy.frame(tmp_path / "cedri-fio-confirm")
    assert quarantine.empty
    data, unit, _ = factorial.samples(df, metric="iops", factors=["fs", "iodepth"],
                                      select={"direction": "read", "job": None})
    assert sorted(set(data.fs)) == ["ext4", "raw", "xfs"] and unit == "IOPS"
    assert (data.value > 0).all()


# --- the chapter's tables from the committed raw data ------------------------------------


@functools.lru_cache(maxsize=None)
def committed(campaign: str) -> pd.DataFrame:
    """The tidy table of a campaign's committed raw data (parsed once per test session)."""
    df, quarantine = tidy.frame(ROOT / "data" / "raw" / campaign)
    assert quarantine.empty
    return df


#: Analyses whose files are written too (one per campaign: drawing figures is the slow part).
WRITTEN = ("cedri-nat-throughput", "cedri-fio-read-iops")


@pytest.mark.parametrize("name", sorted(n for n, a in ANALYSES.items() if Path(a.notebook).stem == "factorial"
                                        and (ROOT / "data/raw" / a.campaign / "campaign.json").is_file()))
def test_chapter_tables_from_committed_raw_data(name, tmp_path):
    """Every factorial analysis whose campaign has committed data (a campaign declared before its data waits)."""
    a = ANALYSES[name]
    p = a.parameters
    df = committed(a.campaign)
    result = factorial.analyse(df, metric=p["metric"], factors=p["factors"], quantity=p["quantity"],
                               select=p.get("select"), relabel=p.get("relabel"), cpu_host=p.get("cpu_host"))
    reps = campaign_doc(a.campaign)["repetitions"]
    assert (result.cells["n"] == reps).all()
    rows = [p["rows"]] if isinstance(p["rows"], str) else p["rows"]
    grid = factorial.layout(result, rows=rows, scale=p["scale"])
    blocks = math.prod(result.cells[f].nunique() for f in rows[:-1])
    assert list(grid[rows[-1]])[: result.cells[rows[-1]].nunique() + 1] == [*factorial.order(result.cells[rows[-1]]),
                                                                            "mean"]
    assert len(grid) == blocks * (result.cells[rows[-1]].nunique() + 1)
    assert grid.shape[1] == len(rows) + len(result.cells) // math.prod(result.cells[f].nunique() for f in rows)
    terms = set(result.anova["term"])
    # the factorial terms, the residual, and the RMIT block as an additive term (randomized complete blocks)
    assert {*p["factors"], "Residual", "block"} <= terms and len(terms - {"block"}) == 2 ** len(p["factors"])
    if name not in WRITTEN:
        return
    out = factorial.write(result, name=name, source=ROOT / "data/raw" / a.campaign / "campaign.json",
                          paper_dir=tmp_path, rows=p["rows"], x=p["x"], trace=p["trace"], panel=p["panel"],
                          scale=p["scale"], unit=p["unit"], labels=p["labels"],
                          ratios=p.get("ratios", []), generator="test")
    assert all(path.stat().st_size > 0 for paths in out.values() for path in paths)
    assert "\\plfloat{" in (tmp_path / "tables" / f"{name}-layout.tex").read_text()
    for kind in ("layout", "anova"):  # captions in words: no analysis or campaign name in them
        caption = re.search(r"\\caption\{(.*)\}\\label", (tmp_path / "tables" / f"{name}-{kind}.tex").read_text())
        assert caption and name not in caption[1] and a.campaign not in caption[1], caption


# --- per-host CPU by role (seed 000's Tables 3.4-3.6) -------------------------------------------

ROLES = {"client": ["h1"], "server": ["h2"], "router": ["r1", "r2"]}
RELABEL = {"path": {"direct1500": "direct", "nat1500": "nat", "direct9000": "direct", "nat9000": "nat"}}
#: Hand-made cgroup loads (CPU) per host and path kind, and throughputs (Gbit/s) per path kind.
LOADS = {"direct": {"h1": 0.8, "h2": 0.4, "r1": 0.0, "r2": 0.0}, "nat": {"h1": 0.9, "h2": 0.6, "r1": 0.3, "r2": 0.0}}
GBITS = {"direct": 8.0, "nat": 4.0}


def hand_made_tidy(reps: int = 3) -> pd.DataFrame:
    """A tidy table as the runner's parser writes it for cedri-nat with cgroup monitors: an iperf2 summary
    row and cgroup rows per host and sample (values exact, one warm-up with wild values left out)."""
    rows = []
    for par in (1, 8):
        for mtu, path in (("1500", "direct1500"), ("1500", "nat1500"), ("9000", "direct9000"), ("9000", "nat9000")):
            kind = RELABEL["path"][path]
            for rep in range(-1, reps):
                base = {"campaign": "c", "run_id": f"p{par}-{path}-{rep}", "warmup": rep < 0, "parallel": par,
                        "mtu": mtu, "path": path, "summary": False}
                wild = 100.0 if rep < 0 else 1.0
                rows.append({**base, "tool": "iperf2", "host": "h1", "metric": "throughput", "summary": True,
                             "value": GBITS[kind] * 1e9, "unit": "bit/s"})
                for host, load in LOADS[kind].items():
                    # the router of the other MTU is idle on both paths
                    load = load if host != "r1" or mtu == "1500" else 0.0
                    load = load if host != "r2" or mtu == "1500" else LOADS[kind]["r1"]
                    rows += [{**base, "tool": "cgroup", "host": host, "metric": "cpu_load", "value": load * wild,
                              "unit": "cpu"},
                             {**base, "tool": "cgroup", "host": host, "metric": "cpu_seconds", "value": 2 * load,
                              "unit": "s"}]
    return pd.DataFrame(rows)


def test_role_samples_sum_the_hosts_of_a_role_and_divide_by_throughput():
    data = hostcpu.role_samples(hand_made_tidy(), roles=ROLES, factors=["parallel", "mtu", "path"],
                                relabel=RELABEL)
    assert len(data) == 2 * 4 * 3 * 4  # streams x paths x repetitions x (3 roles + all)
    cell = data.set_index(["role", "parallel", "mtu", "path"]).sort_index()
    nat = cell.loc[("router", "8", "9000", "nat")]
    assert list(nat["cpu_load"]) == pytest.approx([0.3] * 3)  # r2 at 9000 (r1 idle)
    assert list(cell.loc[("router", "1", "1500", "direct"), "cpu_load"]) == [0.0] * 3
    assert list(cell.loc[("all", "1", "1500", "nat"), "cpu_load"]) == pytest.approx([1.8] * 3)
    assert list(cell.loc[("client", "1", "1500", "nat"), "per_gbit"]) == pytest.approx([0.9 / 4] * 3)


def test_role_samples_name_a_host_without_cgroup_rows():
    with pytest.raises(ValueError, match=r"no cgroup rows of host\(s\) \['r9'\]"):
        hostcpu.role_samples(hand_made_tidy(), roles={"router": ["r9"]}, factors=["parallel", "mtu", "path"])


def test_published_loads_per_role_are_the_means_of_the_thread_cells():
    pub = hostcpu.published_cells(PUBLISHED / "000-cedri-firewall.csv", PUBLISHED / "000-cedri-p2p.csv")
    mean = pub[pub.parallel == "mean"].set_index(["role", "mtu", "path"])
    # Table 3.6 prints 0,743 for the native firewall, MTU 1500, SMT on; Table 3.4 0,148 for its client
    assert mean.loc[("router", "1500", "nat-native"), "load"] == pytest.approx(0.743, abs=0.0015)
    assert mean.loc[("client", "1500", "nat-native"), "load"] == pytest.approx(0.148, abs=0.0015)
    assert mean.loc[("router", "1500", "direct"), "load"] == 0.0  # no firewall on the direct link
    assert mean.loc[("client", "1500", "direct"), "load"] == pytest.approx((0.248 + 0.246 + 0.378 + 0.348) / 4)
    assert mean.loc[("router", "9000", "nat-native"), "throughput"] == pytest.approx(9.9)
    assert ("router", "9000", "direct") not in mean.index  # Table 3.7 is MTU 1500 only


def test_comparison_in_kind_of_hand_made_loads_and_the_seed():
    result = hostcpu.analyse(hand_made_tidy(), roles=ROLES, factors=["parallel", "mtu", "path"], relabel=RELABEL)
    pub = hostcpu.published_cells(PUBLISHED / "000-cedri-firewall.csv", PUBLISHED / "000-cedri-p2p.csv")
    table = hostcpu.compare(result, pub).set_index("key")
    assert table.loc["router-share-1500", "rerun"] == pytest.approx(0.3 / 1.8)
    assert table.loc["client-nat-direct-1500", "rerun"] == pytest.approx((0.9 / 4) / (0.8 / 8))
    assert table.loc["client-p8-p1", "rerun"] == pytest.approx(1.0)
    assert table.loc["router-share-1500", "low"] == pytest.approx(0.3 / 1.8)  # no spread: a point interval
    # seed: the native firewall's load per Gbit/s at MTU 9000 over 1500 (0,3735/9,9 over 0,74275/5,321)
    assert table.loc["router-mtu-nat", "native"] == pytest.approx((0.3735 / 9.9) / (0.74275 / 5.321))
    assert not math.isnan(table.loc["router-mtu-nat", "virtual"])
    assert set(table.index) == {c[0] for c in hostcpu.COMPARISONS}


def test_host_cpu_tables_in_the_seed_layout_and_their_files(tmp_path):
    result = hostcpu.analyse(hand_made_tidy(), roles=ROLES, factors=["parallel", "mtu", "path"], relabel=RELABEL)
    assert (result.load.cells["n"] == 3).all() and result.roles == ["client", "server", "router", "all"]
    grid = factorial.layout(hostcpu.for_role(result.load, "server"), rows="parallel", digits=3)
    assert list(grid["parallel"]) == ["1", "8", "mean"]
    assert list(grid.columns[1:]) == ["mtu=1500, path=direct", "mtu=1500, path=nat", "mtu=9000, path=direct",
                                      "mtu=9000, path=nat"]
    assert grid.iloc[0, 2].startswith("0.600 [")
    pub = hostcpu.published_cells(PUBLISHED / "000-cedri-firewall.csv", PUBLISHED / "000-cedri-p2p.csv")
    source = PUBLISHED / "000-cedri-firewall.csv"
    out = hostcpu.write(result, pub, name="h", source=source, published_files=[], paper_dir=tmp_path,
                        rows="parallel", x="parallel", trace=["path", "mtu"], generator="test",
                        labels={"parallel": "parallel streams", "mtu": "MTU (B)"})
    layout_tex = (tmp_path / "tables" / "h-layout.tex").read_text()
    assert layout_tex.count("\\plfloat{") == 4 and "tab:h-router" in layout_tex
    # headers in words: the row factor by its label, columns by their levels, the note naming their factors
    # (levels one above the other, a mean above its interval: the grid stays narrow enough to stand upright)
    assert ("parallel streams & \\plhead{1500\\\\{}direct} & \\plhead{1500\\\\{}nat}" in layout_tex
            and "=" not in layout_tex.split("\\midrule")[0])
    assert "Columns: MTU (B) above path." in layout_tex
    assert re.search(r"\\plcell\{\\num\{[\d.]+\}\\\\\{\}\[\\num\{[\d.]+\}, \\num\{[\d.]+\}\]\}", layout_tex)
    assert "\\label{tab:h-compare}" in (tmp_path / "tables" / "h-compare.tex").read_text()
    inline = (tmp_path / "macros" / "h.tex").read_text()
    assert "{h/cmp/router-share-1500/rerun}{0.17}" in inline and "{h/1500/nat/gbits}{4.00}" in inline
    assert all(p.stat().st_size > 0 for p in out["figures"])


def test_host_cpu_tables_from_committed_raw_data(tmp_path):
    a = ANALYSES["cedri-nat-hostcpu"]
    p = a.parameters
    df = committed(a.campaign)
    result = hostcpu.analyse(df, roles=p["roles"], factors=p["factors"], relabel=p["relabel"])
    reps = campaign_doc(a.campaign)["repetitions"]
    assert (result.load.cells["n"] == reps).all() and len(result.load.cells) == 4 * 8
    assert (result.load.data["value"] > 0).all()
    assert len(result.machine_load1) == result.throughput["run_id"].nunique() and (result.machine_load1 > 0).all()
    # the lab's veth links carry TCP as segmentation-offload aggregates: larger than either MTU
    assert (result.server_rx.groupby("mtu")["rx_bytes_per_packet"].mean() > 9000).all()
    for role in ("client", "server", "router"):
        grid = factorial.layout(hostcpu.for_role(result.load, role), rows=p["rows"], digits=3)
        assert list(grid[p["rows"]]) == ["1", "8", "mean"] and grid.shape[1] == 1 + 4
    pub = hostcpu.published_cells(ROOT / p["published_firewall"], ROOT / p["published_p2p"], smt=p["smt"])
    table = hostcpu.compare(result, pub).set_index("key")
    assert table["native"].notna().all()
    # the lab's router is charged none of its forwarding (see the short run above), the seed's the most
    assert table.loc["router-share-1500", "rerun"] < table.loc["router-share-1500", "native"]
    out = hostcpu.write(result, pub, name=a.name, source=ROOT / "data/raw" / a.campaign / "campaign.json",
                        published_files=[], paper_dir=tmp_path, rows=p["rows"], x=p["x"], trace=p["trace"],
                        labels=p["labels"], generator="test")
    assert all(path.stat().st_size > 0 for key in ("figures", "tables", "macros") for path in out[key])
