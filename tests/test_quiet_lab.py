"""On the real lab: campaigns on two labs of one machine take turns, and a busy machine holds a campaign back."""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import ROOT_ONLY, leftovers
from perflab import campaign as campaign_mod, evidence, runner
from perflab.hosts import contention, lab as lab_mod
from perflab.formats import records

pytestmark = [ROOT_ONLY, pytest.mark.lab]

LIB = str(Path(__file__).resolve().parents[1] / "lib")

CAMPAIGN = """\
campaign: {name}
benchmark:
  tool: iperf3
  params: {{duration: 1}}
hosts: {{client: h1, server: h2}}
factors:
  parallel: [1, 2]
repetitions: 2
warmups: 0
seed: 5
fingerprints: false
"""


def _wait_for(predicate, seconds: float, what: str) -> None:
    """Poll ``predicate`` until it holds, at most ``seconds``; fail naming ``what`` otherwise."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {seconds:g} s")
        time.sleep(0.1)


def _group_gone(pgid: int) -> bool:
    """True once no process of process group ``pgid`` is left."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def two_labs():
    """Two flat two-host labs named after this process, removed (and checked gone) at the end."""
    names = [f"q{os.getpid() % 100000}{k}" for k in "ab"]
    try:
        yield [lab_mod.up(name, 2) for name in names]
    finally:
        for name in names:
            lab_mod.down(name)
            assert leftovers(name) == [], f"lab {name} left things behind"


def test_two_campaigns_started_at_once_on_two_labs_measure_one_after_the_other(two_labs, tmp_path):
    env = {**os.environ, "PYTHONPATH": LIB, "PERFLAB_MEASURE_LOCK": str(tmp_path / "measure.lock"),
           "PERFLAB_MEASURE_WAIT": "600"}
    procs = []
    for k, created in enumerate(two_labs):
        name = f"turn{k}"
        (tmp_path / f"{name}.yaml").write_text(CAMPAIGN.format(name=name))
        log = open(tmp_path / f"{name}.log", "w")
        procs.append((subprocess.Popen([sys.executable, "-m", "perflab.cli", "run", str(tmp_path / f"{name}.yaml"),
                                        "--inventory", str(created.inventory_path), "--raw", str(tmp_path / "raw")],
                                       stdout=log, stderr=subprocess.STDOUT, env=env), log))
    try:
        codes = [proc.wait(timeout=600) for proc, _ in procs]
    finally:
        for proc, log in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
    logs = [(tmp_path / f"turn{k}.log").read_text() for k in range(2)]
    assert codes == [0, 0], logs
    # the holder names itself right after taking the lock: the other may find it before or after that
    waited = [text for text in logs if re.search(r"waiting for the machine: it is measuring (campaign turn[01]|"
                                                 r"another campaign \(it has not named itself yet\))", text)]
    assert len(waited) == 1, f"exactly one campaign waited for the other: {logs}"
    assert "the machine is free after" in waited[0]
    found = evidence.collect(tmp_path / "raw")
    assert [ev.samples for ev in found] == [4, 4]
    assert [ev.overlapping for ev in found] == [0, 0], [ev.overlapping_with for ev in found]
    first, second = sorted(found, key=lambda ev: ev.start)
    assert first.end <= second.start, "the second campaign's window starts after the first one's ends"


@pytest.mark.alone
@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng is not installed")
def test_a_campaign_waits_at_its_first_block_while_stress_ng_runs_and_proceeds_when_it_stops(lab_inventory, tmp_path):
    (tmp_path / "busy.yaml").write_text(CAMPAIGN.format(name="busy")
                                        + "quiet: {max_other_cpus: 0.5, window: 1, max_wait: 60}\n")
    campaign = campaign_mod.load(tmp_path / "busy.yaml")
    before = contention.read()
    time.sleep(1)  # one reading window of the machine's load, as the gate takes it
    already = contention.delta(before, contention.read())["other_cpus"]
    if already > 0.5:
        pytest.skip(f"the machine is busy already ({already:.2f} CPUs outside the lab): this test makes it busy "
                    "and quiet again itself")
    stress = subprocess.Popen(["stress-ng", "--cpu", "2", "--timeout", "90"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    out = io.StringIO()
    result: dict = {}

    def measure():
        try:
            result["summary"] = runner.run(campaign, lab_inventory, tmp_path / "raw", stream=out)
        except BaseException as exc:  # raised again in the test's thread
            result["error"] = exc

    thread = threading.Thread(target=measure, daemon=True)
    try:
        thread.start()
        _wait_for(lambda: "the machine is busy" in out.getvalue() or "error" in result, 60, "gate message")
        if "error" in result:
            raise result["error"]
        busy = out.getvalue()
        assert "quiet: before block 0 the machine is busy: CPU used outside the lab" in busy
        assert "stress-ng" in busy, busy
        assert not list((tmp_path / "raw/busy").glob("samples/*")), "no sample was measured while it was busy"
    finally:
        os.killpg(stress.pid, signal.SIGKILL)
        stress.wait(timeout=30)
        _wait_for(lambda: _group_gone(stress.pid), 30, "end of every stress-ng process")
    mark = len(out.getvalue())
    thread.join(timeout=400)
    assert not thread.is_alive(), "the campaign did not finish"
    if "error" in result:
        raise result["error"]
    assert result["summary"].complete
    later = out.getvalue()[mark:]
    assert "stress-ng" not in later, f"stress-ng was still named after it was stopped: {later}"
    gate = records._load(tmp_path / "raw/busy/blocks/0/quiet.json")
    assert gate["polls"] >= 2 and gate["waited"] > 0
    metas = [records.read_sample(p) for p in (tmp_path / "raw/busy/samples").glob("*/meta.json")]
    assert len(metas) == 4 and all(m.contention["bounds"]["max_other_cpus"] == 0.5 for m in metas)
    assert all(m.contention["lab_cpus"] is not None for m in metas), "the lab hosts' CPU is told from the rest"


STREAMS = """\
campaign: {name}
benchmark:
  tool: iperf3
  params: {{duration: 2}}
hosts: {{client: h1, server: h2}}
factors:
  parallel: [16]
repetitions: 3
warmups: 0
seed: 5
fingerprints: false
quiet: {{max_other_cpus: 0.3, max_steal: 100, window: 1, max_wait: 3}}
"""


def _outside_now() -> float:
    """CPUs used outside the lab over one second, as the gate reads them."""
    before = contention.read()
    time.sleep(1)  # one reading window, as the gate takes it
    return contention.delta(before, contention.read())["other_cpus"]


@pytest.mark.alone
def test_a_cpu_hog_outside_the_lab_makes_samples_contended_and_the_labs_own_kernel_work_does_not(lab_inventory,
                                                                                                 tmp_path):
    already = _outside_now()
    if already > 0.15:
        pytest.skip(f"the machine is busy already ({already:.2f} CPUs outside the lab): this test needs it idle")
    (tmp_path / "streams.yaml").write_text(STREAMS.format(name="streams"))
    summary = runner.run(campaign_mod.load(tmp_path / "streams.yaml"), lab_inventory, tmp_path / "raw",
                         stream=io.StringIO())
    assert summary.complete
    streams = [records.read_sample(p).contention for p in (tmp_path / "raw/streams/samples").glob("*/meta.json")]
    assert len(streams) == 3 and all(c["format"] == contention.FORMAT for c in streams)
    assert [c["outside_exceeded"] for c in streams] == [False] * 3, streams
    assert [c["contended"] for c in streams] == [False] * 3, "16 streams keep the kernel busy: the lab's own work"
    assert max(c["irq_cpus"] for c in streams) > 0, "the streams' softirq work was seen"

    (tmp_path / "hog.yaml").write_text(STREAMS.format(name="hog"))
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        summary = runner.run(campaign_mod.load(tmp_path / "hog.yaml"), lab_inventory, tmp_path / "raw",
                             stream=io.StringIO())
    finally:
        os.killpg(hog.pid, signal.SIGKILL)
        hog.wait(timeout=30)
    assert summary.complete
    hogged = [records.read_sample(p).contention for p in (tmp_path / "raw/hog/samples").glob("*/meta.json")]
    assert len(hogged) == 3
    assert all(c["outside_exceeded"] and c["contended"] and c["outside_cpus"] > 0.3 for c in hogged), hogged
    assert all(any(not b["kernel"] and b["cpus"] > 0.3 for b in c["busiest"]) for c in hogged), "the hog is named"
    found = {ev.campaign: ev for ev in evidence.collect(tmp_path / "raw", tmp_path)}
    assert (found["streams"].contended, found["hog"].contended_outside) == (0, 3)
