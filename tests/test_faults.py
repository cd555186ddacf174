"""Faults: a full disk ends in one clear line, with nothing partial kept; raw bytes stay verbatim."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import campaign_record
from perflab import store
from perflab.remote import Result

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def tiny_disk(tmp_path):
    """A 1 MiB tmpfs mounted for the test and unmounted after it."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "perflab-test", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_the_preflight_refuses_a_disk_without_room(tiny_disk):
    raw = store.RawStore(tiny_disk, "camp")
    with pytest.raises(store.StoreError, match=r"only 1\.0 MiB free on its file system; perflab needs at least 64 MiB"):
        raw.begin(campaign_record("camp", digest="abc"))


def test_a_disk_that_fills_up_mid_run_ends_in_one_line_with_nothing_partial(tiny_disk):
    raw = store.RawStore(tiny_disk, "camp")
    raw.begin(campaign_record("camp", digest="abc"), min_free=0)
    stored = 0
    with pytest.raises(store.StoreError) as err:
        for i in range(100):
            raw.put_sample(f"r{i}", {"stdout": os.urandom(100_000), "meta.json": "{}"})
            stored += 1
    message = str(err.value)
    assert "the disk is full (No space left on device) while storing sample samples/r" in message
    assert "\n" not in message and 5 <= stored < 100
    assert not list((raw.dir / "samples").glob(".tmp-*"))
    assert store.verify(raw.dir) == [] and raw.done_ids() == {f"r{i}" for i in range(stored)}
    assert raw.manifest.read_bytes().endswith(b"\n")


def test_perflab_run_on_a_full_disk_prints_one_line_and_no_traceback(tiny_disk):
    campaign = ROOT / "studies/tools/campaigns/tool-sysbench.yaml"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    done = subprocess.run([sys.executable, "-m", "perflab.cli", "run", str(campaign), "--inventory", "localhost",
                           "--raw", str(tiny_disk)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "MiB free on its file system" in done.stderr


def test_non_utf8_output_is_stored_byte_for_byte_and_checksummed_as_such(tmp_path):
    from perflab import design, tools
    from perflab.runner import samples
    raw = store.RawStore(tmp_path, "camp")
    raw.begin(campaign_record("camp", digest="abc"))
    now = time.time()
    res = Result("h1", "printf", b"\xff\xfe 42\n", b"\x80err", 0, now, now)
    from perflab import campaign as campaign_mod
    campaign = campaign_mod.load(ROOT / "studies/tools/campaigns/tool-sysbench.yaml")
    run = design.schedule(campaign)[0]
    cmd = tools.get("sysbench").commands(campaign.cell_params(run.cell.levels), {})[0]

    from perflab import inventory, remote
    host = remote.Host(inventory.localhost()["h1"])
    files = samples._sample_files(campaign, tools.get("sysbench"), run, 1, [(cmd, host, res)], "",
                                  settle=None, neighbours=[], services=[])
    final = raw.put_sample(run.run_id, files)
    assert (final / "stdout").read_bytes() == b"\xff\xfe 42\n" and (final / "stderr").read_bytes() == b"\x80err"
    import hashlib
    listed = store.read_manifest(raw.dir)
    assert listed[f"samples/{run.run_id}/stdout"] == hashlib.sha256(b"\xff\xfe 42\n").hexdigest()
    assert json.loads((final / "meta.json").read_text())["run_id"] == run.run_id


LEFTOVERS = """\
campaign: leftovers
benchmark: {tool: iperf3, params: {duration: 1, port: 5299}}
hosts: {client: h1, server: h2, neighbour: h3}
factors: {load: ["on"]}
repetitions: 40
warmups: 0
monitors: true
fingerprints: false
neighbours:
  - {on: neighbour, run: "sleep 3600.25"}
  - {on: neighbour, run: "sh -c 'setsid sleep 3600.5 & sleep 3600.75'"}
"""


def _owned(owner: str) -> list[str]:
    """Processes on this kernel (the lab's hosts share it) registered to ``owner``."""
    out = subprocess.run(["sh", "-c", f"grep -lzx PERFLAB_OWNER={owner} /proc/[0-9]*/environ 2>/dev/null"],
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line]


@pytest.mark.lab
def test_kill_9_then_resume_stops_and_records_what_the_killed_run_left(lab, tmp_path):
    from perflab import campaign as campaign_mod, runner
    (tmp_path / "c.yaml").write_text(LEFTOVERS)
    raw = tmp_path / "raw"
    owner = store.RawStore(raw, "leftovers").owner
    samples = raw / "leftovers" / "samples"
    argv = [sys.executable, "-m", "perflab.cli", "run", str(tmp_path / "c.yaml"), "--inventory",
            str(lab.inventory_path), "--raw", str(raw)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 120
        while not (samples.is_dir() and len(list(samples.iterdir())) >= 2):
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended before it was killed"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    left = _owned(owner)
    assert len(left) >= 4, "expected the iperf3 server, both neighbours and the setsid child to be left"
    campaign = campaign_mod.load(tmp_path / "c.yaml")
    from perflab import inventory
    summary = runner.run(campaign, inventory.load(lab.inventory_path), raw, limit=1, stream=open(os.devnull, "w"))
    records_ = list((raw / "leftovers" / "leftovers").glob("*.json"))
    assert len(records_) == 1 and any("stopped" in n and "earlier attempt" in n for n in summary.notes)
    killed = json.loads(records_[0].read_text())["killed"]
    assert any("3600.5" in line for lines in killed.values() for line in lines)  # the setsid child too
    assert _owned(owner) == [], "the resumed run left processes behind"
    assert store.verify(raw / "leftovers") == []
    meta = json.loads(next(samples.iterdir()).joinpath("meta.json").read_text())
    assert len(meta["neighbours"]) == 2


@pytest.mark.lab
def test_a_sample_timeout_kills_setsid_children_too(hosts):
    host = hosts["h1"]
    res = host.run("setsid sleep 3601.5 & sleep 30", timeout=1)
    assert res.timed_out
    assert host.run("pgrep -f 'sleep 3601.5'", tagged=False).stdout.strip() == ""


@pytest.mark.lab
def test_a_service_whose_port_another_process_holds_is_refused_not_measured(lab, hosts, tmp_path):
    from perflab import campaign as campaign_mod, inventory, runner
    text = LEFTOVERS.replace("campaign: leftovers", "campaign: squatted").replace("5299", "5298")
    (tmp_path / "c.yaml").write_text(text.split("neighbours:")[0])
    address = inventory.load(lab.inventory_path)["h2"].address
    squatter = hosts["h2"].start(f"squatter-{os.getpid()}", f"iperf3 -s -B {address} -p 5298")
    try:
        hosts["h2"].run("until ss -Hltn 'sport = :5298' | grep -q .; do sleep 0.05; done", timeout=10)
        with pytest.raises(runner.RunnerError, match=r"iperf3-server .* exited although its readiness check passed"):
            runner.run(campaign_mod.load(tmp_path / "c.yaml"), inventory.load(lab.inventory_path), tmp_path / "raw",
                       limit=1, stream=open(os.devnull, "w"))
    finally:
        hosts["h2"].stop(squatter)
    assert not (tmp_path / "raw" / "squatted" / "samples").exists()
