"""The machine-wide measurement lock: one campaign measures at a time; a crash releases it; others wait or stop."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from perflab import cli
from perflab.hosts import measurelock

LIB = str(Path(__file__).resolve().parents[1] / "lib")


@pytest.fixture
def lockfile(tmp_path, monkeypatch):
    """The lock file of this test (never the machine's own)."""
    path = tmp_path / "run" / "measure.lock"
    monkeypatch.setenv(measurelock.ENV, str(path))
    return path


@pytest.fixture
def holder(lockfile):
    """Start a process holding the lock for campaign 'other' until its stdin closes; yield it once it holds."""
    procs = []

    def start() -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent("""
                import sys
                from perflab.hosts import measurelock
                with measurelock.hold("other", eta_seconds=90, stream=sys.stderr):
                    print("held", flush=True)
                    sys.stdin.read()
            """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": LIB})
        procs.append(proc)
        assert proc.stdout.readline().strip() == "held"
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def test_the_holder_is_named_in_the_lock_file_and_cleared_on_release(lockfile):
    with measurelock.hold("mine", eta_seconds=60, wait=0) as me:
        found = measurelock.read_holder()
        assert found == me and found.campaign == "mine" and found.pid == os.getpid() and found.eta_utc
        assert json.loads(lockfile.read_text())["format"] == measurelock.FORMAT
    assert measurelock.read_holder() is None
    assert lockfile.read_text() == ""


def test_a_second_campaign_with_no_wait_stops_in_one_line_naming_the_holder(holder):
    proc = holder()
    with pytest.raises(measurelock.MachineBusy) as err:
        with measurelock.hold("mine", wait=0, stream=io.StringIO()):
            pytest.fail("took a lock another process holds")
    text = str(err.value)
    assert "\n" not in text
    assert f"campaign other (pid {proc.pid} on " in text and "expected to end about" in text


def test_a_waiting_campaign_says_whom_it_waits_for_and_measures_once_the_holder_ends(holder):
    proc = holder()
    out = io.StringIO()
    entered = threading.Event()

    def second():
        with measurelock.hold("mine", wait=60, stream=out, announce=0.5):
            entered.set()

    thread = threading.Thread(target=second)
    thread.start()
    deadline = time.monotonic() + 30
    while out.getvalue().count("waiting for the machine") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not entered.is_set()
    assert out.getvalue().count(f"it is measuring campaign other (pid {proc.pid}") >= 2, "re-announced while waiting"
    proc.stdin.close()
    thread.join(timeout=30)
    assert entered.is_set() and "the machine is free after" in out.getvalue()


def test_a_killed_holder_releases_the_lock(holder):
    proc = holder()
    assert measurelock.read_holder().pid == proc.pid
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert measurelock.read_holder() is None
    with measurelock.hold("mine", wait=0) as me:
        assert me.campaign == "mine"


def test_the_lock_is_reentrant_in_one_thread_only(lockfile):
    with measurelock.hold("outer", wait=0) as outer:
        with measurelock.hold("inner", wait=0) as inner:
            assert inner is outer
        other: list[BaseException] = []

        def elsewhere():
            try:
                with measurelock.hold("thread", wait=0, stream=io.StringIO()):
                    pass
            except measurelock.MachineBusy as exc:
                other.append(exc)

        t = threading.Thread(target=elsewhere)
        t.start()
        t.join(timeout=30)
        assert other and "campaign outer" in str(other[0])
        assert measurelock.read_holder().campaign == "outer"


def test_perflab_run_no_wait_stops_with_one_line_while_another_campaign_measures(probe, holder, tmp_path, capsys):
    (tmp_path / "c.yaml").write_text("campaign: c\nbenchmark: {tool: probe}\nprograms: [cmd]\n"
                                     "hosts: {client: h1}\nfactors: {cmd: ['echo 1']}\nrepetitions: 1\nwarmups: 0\nseed: 1\n"
                                     "monitors: false\nfingerprints: false\n")
    proc = holder()
    code = cli.main(["run", str(tmp_path / "c.yaml"), "--inventory", "localhost", "--raw", str(tmp_path / "raw"),
                     "--no-wait"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"campaign other (pid {proc.pid}" in err and "without --no-wait" in err
    assert not (tmp_path / "raw/c/samples").exists() or not any((tmp_path / "raw/c/samples").iterdir())


def test_a_pilot_takes_the_same_lock(probe, holder, tmp_path):
    from perflab import campaign as campaign_mod, inventory, pilot

    (tmp_path / "c.yaml").write_text("campaign: c\nbenchmark: {tool: probe}\nprograms: [cmd]\n"
                                     "hosts: {client: h1}\nfactors: {cmd: ['echo 1']}\nrepetitions: 3\nwarmups: 0\nseed: 1\n"
                                     "monitors: false\nfingerprints: false\n")
    proc = holder()
    with pytest.raises(measurelock.MachineBusy, match=f"campaign other \\(pid {proc.pid}"):
        pilot.run(campaign_mod.load(tmp_path / "c.yaml"), inventory.localhost(), tmp_path / "pilot", repetitions=2,
                  stream=io.StringIO(), wait=0)
    assert not list((tmp_path / "pilot").glob("c-pilot/samples/*"))


def test_a_live_test_of_the_suite_is_skipped_with_the_reason_when_the_machine_is_busy_measuring(holder, tmp_path):
    proc = holder()
    (tmp_path / "test_busy.py").write_text(textwrap.dedent("""
        from perflab.hosts import measurelock

        def test_measures():
            with measurelock.hold("mine", wait=0):
                raise AssertionError("measured on a busy machine")
    """))
    tests = str(Path(__file__).resolve().parent)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-q", "-rs", "-p", "no:cacheprovider",
                           str(tmp_path / "test_busy.py")], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": f"{LIB}:{tests}"}, timeout=300)
    assert "1 skipped" in done.stdout, done.stdout + done.stderr
    assert f"the machine is measuring campaign other (pid {proc.pid}" in done.stdout
