"""Study 004 (AoE vs iSCSI): published claims, the user-space AoE initiator against vblade, each block
protocol's service lifecycle in a short campaign on the lab, per-operation metrics against counter deltas
computed by hand, and the chapter's tables from the committed raw data."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from helpers import ROOT_ONLY, leftovers, monitor_text
from perflab import campaign as campaign_mod, labspec, runner, tidy
from perflab.hosts import lab as lab_mod, remote
from perflab.report import protocols
from perflab.tools import blockproto, get
from perflab.tools.base import extract_json

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = ROOT / "data/raw/published/004-aoe-iscsi-claims.csv"
SEED = ROOT / "../shared/seeds/004_bb00b97eac9c7f3e.txt"
CAMPAIGN = ROOT / "studies/004-aoe-iscsi/campaigns/004-confirm-protocols.yaml"
MACRO = ROOT / "studies/004-aoe-iscsi/campaigns/004-confirm-macro.yaml"
AOE = ROOT / "lib/perflab/aoe.py"
NAME = f"a{os.getpid() % 100000}"
LINKS = {"std": ("eth1", 1500), "jumbo": ("eth2", 9000)}


def test_claims_carry_the_seed_percentages_with_their_lines():
    claims = pd.read_csv(CLAIMS, dtype=str, keep_default_na=False)
    assert (claims["format"] == "1").all() and len(claims) == 18
    stated = {c: float(v) for c, v in zip(claims["claim"], claims["stated"]) if v}
    assert {stated[c] for c in ("C05", "C06", "C07", "C08", "C09", "C10", "C11", "C12", "C13", "C14")} == \
        {1, 8, 9, 11.2, 19, 22.2, 15, 3, 3.26}
    for row in claims.itertuples():
        if row.stated:
            number = row.stated.replace(".", ",")
            assert number in row.quote, f"{row.claim}: {number} is not in its quote"
    if SEED.exists():  # the seed sits beside the project (../shared); check every quote's first words at its line
        lines = SEED.read_text().splitlines()
        for row in claims.itertuples():
            first = int(row.line.split("-")[0])
            words = re.sub(r"\s+", " ", row.quote.split("...")[0])[:40]
            assert words in lines[first - 1].replace("*", ""), f"{row.claim}: quote not at line {first}"


def test_blockproto_refuses_iscsi_writes_and_parses_each_initiator():
    tool = get("blockproto")
    with pytest.raises(ValueError, match="iscsi-perf .* only reads"):
        tool.commands({"protocol": "iscsi", "rw": "write"}, {"server": "198.18.0.2"})
    with pytest.raises(ValueError, match="whole seconds"):
        tool.commands({"protocol": "iscsi", "rw": "read", "runtime": 0.5}, {"server": "198.18.0.2"})
    iscsi = ("capacity is 524288 blocks\nperforming RANDOM READ with 1 parallel requests\n"
             "FIXED transfer size of 8 blocks (4096 byte)\nwill run for 2 seconds.\n\n"
             "00:00:01 - lba 1, iops current 10 (0 MB/s)\r        iops average 1500 (5 MB/s)      \n\nfinished.\n"
             '\n@cost {"returncode": 0, "elapsed": 2.2, "initiator_cpu": 0.3, "target_cpu": 0.6, '
             '"target_processes": 1}\n')
    rows = {m.metric: m.value for m in tool.parse(iscsi, source="t")}
    assert rows["ops"] == 3000 and rows["bytes"] == 3000 * 4096 and rows["initiator_cpu_per_op"] == 0.3 / 3000
    assert rows["target_cpu_per_op"] == 0.6 / 3000
    assert "loop_cpu" not in rows, "iscsi-perf does not report the CPU of its I/O alone"
    bench = ('{"rw": "randread", "bs": 4096, "ops": 2000, "bytes": 8192000, "elapsed": 2.0, "export_size": 1, '
             '"cpu_user": 0.25, "cpu_system": 0.15}\n\n@cost {"returncode": 0, "elapsed": 2.3, "initiator_cpu": 0.6, '
             '"target_cpu": 0.2, "target_processes": 1}\n')
    rows = {m.metric: m.value for m in tool.parse(bench, source="t")}
    assert rows["loop_cpu"] == pytest.approx(0.4) and rows["loop_cpu_per_op"] == pytest.approx(0.4 / 2000)
    assert rows["initiator_cpu_per_op"] == pytest.approx(0.6 / 2000), "the whole process, start-up included"
    perflab_nbd = tool.commands({"protocol": "nbd", "initiator": "perflab", "rw": "read", "runtime": 2},
                                {"server": "198.18.0.2"})[1].argv
    assert "--nbd" in perflab_nbd and "198.18.0.2:10809" in perflab_nbd and "fio" not in perflab_nbd
    with pytest.raises(ValueError, match="initiator"):
        tool.commands({"protocol": "aoe", "initiator": "perflab"}, {"server": "198.18.0.2"})


def test_blockproto_ships_the_aoe_script_to_the_host_under_a_relative_digest_path():
    tool = get("blockproto")
    install, measured = tool.commands({"protocol": "aoe", "rw": "read"}, {"server": "198.18.0.2"})
    assert install.service and not measured.service
    assert blockproto.HOST_SCRIPT == f".perflab/aoe-{hashlib.sha256(AOE.read_bytes()).hexdigest()[:16]}.py"
    assert measured.argv[:2] == ("python3", blockproto.HOST_SCRIPT) and measured.argv.count(blockproto.HOST_SCRIPT) == 2
    assert not any(str(ROOT) in a or a.startswith("/") for a in measured.argv), "no controller path in the command"
    assert base64.b64decode(install.argv[-1]) == AOE.read_bytes() and install.argv[-2] == blockproto.HOST_SCRIPT
    assert tool.ready({}, {}) == f"test -s {blockproto.HOST_SCRIPT}"


def test_job_files_become_fio_options_in_file_order(tmp_path, monkeypatch):
    argv = blockproto.job_options("studies/004-aoe-iscsi/fio/oltp.fio")
    assert argv[:2] == ["--name=reads", "--rw=randread"] and argv.index("--name=log") > argv.index("--fsync=1")
    assert "--rate_iops=,1" in argv and "--bs=256k" in argv[argv.index("--name=log"):]
    command = get("blockproto").commands({"protocol": "nbd", "jobfile": "studies/004-aoe-iscsi/fio/varmail.fio",
                                          "runtime": 2}, {"server": "198.18.0.2"})[1]
    assert command.argv[command.argv.index("fio"):][:6] == (
        "fio", "--output-format=json", "--ioengine=nbd", "--uri=nbd://198.18.0.2:10809", "--runtime=2", "--time_based")
    assert command.argv[-3:] == ("--rw=write", "--fsync=1", "--flow=2"), "[global] first, then each job's options"
    assert command.argv.index("--flow_id=1") < command.argv.index("--name=reads")
    (tmp_path / "Snakefile").write_text("")
    (tmp_path / "bad.fio").write_text("[x]\nrw=read\nioengine=libaio\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"bad.fio: \[x\] sets ioengine"):
        blockproto.job_options("bad.fio")
    with pytest.raises(ValueError, match="only protocol nbd"):
        get("blockproto").commands({"protocol": "aoe", "jobfile": "bad.fio"}, {"server": "198.18.0.2"})
    fio_json = {"jobs": [{"job_runtime": 2000, "read": {"total_ios": 30, "io_bytes": 30 * 2048},
                          "write": {"total_ios": 3, "io_bytes": 3 * 2048}, "sync": {"total_ios": 3}},
                         {"job_runtime": 1900, "read": {"total_ios": 0, "io_bytes": 0},
                          "write": {"total_ios": 2, "io_bytes": 2 << 18}, "sync": {"total_ios": 2}}]}
    out = json.dumps(fio_json) + '\n@cost {"returncode": 0, "initiator_cpu": 0.5, "target_cpu": 0.25}\n'
    rows = {m.metric: m.value for m in get("blockproto").parse(out, source="t")}
    assert rows["ops"] == 35 and rows["flushes"] == 5 and rows["elapsed"] == 2.0
    assert rows["bytes"] == 33 * 2048 + (2 << 18) and rows["target_cpu_per_op"] == 0.25 / 35


@pytest.fixture(scope="module")
def aoe_lab():
    """The study's lab file under a name of this test process, with a small scratch device."""
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    # edited as text: a YAML 1.1 round trip would turn the lab's `offloads: off` into a boolean
    text = (ROOT / "labs/004-aoe-iscsi.yaml").read_text()
    text = text.replace("lab: aoe\n", f"lab: {NAME}\n").replace("disk: {size: 256M,", "disk: {size: 32M,")
    assert f"lab: {NAME}\n" in text and "size: 32M" in text
    lab = lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=text))
    try:
        yield lab
    finally:
        lab_mod.down(NAME)
        assert leftovers(NAME) == [], f"lab {NAME} left things behind"


def _netns(host: str) -> list[str]:
    return ["ip", "netns", "exec", f"perflab-{NAME}-{host}"]


def _target_processes(host: str = "tgt") -> list[str]:
    """Service processes (and their helpers) left in a lab host's network namespace."""
    pids = subprocess.run(["ip", "netns", "pids", f"perflab-{NAME}-{host}"], capture_output=True, text=True).stdout.split()
    return [n for n in (Path(f"/proc/{p}/comm").read_text().strip() for p in pids if Path(f"/proc/{p}").exists())
            if n in ("vblade", "tgtd", "nbdkit", "sleep", "xargs")]


@ROOT_ONLY
def test_aoe_initiator_reads_back_what_it_wrote_through_vblade(aoe_lab):
    device = subprocess.run(["losetup", "-j", str(aoe_lab.device_file("tgt", "disk")), "-nO", "NAME"],
                            capture_output=True, text=True, check=True).stdout.split()[0]
    vblades = [subprocess.Popen([*_netns("tgt"), "vblade", "1", "1", iface, device], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for iface in ("eth1", "eth2")]
    try:
        sizes = {}
        for iface in ("eth1", "eth2"):
            out = subprocess.run([*_netns("ini"), "python3", str(AOE), "query", "--iface", iface],
                                 capture_output=True, text=True, check=True).stdout
            sizes[iface] = json.loads(out)["max_sectors"]
        assert sizes == {"eth1": (1500 - 36) // 512, "eth2": (9000 - 36) // 512}, "sectors per frame follow the MTU"
        data = os.urandom(5 * 512)  # 5 sectors: three frames at MTU 1500, one at 9000
        for iface, lba in (("eth1", 7), ("eth2", 40)):
            subprocess.run([*_netns("ini"), "python3", str(AOE), "write", "--iface", iface, "--lba", str(lba)],
                           input=data, check=True)
            back = subprocess.run([*_netns("ini"), "python3", str(AOE), "read", "--iface", iface, "--lba", str(lba),
                                   "--count", "5"], capture_output=True, check=True).stdout
            assert back == data, f"read back over {iface} differs from what was written"
        with open(device, "rb") as disk:  # and it is on the target's device, at the right offset
            disk.seek(40 * 512)
            assert disk.read(len(data)) == data
    finally:
        for v in vblades:
            v.terminate()
            v.wait(timeout=10)


def _edited(campaign: Path, lab, tmp_path: Path, factors: str, more: dict[str, str]) -> Path:
    """A study campaign edited as text (its YAML keeps `on:` a string): ``factors`` and the exclusions replaced,
    one-second samples, one repetition, this lab's device, ports of this process."""
    text = campaign.read_text()
    grid = text[text.index("factors:"):text.index("repetitions:")]
    edits = {f"campaign: {campaign.stem}": f"campaign: t004-{campaign.stem}-{NAME}",
             "/run/perflab/aoe/tgt/disk-disk.img": str(lab.device_file("tgt", "disk")),
             "scratch: [/run/perflab/aoe/tgt]": f"scratch: [{lab.device_file('tgt', 'disk').parent}]",
             "control: 7": f"control: {40 + os.getpid() % 50}", "port: 10809": f"port: {20000 + os.getpid() % 10000}",
             grid: factors, "fingerprints: true": "fingerprints: false", **more}
    for old, new in edits.items():
        assert text.count(old) == 1, f"the campaign changed: {old!r} is not there once"
        text = text.replace(old, new)
    for pattern, new in ((r"^(\s+runtime: )\d+$", r"\g<1>1"), (r"^repetitions: \d+$", "repetitions: 1"),
                         (r"^warmups: \d+$", "warmups: 0")):
        text, count = re.subn(pattern, new, text, flags=re.M)
        assert count == 1, f"the campaign changed: {pattern!r} is not there once"
    path = tmp_path / f"{campaign.stem}.yaml"
    path.write_text(text)
    return path


def _short_campaign(lab, tmp_path: Path) -> Path:
    """The microbenchmark: one random-read cell per protocol on the MTU 1500 link, over 1 MiB."""
    return _edited(CAMPAIGN, lab, tmp_path, "factors:\n  protocol: [aoe, iscsi, nbd]\n  rw: [{label: randread, set: "
                   "{rw: randread, bs: 4096}}]\n  link: [std]\n", {"size: 67108864": "size: 1048576"})


def _net_bytes(text: str, iface: str) -> int:
    """rx_bytes + tx_bytes of ``iface`` in a /proc/net/dev snapshot."""
    for line in text.splitlines():
        if line.strip().startswith(f"{iface}:"):
            fields = line.split(":", 1)[1].split()
            return int(fields[0]) + int(fields[8])
    raise AssertionError(f"no {iface} in the snapshot")


@ROOT_ONLY
@pytest.mark.lab
def test_perflab_nbd_initiator_reads_back_what_it_wrote_and_benches_like_the_aoe_one(aoe_lab):
    """The same load loop drives NBD: what it writes through nbdkit is on the device, and bench reports its
    operations and the CPU of its loop alone."""
    device = subprocess.run(["losetup", "-j", str(aoe_lab.device_file("tgt", "disk")), "-nO", "NAME"],
                            capture_output=True, text=True, check=True).stdout.split()[0]
    server = aoe_lab.host("tgt").port("std").address
    nbd = subprocess.Popen([*_netns("tgt"), "nbdkit", "--foreground", "--exit-with-parent", "-i", server, "-p", "10811",
                            "file", device], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        script = (f"import sys; sys.path.insert(0, {str(AOE.parent)!r}); import aoe, os, time\n"
                  "for _ in range(100):\n"
                  "    try:\n"
                  f"        c = aoe.NbdInitiator({server!r}, 10811); break\n"
                  "    except OSError: time.sleep(0.05)\n"
                  "data = bytes(range(256)) * 10\n"
                  "c.write(9, data); assert c.read(9, 5) == data, 'read back differs'\n"
                  "print(c.size); c.close()")
        size = subprocess.run([*_netns("ini"), "python3", "-c", script], capture_output=True, text=True, check=True)
        assert int(size.stdout) == 32 << 20, "the export is the 32 MiB device"
        with open(device, "rb") as disk:
            disk.seek(9 * 512)
            assert disk.read(2560) == bytes(range(256)) * 10
        out = subprocess.run([*_netns("ini"), "python3", str(AOE), "bench", "--nbd", f"{server}:10811", "--rw",
                              "randread", "--bs", "4096", "--size", str(16 << 20), "--runtime", "0.5"],
                             capture_output=True, text=True, check=True).stdout
        result = json.loads(out)
        assert result["ops"] > 0 and result["bytes"] == result["ops"] * 4096 and result["export_size"] == 32 << 20
        assert 0 < result["cpu_user"] + result["cpu_system"] <= result["elapsed"] * 1.05 + 0.02
    finally:
        nbd.terminate()
        nbd.wait(timeout=10)


@ROOT_ONLY
def test_each_protocol_service_starts_serves_and_stops_and_per_op_metrics_match_counters(aoe_lab, tmp_path):
    from perflab import inventory

    c = campaign_mod.load(_short_campaign(aoe_lab, tmp_path))
    summary = runner.run(c, inventory.load(aoe_lab.inventory_path), tmp_path / "raw", stream=open(os.devnull, "w"))
    assert summary.complete and not summary.failed
    assert _target_processes() == [], "every target service was stopped"
    assert _target_processes("ini") == [], "the service that ships the AoE script was stopped"
    table, _ = tidy.frame(summary.raw_dir)
    runs = protocols.per_run(table, links=LINKS)
    assert sorted(runs["protocol"]) == ["aoe", "iscsi", "nbd"] and (runs["ops"] > 0).all()
    for row in runs.itertuples():
        sample = summary.raw_dir / "samples" / row.run_id
        meta = json.loads((sample / "meta.json").read_text())
        assert {s["name"] for s in meta["services"]} >= {f"service-{n}" for n in ("aoe-std", "tgtd", "iscsi-lun", "nbd")}
        before = monitor_text(sample / "monitors/ini", "proc-before.txt")
        after = monitor_text(sample / "monitors/ini", "proc-after.txt")
        wire = _net_bytes(after, "eth1") - _net_bytes(before, "eth1")
        assert wire > 0 and row.wire_bytes_per_op == pytest.approx(wire / row.ops, rel=1e-12)
        cost = json.loads(re.search(r"^@cost (.*)$", (sample / "stdout").read_text(), re.M)[1])
        assert row.initiator_cpu_per_op == pytest.approx(cost["initiator_cpu"] / row.ops, rel=1e-12)
        assert cost["target_processes"] >= 1
        assert str(ROOT) not in (sample / "meta.json").read_text(), "no controller path in the raw record"
    with remote.connect(inventory.load(aoe_lab.inventory_path), ["ini"]) as hosts:
        shipped = hosts["ini"].check(f"cat {blockproto.HOST_SCRIPT} | sha256sum")
    assert shipped.split()[0] == hashlib.sha256(AOE.read_bytes()).hexdigest(), "the host runs this project's script"


@ROOT_ONLY
def test_macro_personalities_run_as_fio_jobs_over_nbd_with_their_flushes(aoe_lab, tmp_path):
    from perflab import inventory

    factors = ("factors:\n  protocol: [nbd, iscsi]\n  personality:\n"
               "    - {label: webreads, set: {rw: randread, bs: 16384, depth: 8}}\n"
               "    - {label: varmail, set: {jobfile: studies/004-aoe-iscsi/fio/varmail.fio}}\n"
               "    - {label: oltp, set: {jobfile: studies/004-aoe-iscsi/fio/oltp.fio}}\n  link: [std]\n"
               "exclude:\n  - {protocol: nbd, personality: webreads}\n  - {protocol: iscsi, personality: varmail}\n"
               "  - {protocol: iscsi, personality: oltp}\n")
    c = campaign_mod.load(_edited(MACRO, aoe_lab, tmp_path, factors, {}))
    summary = runner.run(c, inventory.load(aoe_lab.inventory_path), tmp_path / "raw", stream=open(os.devnull, "w"))
    assert summary.complete and not summary.failed
    assert _target_processes() == [], "nbdkit was stopped"
    table, _ = tidy.frame(summary.raw_dir)
    runs = protocols.per_run(table, links=LINKS, workload="personality").set_index("workload")
    assert sorted(runs.index) == ["oltp", "varmail", "webreads"] and (runs["ops"] > 0).all()
    assert runs.at["webreads", "protocol"] == "iscsi" and pd.isna(runs.at["webreads", "flushes"])
    # a flush follows every write (but the last ones in flight) and no read; reads to writes as the job files say
    for personality, row in runs.drop(index="webreads").iterrows():
        out = extract_json((summary.raw_dir / "samples" / row.run_id / "stdout").read_text().split("\n@cost")[0])
        jobs = {job["jobname"]: job for job in out["jobs"]}
        assert set(jobs) == {"varmail": {"reads", "appends"}, "oltp": {"reads", "writes", "log"}}[personality]
        writes = sum(job["write"]["total_ios"] for job in jobs.values())
        assert row.flushes == sum(job["sync"]["total_ios"] for job in jobs.values()) and writes > 0
        # fio may flush once more per job as the job ends (seen under load: 310 flushes after 309 writes)
        assert writes - 2 * len(jobs) <= row.flushes <= writes + len(jobs) and jobs["reads"]["sync"]["total_ios"] == 0
        ratio = jobs["reads"]["read"]["total_ios"] / (writes - jobs.get("log", {"write": {"total_ios": 0}})["write"]["total_ios"])
        assert {"varmail": 0.5, "oltp": 5}[personality] <= ratio <= {"varmail": 2, "oltp": 20}[personality]


def _cgroup_usage(text: str) -> float:
    """CPU seconds of a cgroup snapshot: cgroup v1 ``cpuacct.usage`` (ns), else v2 ``usage_usec`` (µs)."""
    v1 = re.search(r"cpuacct\.usage <==\n(\d+)", text)
    return int(v1[1]) / 1e9 if v1 else int(re.search(r"^usage_usec (\d+)$", text, re.M)[1]) / 1e6


@pytest.fixture(scope="module")
def committed() -> dict[str, pd.DataFrame]:
    """The tidy tables of the committed confirmatory runs (parsed once for the tests below)."""
    return {c: tidy.frame(ROOT / "data/raw" / c)[0]
            for c in ("004-confirm-protocols", "004-confirm-mtu", "004-confirm-macro")}


def test_chapter_tables_come_from_the_committed_raw_data(tmp_path, committed):
    """40 samples in every cell, compared within the RMIT blocks; each adjusted interval agrees with its adjusted p;
    the MTU campaign's table compares each protocol's MTU 9000 with its 1500."""
    for campaign, mtus, others in (("004-confirm-protocols", {1500}, {"iscsi", "nbd", "nbd-fio"}),
                                   ("004-confirm-mtu", {1500, 9000}, {"nbd"})):
        runs = protocols.per_run(committed[campaign], links=LINKS)
        assert set(runs["mtu"]) == mtus and runs["cgroup_cpu_per_op"].notna().all()
        assert (runs.groupby(["protocol", "workload", "mtu"]).size() == 40).all()
        out = protocols.write(runs, name=f"t{campaign}", inputs=[], paper_dir=tmp_path, processed_dir=tmp_path,
                              generator="test")
        summary = out["summary"].read_text()
        assert "Bonferroni" in summary and "RMIT blocks" in summary and "cgroup" in out["accounting"].read_text()
        assert ("tab:" in out["mtu"].read_text()) == (len(mtus) > 1)
        rel = protocols.relative(runs, ["throughput"])
        assert set(rel["other"]) == others and rel["p_adjusted"].between(0, 1).all() and rel["blocked"].all()
        excludes = (rel["ci_low"] > 0) | (rel["ci_high"] < 0)
        assert rel["ci_level"].iloc[0] == 1 - 0.05 / len(rel)
        assert (excludes == (rel["p_adjusted"] < 0.05)).all(), rel
        assert (tmp_path / "figures" / f"t{campaign}-throughput.png").stat().st_size > 0
    values = (tmp_path / "macros" / "t004-confirm-mtu.tex").read_text()
    assert "t004-confirm-mtu/mtu/throughput/aoe/seqread/change" in values
    assert "t004-confirm-protocols/generator/throughput/nbd-fio/randread/change" in \
        (tmp_path / "macros" / "t004-confirm-protocols.tex").read_text()


def test_macro_tables_compare_iscsi_with_nbd_on_webservers_reads_only(tmp_path, committed):
    """The macro campaign: 40 samples in each of its 12 cells (5 personalities over NBD, webserver's reads over
    iSCSI, two MTUs); the protocol table has iSCSI against NBD on the one workload both ran, within the RMIT
    blocks; the MTU table has every cell at 9000 against 1500."""
    runs = protocols.per_run(committed["004-confirm-macro"], links=LINKS, workload="personality")
    sizes = runs.groupby(["protocol", "workload", "mtu"]).size()
    assert len(sizes) == 12 and (sizes == 40).all() and set(runs["mtu"]) == {1500, 9000}
    rel = protocols.relative(runs, ["throughput"], baseline="nbd")
    assert set(rel["other"]) == {"iscsi"} and set(rel["workload"]) == {"webreads"} and rel["blocked"].all()
    out = protocols.write(runs, name="tmacro", inputs=[], paper_dir=tmp_path, processed_dir=tmp_path,
                          generator="test", baseline="nbd")
    assert "tab:tmacro-mtu" in out["mtu"].read_text()
    values = (tmp_path / "macros" / "tmacro.tex").read_text()
    assert "tmacro/vs-nbd/throughput/iscsi/webreads/9000/change" in values
    assert "tmacro/mtu/throughput/nbd/oltp/change" in values


def test_cpu_per_operation_is_the_initiators_io_alone_where_its_load_generator_reports_it(committed):
    """AoE, NBD and NBD through fio report their CPU during the I/O (no interpreter start-up); iscsi-perf does not,
    so its whole command is counted; the total per operation is that plus the target's."""
    runs = protocols.per_run(committed["004-confirm-protocols"], links=LINKS)
    accounts = runs.groupby("protocol")["initiator_account"].agg(set).to_dict()
    assert accounts == {"aoe": {"io"}, "nbd": {"io"}, "nbd-fio": {"io"}, "iscsi": {"process"}}
    io = runs[runs["initiator_account"] == "io"]
    assert (io["initiator_io_cpu_per_op"] == io["loop_cpu_per_op"]).all()
    assert (io["loop_cpu_per_op"] < io["initiator_cpu_per_op"]).mean() > 0.9, "the I/O alone costs less than the process"
    assert runs["cpu_per_op"].sub(runs["initiator_io_cpu_per_op"] + runs["target_cpu_per_op"]).abs().max() < 1e-15


def test_per_operation_cpu_and_bytes_match_counter_deltas_computed_by_hand(committed):
    """A committed sample of each protocol: cgroup CPU per operation of both hosts and wire bytes per operation,
    from the raw snapshots and the operations in stdout, against the tidy table and the analysis."""
    raw, table = ROOT / "data/raw/004-confirm-protocols", committed["004-confirm-protocols"]
    runs = protocols.per_run(table, links=LINKS).set_index("run_id")
    for protocol in ("aoe", "iscsi", "nbd", "nbd-fio"):
        run_id = runs[(runs["protocol"] == protocol) & (runs["workload"] == "randread")].index[0]
        sample = raw / "samples" / run_id
        stdout = (sample / "stdout").read_text()
        if protocol == "iscsi":  # iscsi-perf prints its average IOPS; the run time is whole seconds
            ops = int(re.findall(r"iops average (\d+)", stdout)[-1]) * int(re.search(r"will run for (\d+)", stdout)[1])
        elif protocol in ("aoe", "nbd"):  # perflab's load loop
            ops = json.loads(stdout.split("\n@cost")[0])["ops"]
        else:
            ops = sum(job[d]["total_ios"] for job in extract_json(stdout.split("\n@cost")[0])["jobs"]
                      for d in ("read", "write"))
        assert runs.at[run_id, "ops"] == ops
        for host, column in (("ini", "initiator_cgroup_cpu_per_op"), ("tgt", "target_cgroup_cpu_per_op")):
            cpu = (_cgroup_usage(monitor_text(sample / f"monitors/{host}", "cgroup-after.txt"))
                   - _cgroup_usage(monitor_text(sample / f"monitors/{host}", "cgroup-before.txt")))
            assert cpu > 0
            assert runs.at[run_id, column] == pytest.approx(cpu / ops, rel=1e-12)
            tidy_row = table[(table["run_id"] == run_id) & (table["tool"] == "cgroup") & (table["host"] == host)
                             & (table["metric"] == "cpu_seconds_per_op")]["value"]
            assert tidy_row.tolist() == [pytest.approx(cpu / ops, rel=1e-12)]
        iface = LINKS[runs.at[run_id, "link"]][0]
        wire = (_net_bytes(monitor_text(sample / "monitors/ini", "proc-after.txt"), iface)
                - _net_bytes(monitor_text(sample / "monitors/ini", "proc-before.txt"), iface))
        assert runs.at[run_id, "wire_bytes_per_op"] == pytest.approx(wire / ops, rel=1e-12)
