"""Faults: a full disk ends in one clear line, with nothing partial kept; raw bytes stay verbatim."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import campaign_record
from perflab import store
from perflab.hosts.remote import Result

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
    from perflab import tools
    from perflab.campaign import design
    from perflab.runner import samples
    raw = store.RawStore(tmp_path, "camp")
    raw.begin(campaign_record("camp", digest="abc"))
    now = time.time()
    res = Result("h1", "printf", b"\xff\xfe 42\n", b"\x80err", 0, now, now)
    from perflab import campaign as campaign_mod
    campaign = campaign_mod.load(ROOT / "studies/tools/campaigns/tool-sysbench.yaml")
    run = design.schedule(campaign)[0]
    cmd = tools.get("sysbench").commands(campaign.cell_params(run.cell.levels), {})[0]

    from perflab import inventory
    from perflab.hosts import remote
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
factors: {parallel: [1]}
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
    record = json.loads(records_[0].read_text())
    killed = record["killed"]
    assert record["format"] == 1 and record["cause"].startswith("left by an earlier run")
    assert any("3600.5" in line for line in killed["h3"])  # the setsid child too, on the neighbour's host
    assert any("sleep 3600.25" in line for line in killed["h3"]) and any("iperf3 -s" in line for line in killed["h2"])
    assert not any("iperf3 -s" in line or "sleep 3600" in line for line in killed.get("h1", []))
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


def _probe_campaign(tmp_path, name: str, level: str, repetitions: int):
    """A localhost campaign of the test-only probe tool: one cell (its level ``level``), ``repetitions`` samples."""
    from helpers import load_campaign
    return load_campaign(f"campaign: {name}\nbenchmark: {{tool: probe, params: {{cmd: 'echo 1'}}}}\n"
                         f"hosts: {{client: h1}}\nfactors: {{x: [{level}]}}\nrepetitions: {repetitions}\n"
                         "warmups: 0\nseed: 7\nmonitors: false\nfingerprints: false\nprograms: [cmd]\n"
                         "setup: [{on: client, run: 'echo {x}'}]\n", tmp_path)


@pytest.fixture()
def small_disk(tmp_path):
    """A 70 MiB tmpfs (room for the run's 64 MiB preflight) mounted for the test and unmounted after it."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=70m", "perflab-test", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def _fill(path: Path) -> None:
    """Write ``path`` until its file system is full (ENOSPC)."""
    with open(path, "wb", buffering=0) as fh:
        for size in (1 << 20, 4096, 1):
            try:
                while True:
                    fh.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == 28


def test_a_ledger_filled_to_enospc_mid_line_keeps_whole_lines_then_resumes_and_verifies(probe, small_disk, tmp_path):
    from perflab import inventory, runner
    from perflab.campaign import design
    from perflab.ledger import LedgerError
    from perflab.formats.records import LedgerEvent

    # Choose the level's length so that after some sample k the ledger's last page has less room than the next
    # "running" line needs: the disk is then filled, and that line is cut by ENOSPC (tmpfs allocates whole pages).
    def line(run_id, state):  # chained (prev); a done event binds the sample's three files
        files = dict.fromkeys(("meta.json", "stderr", "stdout"), "0" * 64) if state == "done" else None
        return len(LedgerEvent(t=1795450308.409, run_id=run_id, state=state, attempt=1, files=files,
                               prev="0" * 64).to_line())
    for n in range(1, 120):
        run_id = design.schedule(_probe_campaign(tmp_path, "full", "a" * n, 1))[0].run_id
        pair, running = line(run_id, "running") + line(run_id, "done"), line(run_id, "running")
        k = next((k for k in range(1, 40) if 40 < -(k * pair) % 4096 < running - 40), None)
        if k:
            break
    campaign = _probe_campaign(tmp_path, "full", "a" * n, k + 2)
    ledger = small_disk / "full" / "ledger.jsonl"
    filled = []

    def on_sample(_run):
        if not filled and 0 < -ledger.stat().st_size % 4096 < running:
            _fill(small_disk / "filler")
            filled.append(ledger.stat().st_size)

    with pytest.raises(LedgerError) as err:
        try:
            runner.run(campaign, inventory.localhost(), small_disk, stream=open(os.devnull, "w"), on_sample=on_sample)
        finally:
            assert filled, "the ledger never came near a page's end"
    assert "the disk is full" in str(err.value) and "\n" not in str(err.value)
    data = ledger.read_bytes()
    assert len(data) == filled[0] and data.endswith(b"\n")  # the cut line was taken back whole
    (small_disk / "filler").unlink()
    summary = runner.run(campaign, inventory.localhost(), small_disk, stream=open(os.devnull, "w"))
    assert summary.complete and len(summary.failed) == 0
    assert store.verify(small_disk / "full") == []


def test_a_torn_last_ledger_line_is_cut_recorded_and_the_run_resumes_and_verifies(probe, tmp_path):
    from perflab import inventory, runner
    campaign = _probe_campaign(tmp_path, "torn", "a", 4)
    out = open(os.devnull, "w")
    runner.run(campaign, inventory.localhost(), tmp_path / "raw", stream=out, limit=2)
    cdir = tmp_path / "raw" / "torn"
    whole = (cdir / "ledger.jsonl").read_bytes()
    with open(cdir / "ledger.jsonl", "ab") as fh:  # what a full disk left with the old writer: half a line
        fh.write(b'{"t": 1795450308.409, "run_id": "x-r0')
    summary = runner.run(campaign, inventory.localhost(), tmp_path / "raw", stream=out)
    assert summary.complete and any("cut 1 torn line(s)" in n for n in summary.notes), summary.notes
    repair = json.loads(next((cdir / "repairs").glob("ledger-*.json")).read_text())
    assert repair["cut"] == [{"line": 5, "cut": '{"t": 1795450308.409, "run_id": "x-r0', "kept": None}]
    assert (cdir / "ledger.jsonl").read_bytes().startswith(whole)
    assert store.verify(cdir) == []


def _cgroups(owner: str) -> list[str]:
    """The campaign's cgroups on this machine (the lab's hosts mount the same cgroup2 hierarchy)."""
    out = subprocess.run(["sh", "-c", f"find /sys/fs/cgroup /sys/fs/cgroup/unified -maxdepth 8 -type d "
                                      f"-name perflab-{owner} 2>/dev/null"], capture_output=True, text=True).stdout
    return out.split()


def _count(pattern: str) -> int:
    return int(subprocess.run(["pgrep", "-fc", pattern], capture_output=True, text=True).stdout.strip() or 0)


ESCAPES = """\
campaign: escapes
benchmark: {tool: iperf3, params: {duration: 1, port: 5295}}
hosts: {client: h1, server: h2, neighbour: h3}
factors: {parallel: [1]}
repetitions: 3
warmups: 0
seed: 11
monitors: true
fingerprints: false
setup:
  - {on: client, run: "env -i setsid sleep 3600.61 > /dev/null 2>&1 &"}
neighbours:
  - {on: neighbour, run: "sh -c 'env -i setsid sleep 3600.62 > /dev/null 2>&1 & exec sleep 3600.63'"}
"""


@pytest.mark.lab
def test_steps_and_loads_started_under_env_i_do_not_outlive_a_run(lab, tmp_path):
    from perflab import campaign as campaign_mod, inventory, runner
    (tmp_path / "c.yaml").write_text(ESCAPES)
    summary = runner.run(campaign_mod.load(tmp_path / "c.yaml"), inventory.load(lab.inventory_path), tmp_path / "raw",
                         stream=open(os.devnull, "w"))
    assert summary.complete
    assert [_count(f"sleep 3600.6{k}") for k in (1, 2, 3)] == [0, 0, 0], "a process escaped the registry"
    assert _cgroups(store.RawStore(tmp_path / "raw", "escapes").owner) == []


@pytest.mark.lab
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_the_run_cleans_the_hosts_and_the_run_resumes(lab, tmp_path, signum):
    from perflab import campaign as campaign_mod, inventory, runner
    name = f"signalled{signum}"
    (tmp_path / "c.yaml").write_text(ESCAPES.replace("campaign: escapes", f"campaign: {name}")
                                     .replace("repetitions: 3", "repetitions: 4"))
    raw = tmp_path / "raw"
    owner = store.RawStore(raw, name).owner
    samples = raw / name / "samples"
    argv = [sys.executable, "-m", "perflab.cli", "run", str(tmp_path / "c.yaml"), "--inventory",
            str(lab.inventory_path), "--raw", str(raw)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "lib")})
    try:
        deadline = time.monotonic() + 120
        while not (samples.is_dir() and len(list(samples.iterdir())) >= 1):
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended before the signal"
            time.sleep(0.05)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"stopped by {signal.Signals(signum).name} after" in err and "Rerun the same command to resume" in err
    assert "no process of the campaign is left on its hosts" in err
    assert _owned(owner) == [] and _cgroups(owner) == []
    assert [_count(f"sleep 3600.6{k}") for k in (1, 2, 3)] == [0, 0, 0]
    summary = runner.run(campaign_mod.load(tmp_path / "c.yaml"), inventory.load(lab.inventory_path), raw,
                         stream=open(os.devnull, "w"))
    assert summary.complete and store.verify(raw / name) == []
    assert _owned(owner) == [] and _cgroups(owner) == []


def test_a_second_signal_while_stopping_does_not_cut_the_cleanup_short():
    from perflab.runner.stopping import Stopped, on_signals
    cleaned = []
    with on_signals():
        with pytest.raises(Stopped) as err:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(1000):  # the handler runs between bytecodes, at the latest here
                    time.sleep(0.001)
            finally:
                os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C while the hosts are being cleaned
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.01)
                cleaned.append("monitors stopped")
    assert cleaned == ["monitors stopped"] and err.value.signum == signal.SIGINT and err.value.exit_code == 130


LATE = """\
campaign: late
benchmark: {tool: probe, params: {cmd: "echo 1"}}
hosts: {client: h1, server: h2}
factors: {x: [a]}
repetitions: 2
warmups: 0
seed: 3
monitors: false
fingerprints: false
programs: [cmd]
setup: [{on: client, run: "echo {x}"}]
services:
  - {name: late, on: server, start: "sh -c 'sleep 30 && exec iperf3 -s -p 5294'",
     ready: "ss -Hltn 'sport = :5294' | grep -q ."}
"""


@pytest.mark.lab
def test_a_service_that_starts_late_on_a_port_another_process_holds_is_refused(probe, lab, hosts, tmp_path):
    from perflab import campaign as campaign_mod, inventory, runner
    (tmp_path / "c.yaml").write_text(LATE)
    squatter = hosts["h2"].start(f"squatter-{os.getpid()}", "iperf3 -s -p 5294")
    try:
        hosts["h2"].run("until ss -Hltn 'sport = :5294' | grep -q .; do sleep 0.05; done", timeout=10)
        with pytest.raises(runner.RunnerError, match=r"service-late .* its readiness check passed on port 5294, but "
                                                     r"pid \d+ \(iperf3\) holds that port, not the service"):
            runner.run(campaign_mod.load(tmp_path / "c.yaml"), inventory.load(lab.inventory_path), tmp_path / "raw",
                       stream=open(os.devnull, "w"))
    finally:
        hosts["h2"].stop(squatter)
    assert not (tmp_path / "raw" / "late" / "samples").exists()
    assert _count("sleep 30 && exec iperf3") == 0


def test_a_stop_lost_in_a_finalizer_is_raised_before_the_next_sample():
    # Python ignores an exception raised in __del__: a signal whose Stopped lands there must still stop the run
    import signal

    from perflab.runner import stopping

    class Finalized:
        def __del__(self) -> None:
            signal.raise_signal(signal.SIGTERM)
            for _ in range(1000):  # the handler runs here, inside the finalizer, and its exception is ignored
                pass

    with pytest.raises(stopping.Stopped) as info:
        with stopping.on_signals():
            Finalized()
            stopping.check()
    assert info.value.signum == signal.SIGTERM
    stopping.check()  # outside the block nothing is pending
