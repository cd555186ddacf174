"""The experiment engine on the real lab: neighbours, settle, timeouts, fingerprints, kill -9 and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from helpers import BOUNDARY, ROOT_ONLY, load_campaign, monitor_text
from perflab import runner, store
from perflab.campaign import design
from perflab.hosts import fingerprint, remote
from perflab.ledger import Ledger

pytestmark = [ROOT_ONLY, pytest.mark.lab]


def metas(raw: Path, kind: str = "samples") -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((raw / kind).glob("*/meta.json"))]


def count_procs(pattern: str) -> int:
    return int(subprocess.run(["pgrep", "-fc", pattern], capture_output=True, text=True).stdout.strip() or 0)


NEIGHBOUR = """\
campaign: neighbour
benchmark: {tool: probe, params: {cmd: "pgrep -fc 'slee[p] 1000.5' || true"}}
programs: [cmd]
hosts: {client: h1, neighbour: h3}
factors: {load: ["off", "on"]}
repetitions: 2
warmups: 1
seed: 3
settle: {hosts: [client, neighbour], max_load1: 1000, timeout: 5, poll: 0.2}
neighbours:
  - {on: neighbour, run: "sleep 1000.5", cells: {load: ["on"]}}
"""


def test_neighbour_runs_only_in_its_cells_with_monitors_settle_and_warmups(probe, lab_inventory, tmp_path):
    c = load_campaign(NEIGHBOUR, tmp_path)
    summary = runner.run(c, lab_inventory, tmp_path / "raw", stream=open(os.devnull, "w"))
    assert summary.complete and not summary.failed
    assert count_procs("slee[p] 1000.5") == 0
    found = metas(summary.raw_dir)
    assert len(found) == 6 and sum(m["warmup"] for m in found) == 2
    for m in found:
        seen = int((summary.raw_dir / "samples" / m["run_id"] / "stdout").read_text())
        assert seen == (1 if m["cell"]["load"] == "on" else 0), m["run_id"]
        assert bool(m["neighbours"]) == (m["cell"]["load"] == "on")
        assert m["settle"]["satisfied"] and set(m["settle"]["loads"]) == {"h1", "h3"}
        assert m["warmup"] == m["run_id"].split("-")[-2].startswith("w")
        for host in ("h1", "h3"):
            sar = json.loads(monitor_text(summary.raw_dir / "samples" / m["run_id"] / "monitors" / host, "sar.json"))
            assert "sysstat" in sar
    assert sorted(p.name for p in (summary.raw_dir / "blocks" / "0").iterdir()) == [
        "differences.json", "fingerprint-after-h1.json", "fingerprint-after-h3.json",
        "fingerprint-before-h1.json", "fingerprint-before-h3.json"]
    assert store.verify(summary.raw_dir) == []


TIMEOUTS = """\
campaign: timeouts
benchmark: {tool: probe}
programs: [cmd]
hosts: {client: h1}
factors: {cmd: ["echo 1", "sleep 3.25; echo 2"]}
repetitions: 1
warmups: 0
retries: 0
timeout: 1
monitors: false
fingerprints: false
settle: {max_load1: 0, timeout: 0.3, poll: 0.1}
"""


def test_settle_timeout_and_sample_timeout_are_recorded(probe, lab_inventory, tmp_path):
    c = load_campaign(TIMEOUTS, tmp_path)
    summary = runner.run(c, lab_inventory, tmp_path / "raw", stream=open(os.devnull, "w"))
    assert summary.done == 1 and len(summary.failed) == 1
    (ok,) = metas(summary.raw_dir)
    assert ok["cell"]["cmd"] == "echo 1"
    assert ok["settle"]["satisfied"] is False and ok["settle"]["waited"] >= 0.3 and ok["settle"]["loads"]["h1"] > 0
    (bad,) = metas(summary.raw_dir, "failed")
    assert bad["status"] == "failed" and bad["reason"] == "timed out after 1 s on h1"
    assert Ledger(summary.raw_dir / "ledger.jsonl").failures() == {bad["run_id"]: ["timed out after 1 s on h1"]}
    assert count_procs("sleep 3.2[5]") == 0


MTU = """\
campaign: mtu
benchmark: {tool: probe, params: {cmd: "cat /sys/class/net/eth0/mtu"}}
programs: [cmd]
hosts: {client: h1, peer: h2}
factors: {mtu: [1400]}
repetitions: 2
warmups: 0
monitors: false
setup: [{on: client, run: "ip link set dev eth0 mtu {mtu}"}]
teardown: [{on: client, run: "ip link set dev eth0 mtu 1500"}]
"""


def test_fingerprints_report_an_mtu_change_made_by_a_setup_step(probe, lab_inventory, tmp_path):
    c = load_campaign(MTU, tmp_path)
    with remote.connect(lab_inventory, ["h1"]) as hosts:
        assert hosts["h1"].check("cat /sys/class/net/eth0/mtu").strip() == "1500"
        out = tmp_path / "out.txt"
        try:
            with open(out, "w") as stream:
                summary = runner.run(c, lab_inventory, tmp_path / "raw", stream=stream)
            assert hosts["h1"].check("cat /sys/class/net/eth0/mtu").strip() == "1500"
        finally:
            hosts["h1"].run("ip link set dev eth0 mtu 1500")
    assert summary.complete
    assert {(summary.raw_dir / "samples" / m["run_id"] / "stdout").read_text().strip() for m in metas(summary.raw_dir)} == {"1400"}
    first = json.loads((summary.raw_dir / "blocks/0/differences.json").read_text())
    second = json.loads((summary.raw_dir / "blocks/1/differences.json").read_text())
    assert {"key": "net.eth0.mtu", "before": 1500, "after": 1400, "hosts": ["h1"]} in first["changed"]
    assert {"key": "net.eth0.mtu", "before": 1400, "after": 1500, "hosts": ["h1", "h2"]} in first["between_hosts_after"]
    assert second["changed"] == [] and second["since_previous_block"] == []
    assert json.loads((summary.raw_dir / "blocks/1/fingerprint-before-h1.json").read_text())["facts"]["net.eth0.mtu"] == 1400
    h2_after = json.loads((summary.raw_dir / "blocks/0/fingerprint-after-h2.json").read_text())
    assert h2_after["facts_from"] == "blocks/0/fingerprint-before-h2.json", "h2 did not change: its digest held"
    h1_after = json.loads((summary.raw_dir / "blocks/0/fingerprint-after-h1.json").read_text())
    assert "facts_from" not in h1_after, "h1's MTU moved its digest: probed in full"
    assert "block 0: h1: net.eth0.mtu changed from 1500 to 1400" in out.read_text()


@pytest.mark.parametrize("gated", [False, True], ids=["no-gate", "gate"])
def test_a_blocks_fingerprints_before_are_the_previous_blocks_after_unless_a_quiet_gate_runs_between(
        probe, lab_inventory, tmp_path, monkeypatch, gated):
    c = load_campaign(BOUNDARY + ("quiet: {window: 0.05}\n" if gated else ""), tmp_path)
    collect, probes = fingerprint.collect, []

    def counted(host, *args, **kwargs):
        probes.append((host.name, kwargs["phase"]))
        return collect(host, *args, **kwargs)

    monkeypatch.setattr(fingerprint, "collect", counted)
    summary = runner.run(c, lab_inventory, tmp_path / "raw", stream=open(os.devnull, "w"))
    assert summary.complete and not summary.failed and len(metas(summary.raw_dir)) == 3
    phases = ["before block 0", "after block 0", "after block 1", "after block 2"]
    if gated:
        phases[2:2] = ["before block 1"]
        phases[4:4] = ["before block 2"]
    assert sorted(probes) == sorted((h, p) for h in ("h1", "h2") for p in phases)
    blocks = summary.raw_dir / "blocks"
    for host in ("h1", "h2"):
        first = json.loads((blocks / f"0/fingerprint-before-{host}.json").read_text())
        assert "probe_from" not in first and "facts_from" not in first and first["format"] == 4, "a full probe"
        for block in (1, 2):
            before = json.loads((blocks / f"{block}/fingerprint-before-{host}.json").read_text())
            after = json.loads((blocks / f"{block - 1}/fingerprint-after-{host}.json").read_text())
            if gated:
                assert "probe_from" not in before and before["collected_at"] > after["collected_at"]
                continue
            assert before.pop("probe_from") == f"blocks/{block - 1}/fingerprint-after-{host}.json"
            assert before == after
            assert after["facts_from"] == f"blocks/0/fingerprint-before-{host}.json"
        for block in range(3):
            assert json.loads((blocks / f"{block}/differences.json").read_text())["since_previous_block"] == []
    assert store.verify(summary.raw_dir) == []


KILL = """\
campaign: killed
benchmark: {tool: ping, params: {count: 1}}
hosts: {client: h1, server: h2}
factors: {size: [56, 1000]}
repetitions: 5
warmups: 1
seed: 11
monitors: false
"""


def test_kill_9_at_arbitrary_points_then_resume_yields_exactly_the_planned_runs(lab, lab_inventory, tmp_path):
    c = load_campaign(KILL, tmp_path)
    raw = tmp_path / "raw"
    samples = raw / "killed" / "samples"
    argv = [sys.executable, "-m", "perflab.cli", "run", str(tmp_path / "c.yaml"),
            "--inventory", str(lab.inventory_path), "--raw", str(raw)]
    for k in (2, 7):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not (samples.is_dir() and len(list(samples.iterdir())) >= k):
                assert proc.poll() is None and time.monotonic() < deadline, "the run ended before it was killed"
                time.sleep(0.01)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    stored = len(list(samples.iterdir()))
    assert 7 <= stored < 12
    summary = runner.run(c, lab_inventory, raw, stream=open(os.devnull, "w"))
    planned = [r.run_id for r in design.schedule(c)]
    assert summary.complete and summary.already_done + summary.done == 12
    assert sorted(p.name for p in samples.iterdir()) == sorted(planned)
    done_events = Counter(e.run_id for e in Ledger(raw / "killed" / "ledger.jsonl").events() if e.state == "done")
    assert set(done_events) <= set(planned) and max(done_events.values()) == 1
    assert store.verify(raw / "killed") == []
    assert sorted(p.name for p in (raw / "killed" / "blocks").iterdir()) == [str(b) for b in range(6)]
