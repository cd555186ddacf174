"""Monitors: a block's sysstat recording read around samples on this machine and on lab hosts, always stopped."""

from __future__ import annotations

import calendar
import json
import os
import secrets
import signal
import time
import shutil
import subprocess
from pathlib import Path

import pytest

from perflab import inventory
from perflab.hosts import monitors, remote
from perflab.hosts.monitors import MonitorError



def _running(fragment: str) -> list[str]:
    """Command lines of live processes on this machine (lab hosts share its process table) containing ``fragment``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if proc.name.isdigit() and fragment in cmdline:
            found.append(cmdline)
    return found


def _eth0_rx_packets(proc_text: str) -> int:
    """Received packets of eth0 in a ``/proc/net/dev`` part of a monitor snapshot."""
    for line in proc_text.split("==> /proc/net/dev <==", 1)[1].splitlines():
        name, _, counters = line.partition(":")
        if name.strip() == "eth0":
            return int(counters.split()[1])
    raise AssertionError("no eth0 line in the /proc/net/dev snapshot")


def _gone(fragment: str, limit: float = 30.0) -> None:
    """Return once no live process's command line holds ``fragment`` (a process that was told to end)."""
    deadline = time.monotonic() + limit
    while _running(fragment):
        assert time.monotonic() < deadline, f"still running after {limit} s: {_running(fragment)}"
        time.sleep(0.01)


def _sar(files: dict[str, str]) -> dict:
    return json.loads(files["sar.json"])["sysstat"]["hosts"][0]


@pytest.fixture
def local():
    """This machine as a host reached without SSH, with a work directory of its own."""
    host = remote.Host(inventory.HostEntry(f"fpcm{secrets.token_hex(3)}", "127.0.0.1", local=True))
    yield host
    for proc in Path("/proc").iterdir():  # what a failed test left recording (a passing one stops it itself)
        try:
            if proc.name.isdigit() and host.workdir.encode() in (proc / "cmdline").read_bytes():
                os.kill(int(proc.name), signal.SIGKILL)
        except (OSError, ValueError):
            continue
    shutil.rmtree(host.workdir, ignore_errors=True)


def _seconds(files: dict[str, str]) -> list[int]:
    """The Unix times (whole seconds, UTC) of the records in a sample's ``sar.json``."""
    return [calendar.timegm(time.strptime(f"{r['timestamp']['date']} {r['timestamp']['time']}", "%Y-%m-%d %H:%M:%S"))
            for r in _sar(files)["statistics"] if r]


def _window(files: dict[str, str]) -> tuple[str, str]:
    """The ``-s`` and ``-e`` times of the sadf command that cut a sample's ``sar.json``."""
    words = files["sadf-command.txt"].split()
    return words[words.index("-s") + 1], words[words.index("-e") + 1]


def test_a_blocks_recording_gives_each_sample_the_seconds_inside_it_and_leaves_nothing(local):
    rec = monitors.start(local, "block/one")
    assert _running(rec.base)  # sadc runs from the block's start
    cuts = []
    for _ in range(2):
        mark = monitors.before(rec)
        began = Path(f"{rec.base}.mark").stat().st_mtime  # the host's clock at the sample's start
        local.check("sleep 4.2")  # long enough for at least one whole second inside the sample
        files = monitors.after(rec, mark)
        assert set(files) >= {"sar.json", "proc-before.txt", "proc-after.txt", "sadf-command.txt"}
        for snap in ("proc-before.txt", "proc-after.txt"):
            assert "==> /proc/stat <==" in files[snap] and "==> /proc/net/dev <==" in files[snap]
        assert f"{rec.base}.sa" in files["sadf-command.txt"]  # the one recording of the block
        seconds, read_at = _seconds(files), time.time()
        assert "cpu-load" in _sar(files)["statistics"][0]
        # the records whose middle is in the sample: 3 or 4 of a 4.2-s sample (sadc's own run of a few ms aside)
        assert len(seconds) >= 3, (began, seconds)
        assert min(seconds) > began - 0.6 and max(seconds) < read_at, (began, seconds, read_at)
        # -e is the second of the recording's last write, which ends that record (or, rarely, the next second)
        end = sum(int(x) * k for x, k in zip(_window(files)[1].split(":"), (3600, 60, 1)))
        assert (end - max(seconds)) % 86400 in (0, 1), (_window(files), seconds)
        cuts.append(set(seconds))
    assert not cuts[0] & cuts[1], "two samples never share a record"
    assert monitors.stop(rec) == ""  # sadc said nothing
    assert _running(rec.base) == []
    assert list(Path(local.workdir).iterdir()) == []


def test_the_window_keeps_exactly_the_records_whose_middle_follows_the_mark():
    """sadf keeps interval k (ending at record k) when record k-1's second is at or after -s and record k's at or
    before -e; the window must keep exactly the intervals whose middle is at or after the mark."""
    import random

    g = 1_000_000_000
    rng = random.Random(7)
    day = 86400 * g
    for _ in range(2000):
        last = 20000 * day + rng.randrange(3600 * g, 80000 * g)  # away from midnight: times of day compare as numbers
        mark = last - rng.randrange(0, 6 * g)
        times = monitors.window(mark, last)
        assert times is not None
        start, end = (sum(int(x) * k for x, k in zip(t.split(":"), (3600, 60, 1))) for t in times)
        records = [last - j * g for j in range(10)]  # sadc's records, the last one written at `last`
        seconds = [r // g % 86400 for r in records]
        kept = [j for j in range(9) if seconds[j + 1] >= start and seconds[j] <= end]
        wanted = [j for j in range(9) if records[j] - g // 2 >= mark]
        assert kept == wanted, (mark, last, times)
    assert monitors.window(None, 5) is None and monitors.window(5, None) is None


def test_a_stopped_recording_is_neither_read_nor_stopped_again(local):
    rec = monitors.start(local, "twice")
    monitors.stop(rec)
    with pytest.raises(MonitorError, match="already stopped"):
        monitors.before(rec)
    with pytest.raises(MonitorError, match="already stopped"):
        monitors.stop(rec)


def test_missing_sadc_is_reported_with_the_snapshots_kept(local, monkeypatch):
    monkeypatch.setattr(monitors, "SADC_PATHS", ("/nonexistent/sadc",))
    rec = monitors.start(local, "nosadc")
    mark = monitors.before(rec)
    _gone(rec.base)
    with pytest.raises(MonitorError, match="recording had ended.*sadc not found.*install sysstat") as err:
        monitors.after(rec, mark)
    assert "==> /proc/stat <==" in err.value.files["proc-before.txt"]
    assert "==> /proc/stat <==" in err.value.files["proc-after.txt"]
    monitors.stop(rec)
    assert _running(rec.base) == [] and list(Path(local.workdir).iterdir()) == []


def test_a_sample_whose_start_mark_is_gone_is_an_error_not_an_empty_cut(local):
    rec = monitors.start(local, "nomark")
    mark = monitors.before(rec)
    Path(f"{rec.base}.mark").unlink()
    with pytest.raises(MonitorError, match=r"cannot read the modification times of .*\.mark"):
        monitors.after(rec, mark)
    monitors.stop(rec)
    assert _running(rec.base) == [] and list(Path(local.workdir).iterdir()) == []


def test_a_failing_sample_is_not_read_after_and_the_blocks_recordings_stop(local):
    stored: dict[str, str] = {}
    recordings = monitors.Recordings([local], stored.__setitem__, renew=3600.0)
    recordings.ensure(0)
    base = recordings.running[local.name].base
    with pytest.raises(RuntimeError, match="sample failed"):
        with recordings.sample() as outputs:
            assert _running(base)
            raise RuntimeError("sample failed")
    assert outputs == {}
    assert _running(base), "the block's recording goes on after a failed sample"
    assert recordings.stop_all() == []
    assert _running(base) == [] and recordings.running == {} and stored == {}


def test_a_recording_is_renewed_before_a_sample_once_old_and_an_unreadable_one_is_replaced(local):
    recordings = monitors.Recordings([local], lambda path, text: None, renew=3600.0)
    recordings.ensure(0)
    first = recordings.running[local.name].base
    recordings.ensure(0)
    recordings.ensure(1)
    assert recordings.running[local.name].base == first  # younger than `renew`: the same recording
    recordings.renew = 0.0
    recordings.ensure(1)
    second = recordings.running[local.name].base
    recordings.renew = 3600.0
    assert second != first and _running(first) == [] and _running(second)
    local.check(f"kill $(cat {recordings.running[local.name].service.pidfile})")  # sadc ends early
    _gone(second)
    with pytest.raises(MonitorError, match="recording had ended"):
        with recordings.sample():
            pass
    assert recordings.running == {}
    recordings.ensure(1)
    assert recordings.running[local.name].base not in (first, second)
    recordings.stop_all()
    assert list(Path(local.workdir).iterdir()) == []


@pytest.mark.lab
def test_monitors_on_two_lab_hosts_see_the_sample_traffic(hosts):
    h1, h2 = hosts["h1"], hosts["h2"]
    mine = f"-{secrets.token_hex(3)}"  # in the recordings' names: the lab's hosts share their work directory's disk
    recordings = monitors.Recordings([h1, h2], lambda path, text: None, renew=3600.0, suffix=mine)
    recordings.ensure(0)
    bases = [r.base for r in recordings.running.values()]
    with recordings.sample() as outputs:
        h1.check(f"ping -q -c 16 -i 0.2 {h2.address}")
    recordings.stop_all()
    assert set(outputs) == {"h1", "h2"}
    for host in ("h1", "h2"):
        sar = _sar(outputs[host])
        assert sar["nodename"] == host  # collected inside the host's namespaces
        assert len(sar["statistics"]) >= 1
        assert "eth0" in {d["iface"] for d in sar["statistics"][0]["network"]["net-dev"]}
    received = _eth0_rx_packets(outputs["h2"]["proc-after.txt"]) - _eth0_rx_packets(outputs["h2"]["proc-before.txt"])
    assert received >= 16
    for base in bases:
        assert _running(base) == []
    for host in (h1, h2):
        assert host.check(f"ls {host.workdir} | grep -c -- {mine} || true").strip() == "0"


def test_a_hosts_monitor_files_are_stored_as_one_archive_the_same_bytes_each_time():
    from perflab import store

    files = {"monitors/h1/sar.json": '{"cpu-load": [{"cpu": "all", "usr": 1.0}]}\n' * 200,
             "monitors/h1/proc-before.txt": "==> /proc/stat <==\n", "monitors/h2/sadc.log": "a warning\n",
             "monitors/errors.txt": "h3: no sadc\n", "stdout": b"out"}
    stored = store.pack_monitors(files)
    assert set(stored) == {"monitors/h1.tar.xz", "monitors/h2.tar.xz", "monitors/errors.txt", "stdout"}
    members = store.unpack_monitors(stored["monitors/h1.tar.xz"], "h1")  # type: ignore[arg-type]
    assert members == {"sar.json": files["monitors/h1/sar.json"], "proc-before.txt": "==> /proc/stat <==\n"}
    assert len(stored["monitors/h1.tar.xz"]) * 5 < len(files["monitors/h1/sar.json"].encode())
    assert store.pack_monitors(dict(files)) == stored  # no owner or time in the archive
    with pytest.raises(ValueError, match="h1: not a complete tar.xz archive"):
        store.unpack_monitors(stored["monitors/h1.tar.xz"][:40], "h1")  # type: ignore[index]


def test_an_archive_is_compressed_as_tightly_as_xz_9_and_xz_reads_it(tmp_path):
    """The dictionary is sized to the data (a 64 MiB one costs most of a small archive's time), which must not
    cost compression: the archive is no larger than tarfile's own ``w:xz`` at preset 9, and ``xz`` unpacks it."""
    import io
    import lzma
    import tarfile

    from perflab import store

    sar = "".join(f'{{"cpu": {i % 7}, "usr": {i * 0.37:.2f}, "idle": {99 - i % 13}}}\n' for i in range(4000))
    stored = store.pack_monitors({"monitors/h1/sar.json": sar})["monitors/h1.tar.xz"]
    assert isinstance(stored, bytes)
    reference = io.BytesIO()
    with tarfile.open(fileobj=reference, mode="w:xz", format=tarfile.PAX_FORMAT, preset=9) as tar:
        info = tarfile.TarInfo("sar.json")
        info.size, info.mode, info.mtime = len(sar.encode()), 0o644, 0
        tar.addfile(info, io.BytesIO(sar.encode()))
    assert len(stored) <= len(reference.getvalue())
    assert lzma.decompress(stored) == lzma.decompress(reference.getvalue()), "the same tar stream inside"
    (tmp_path / "h1.tar.xz").write_bytes(stored)
    subprocess.run(["tar", "xJf", "h1.tar.xz"], cwd=tmp_path, check=True)
    assert (tmp_path / "sar.json").read_text() == sar


def test_the_hosts_recordings_start_together_and_a_failed_start_stops_the_others(monkeypatch):
    """Two hosts' starts meet at a barrier (sequential starts would time out there); when one start fails, the
    recording that did start is stopped and the failure is raised."""
    import threading

    barrier = threading.Barrier(2, timeout=10)
    stopped: list[str] = []

    class FakeHost:
        def __init__(self, name: str) -> None:
            self.name = name

    def fake_start(host, name):
        barrier.wait()  # both starts are in flight at once
        if host.name == "bad":
            raise remote.HostError("host bad: cannot start")
        return monitors.Recording(host, name, None, "/tmp/x")  # type: ignore[arg-type]

    def fake_stop(rec):
        stopped.append(rec.host.name)
        return ""

    monkeypatch.setattr(monitors, "start", fake_start)
    monkeypatch.setattr(monitors, "stop", fake_stop)
    recordings = monitors.Recordings([FakeHost("good"), FakeHost("bad")], lambda path, text: None,  # type: ignore[list-item]
                                     renew=3600.0)
    with pytest.raises(remote.HostError, match="cannot start"):
        recordings.ensure(0)
    assert stopped == ["good"] and recordings.running == {}
    barrier.reset()
    recordings = monitors.Recordings([FakeHost("good"), FakeHost("also")], lambda path, text: None,  # type: ignore[list-item]
                                     renew=3600.0)
    recordings.ensure(0)
    assert sorted(recordings.running) == ["also", "good"]
    assert recordings.stop_all() == [] and sorted(stopped) == ["also", "good", "good"]
