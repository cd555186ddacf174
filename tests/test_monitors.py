"""Monitors: sysstat around a sample on this machine and on lab hosts, always stopped."""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from perflab import inventory, monitors, remote
from perflab.monitors import MonitorError



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


def _sar(files: dict[str, str]) -> dict:
    return json.loads(files["sar.json"])["sysstat"]["hosts"][0]


@pytest.fixture
def local():
    """This machine as a host reached without SSH, with a work directory of its own."""
    host = remote.Host(inventory.HostEntry(f"fpcm{secrets.token_hex(3)}", "127.0.0.1", local=True))
    yield host
    shutil.rmtree(host.workdir, ignore_errors=True)


def test_stop_returns_sar_json_and_snapshots_and_leaves_nothing(local):
    handle = monitors.start(local, "unit/one")
    assert _running(handle.base)  # sadc and its shell run while the monitor is on
    local.check("sleep 1.2")  # a sample long enough for one sadc interval
    files = monitors.stop(handle)
    assert set(files) >= {"sar.json", "proc-before.txt", "proc-after.txt"}
    assert len(_sar(files)["statistics"]) >= 1
    assert "cpu-load" in _sar(files)["statistics"][0]
    for snap in ("proc-before.txt", "proc-after.txt"):
        assert "==> /proc/stat <==" in files[snap] and "==> /proc/net/dev <==" in files[snap]
    assert _running(handle.base) == []
    assert list(Path(local.workdir).iterdir()) == []


def test_a_monitor_cannot_be_stopped_twice(local):
    handle = monitors.start(local, "twice")
    first = monitors.stop(handle)
    with pytest.raises(MonitorError, match="already stopped") as err:
        monitors.stop(handle)
    assert err.value.files == first


def test_missing_sadc_is_reported_with_the_snapshots_kept(local, monkeypatch):
    monkeypatch.setattr(monitors, "SADC_PATHS", ("/nonexistent/sadc",))
    handle = monitors.start(local, "nosadc")
    with pytest.raises(MonitorError, match="sadc not found.*install sysstat") as err:
        monitors.stop(handle)
    assert "==> /proc/stat <==" in err.value.files["proc-before.txt"]
    assert _running(handle.base) == []


def test_monitoring_stops_the_monitor_when_the_sample_fails(local):
    name = f"failing-{secrets.token_hex(3)}"
    with pytest.raises(RuntimeError, match="sample failed"):
        with monitors.monitoring([local], name) as outputs:
            assert _running(name)
            raise RuntimeError("sample failed")
    # the stop ran and returned the monitor's files (sar.json only when sadc had written its first record:
    # on a busy machine the failure can come before sadc created its file)
    assert outputs[local.name]["proc-before.txt"].startswith("==> /proc/uptime <==")
    assert _running(name) == []


def test_monitoring_stops_started_monitors_when_a_later_start_fails(local):
    name = f"halfway-{secrets.token_hex(3)}"
    gone = remote.Host(inventory.HostEntry("gone", "127.0.0.1", port=1))  # nothing listens: refused at once
    with pytest.raises(remote.HostError):
        with monitors.monitoring([local, gone], name):
            pytest.fail("the body must not run when a monitor could not start")
    assert _running(name) == []




@pytest.mark.lab
def test_monitors_on_two_lab_hosts_see_the_sample_traffic(hosts):
    h1, h2 = hosts["h1"], hosts["h2"]
    name = f"ping-{secrets.token_hex(3)}"
    with monitors.monitoring([h1, h2], name) as outputs:
        h1.check(f"ping -q -c 12 -i 0.2 {h2.address}")
    assert set(outputs) == {"h1", "h2"}
    for host in ("h1", "h2"):
        sar = _sar(outputs[host])
        assert sar["nodename"] == host  # collected inside the host's namespaces
        assert len(sar["statistics"]) >= 1
        assert "eth0" in {d["iface"] for d in sar["statistics"][0]["network"]["net-dev"]}
    received = _eth0_rx_packets(outputs["h2"]["proc-after.txt"]) - _eth0_rx_packets(outputs["h2"]["proc-before.txt"])
    assert received >= 12
    assert _running(name) == []
    assert h1.check(f"ls {h1.workdir} | grep -c {name} || true").strip() == "0"


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


def test_the_hosts_monitors_start_together_and_a_failed_start_stops_the_others(monkeypatch):
    """Two hosts' starts meet at a barrier (sequential starts would time out there); when one start fails, the
    monitor that did start is stopped and the failure is raised."""
    import threading

    barrier = threading.Barrier(2, timeout=10)
    stopped: list[str] = []

    class FakeHost:
        def __init__(self, name: str) -> None:
            self.name = name

    def fake_start(host, name):
        barrier.wait()  # both starts are in flight at once
        if host.name == "bad":
            raise MonitorError("host bad: cannot start")
        return monitors.MonitorHandle(host, name, None, "/tmp/x")  # type: ignore[arg-type]

    def fake_stop(handle):
        stopped.append(handle.host.name)
        return {"proc-before.txt": "x\n"}

    monkeypatch.setattr(monitors, "start", fake_start)
    monkeypatch.setattr(monitors, "stop", fake_stop)
    with pytest.raises(MonitorError, match="cannot start"):
        with monitors.monitoring([FakeHost("good"), FakeHost("bad")], "s"):
            raise AssertionError("the body must not run when a monitor did not start")
    assert stopped == ["good"]
    barrier.reset()
    with monitors.monitoring([FakeHost("good"), FakeHost("also")], "s") as outputs:
        pass
    assert sorted(outputs) == ["also", "good"] and sorted(stopped) == ["also", "good", "good"]
