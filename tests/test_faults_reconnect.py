"""Faults: a host that goes away mid-campaign is reconnected under the campaign's policy, or the run
stops in one line; the gap is recorded and no sample is lost, duplicated or adopted half done.

The outage is real and bounded: in the host's namespace a firewall rule answers every packet to
port 22 with a TCP reset (new connections are refused) and ``ss -K`` resets the established ones,
so the runner's connection dies at once. It starts when the sample's own command says it is
running (a marker file on the lab's shared file system) and ends when the runner reports its
first failed reconnect attempt, never after a sleep.
"""

from __future__ import annotations

import io
import os
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from helpers import ROOT_ONLY, leftovers, load_campaign
from perflab import campaign as campaign_mod, cli, inventory, runner, store
from perflab.campaign import design
from perflab.hosts import fingerprint, lab as lab_mod, remote
from perflab.formats import records
from perflab.ledger import Ledger
from perflab.runner.progress import Progress
from perflab.runner.session import Reconnector

@pytest.fixture(scope="module")
def lab2():
    """A two-host lab of this module, named after the test process, removed (and checked gone) at the end."""
    name = f"g{os.getpid() % 100000}"
    created = lab_mod.up(name, 2)
    try:
        yield created
    finally:
        lab_mod.down(name)
        assert leftovers(name) == [], f"lab {name} left things behind"


class Outage:
    """Makes one lab host unreachable over SSH until :meth:`end`: refused and established connections reset,
    or (``silent``) every packet to port 22 dropped without an answer, as when a link goes down."""

    def __init__(self, lab: lab_mod.Lab, host: str, *, silent: bool = False) -> None:
        self.ns, self.silent = lab.host(host).netns, silent
        self.began = threading.Event()
        self.ended = False

    def _ns(self, *argv: str, text: str | None = None) -> None:
        subprocess.run(["ip", "netns", "exec", self.ns, *argv], input=text, capture_output=True, text=True,
                       check=True)

    def begin(self) -> None:
        rules = (" chain input { type filter hook input priority -10; tcp dport 22 drop; }\n"
                 " chain output { type filter hook output priority -10; tcp sport 22 drop; }\n" if self.silent else
                 " chain input { type filter hook input priority -10; tcp dport 22 reject with tcp reset; }\n")
        self._ns("nft", "-f", "-", text=f"table inet perflab_fault {{\n{rules}}}\n")
        if not self.silent:
            self._ns("ss", "-K", "-t", "state", "established", "sport", "=", ":22")
        self.began.set()

    def end(self) -> None:
        if self.began.is_set() and not self.ended:
            self._ns("nft", "delete", "table", "inet", "perflab_fault")
            self.ended = True


@contextmanager
def outage_when(marker: Path, lab: lab_mod.Lab, host: str, *, silent: bool = False) -> Iterator[Outage]:
    """An :class:`Outage` of ``host`` begun (from a thread) once ``marker`` exists; always ended on exit."""
    outage, done = Outage(lab, host, silent=silent), threading.Event()

    def watch() -> None:
        deadline = time.monotonic() + 120
        while not marker.exists():  # the sample's command creates it; nothing else does
            if done.is_set() or time.monotonic() > deadline:
                return
            time.sleep(0.01)
        outage.begin()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield outage
    finally:
        done.set()
        thread.join()
        outage.end()


class Watch(io.StringIO):
    """The runner's progress stream; ends ``outage`` when the runner reports a failed reconnect attempt."""

    def __init__(self, outage: Outage) -> None:
        super().__init__()
        self.outage = outage

    def write(self, text: str) -> int:
        n = super().write(text)
        if "reconnect attempt 1 of" in self.getvalue():
            self.outage.end()
        return n


def _owned(owner: str) -> list[str]:
    """Processes on this kernel (the lab's hosts share it) registered to ``owner``."""
    out = subprocess.run(["sh", "-c", f"grep -lzx PERFLAB_OWNER={owner} /proc/[0-9]*/environ 2>/dev/null"],
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line]


def _left(owner: str) -> list[str]:
    """:func:`_owned` once processes just sent SIGKILL have had up to 10 s to exit (delivery is asynchronous)."""
    deadline = time.monotonic() + 10
    while (found := _owned(owner)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return found


def _campaign(tmp_path: Path, *, reconnect: str, monitors: bool, fingerprints: bool) -> campaign_mod.Campaign:
    """A probe campaign on h2 (with a neighbour there) and a service on h1; the first sample that finds
    ``arm`` removes it, creates ``hit`` and hangs (until killed: only the registry's reaping stops it), so that
    the outage catches it running."""
    arm, hit = tmp_path / "arm", tmp_path / "hit"
    cmd = f"if rm {arm} 2>/dev/null; then touch {hit}; sleep 3000.5; fi; echo 1"
    text = f"""\
campaign: gap
benchmark: {{tool: probe, params: {{cmd: "{cmd}"}}}}
programs: [cmd]
hosts: {{client: h2}}
factors: {{n: [1, 2]}}
repetitions: 2
warmups: 0
seed: 3
timeout: 3600
monitors: {str(monitors).lower()}
fingerprints: {str(fingerprints).lower()}
reconnect: {reconnect}
neighbours:
  - {{on: h2, run: "sleep 3600.25", cells: {{n: [1, 2]}}}}
services:
  - {{name: svc, on: h1, start: "sleep 3600.5"}}
"""
    return load_campaign(text, tmp_path)


@ROOT_ONLY
@pytest.mark.lab
def test_a_host_that_comes_back_is_reconnected_and_the_sample_runs_again(probe, lab2, tmp_path):
    campaign = _campaign(tmp_path, reconnect="{attempts: 4, backoff: 0.2, max_backoff: 1, max_wait: 20}",
                         monitors=True, fingerprints=True)
    raw = tmp_path / "raw"
    owner = store.RawStore(raw, "gap").owner
    stored: list[str] = []

    def on_sample(run_) -> None:
        stored.append(run_.run_id)
        if len(stored) == 2:
            (tmp_path / "arm").touch()

    with outage_when(tmp_path / "hit", lab2, "h2") as outage:
        stream = Watch(outage)
        summary = runner.run(campaign, inventory.load(lab2.inventory_path), raw, stream=stream, on_sample=on_sample)
    assert outage.began.is_set() and outage.ended, stream.getvalue()
    assert summary.complete and summary.done == 4 and summary.failed == []
    d = raw / "gap"
    planned = [r.run_id for r in design.schedule(campaign)]
    assert sorted(stored) == sorted(planned) and store.RawStore(raw, "gap").done_ids() == set(planned)
    # the attempt the outage cut is kept as failed, and the sample ran again as attempt 2, once
    (failed,) = (d / "failed").iterdir()
    lost = records.read_sample(failed / "meta.json")
    assert lost.status == "failed" and "h2" in lost.reason and "lost while running" in lost.reason
    again = records.read_sample(d / "samples" / lost.run_id / "meta.json")
    assert (again.attempt, again.status) == (2, "ok")
    assert [n["command"] for n in again.neighbours] == ["sleep 3600.25"]
    assert [s["name"] for s in again.services] == ["service-svc"]
    # the block's recording on h2, killed with the rest, was started again for the sample run again
    monitored = d / "samples" / lost.run_id / "monitors"
    assert not (monitored / "errors.txt").exists()
    assert "sar.json" in store.unpack_monitors((monitored / "h2.tar.xz").read_bytes())
    done = [(e.run_id, e.attempt) for e in Ledger(d / "ledger.jsonl").events() if e.state == "done"]
    assert sorted(done) == sorted((r, 2 if r == lost.run_id else 1) for r in planned)
    # the gap: when lost, each attempt, when back, and what the lost sample left running there
    (gap_file,) = (d / "gaps").iterdir()
    gap = records.read_gap(gap_file)
    assert (gap.host, gap.outcome, gap.format) == ("h2", "reconnected", 1)
    assert [a["waited"] for a in gap.attempts] == [0.2, 0.4]
    assert gap.attempts[0]["error"] and gap.attempts[1]["error"] is None
    assert gap.lost_at < gap.attempts[0]["at"] < gap.back_at
    assert any("sleep 3000.5" in line for line in gap.stopped), gap.stopped
    assert "reconnecting" in stream.getvalue() and "back after" in stream.getvalue()
    assert store.verify(d) == []
    assert _left(owner) == [], "the run left processes behind"


@ROOT_ONLY
@pytest.mark.lab
def test_a_host_that_stays_away_stops_the_run_in_one_line_within_the_policy(probe, lab2, tmp_path, capsys):
    campaign = _campaign(tmp_path, reconnect="{attempts: 3, backoff: 0.2, max_backoff: 0.4, max_wait: 5}",
                         monitors=False, fingerprints=False)
    raw = tmp_path / "raw"
    (tmp_path / "arm").touch()
    with outage_when(tmp_path / "hit", lab2, "h2") as outage:
        code = cli.main(["run", campaign.source, "--inventory", str(lab2.inventory_path), "--raw", str(raw)])
        err = capsys.readouterr().err
        assert outage.began.is_set() and not outage.ended
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("perflab run: error: host h2 (") and "lost while running" in err
    assert "reconnecting failed: 3 attempt(s)" in err and "max_wait 5 s" in err
    assert "The campaign stopped after 0 of 4 samples" in err and "rerun the same command to resume" in err
    (gap_file,) = (raw / "gap" / "gaps").iterdir()
    gap = records.read_gap(gap_file)
    assert gap.outcome == "gave up" and gap.back_at is None and gap.stopped == []
    assert [a["waited"] for a in gap.attempts] == [0.2, 0.4, 0.4] and all(a["error"] for a in gap.attempts)
    assert gap.attempts[-1]["at"] - gap.lost_at <= gap.policy["max_wait"]
    # back again: `perflab run` resumes, stops what the cut sample left and stores every sample once
    summary = runner.run(campaign, inventory.load(lab2.inventory_path), raw, stream=io.StringIO())
    assert summary.complete and summary.done == 4
    assert any("earlier attempt" in n for n in summary.notes), summary.notes
    (left,) = (raw / "gap" / "leftovers").iterdir()
    assert "sleep 3000.5" in left.read_text()
    assert store.verify(raw / "gap") == [] and _left(store.RawStore(raw, "gap").owner) == []


@ROOT_ONLY
@pytest.mark.lab
def test_a_host_lost_while_fingerprinting_is_named_with_the_block_in_one_line(probe, lab2, tmp_path, monkeypatch):
    campaign = _campaign(tmp_path, reconnect="{attempts: 1, backoff: 0.1, max_wait: 5}", monitors=False,
                         fingerprints=True)
    collect, calls, outage = fingerprint.collect, [], Outage(lab2, "h2")

    def collect_and_lose(host, *args, **kwargs):
        calls.append(host.name)
        if host.name == "h2" and calls.count("h2") == 2:  # after block 0 (before 0, after 0)
            outage.begin()
        return collect(host, *args, **kwargs)

    monkeypatch.setattr(fingerprint, "collect", collect_and_lose)
    try:
        with pytest.raises(runner.RunnerError) as err:
            runner.run(campaign, inventory.load(lab2.inventory_path), tmp_path / "raw", stream=io.StringIO())
    finally:
        outage.end()
    message = str(err.value)
    assert "\n" not in message and len(message) < 600, message
    assert message.startswith("host h2 (") and "lost while fingerprinting after block 0:" in message
    assert "reconnecting failed: 1 attempt(s)" in message and "rerun the same command to resume" in message
    assert "@@perflab" not in message  # not the fingerprint script
    raw = store.RawStore(tmp_path / "raw", "gap")
    assert len(raw.done_ids()) == 2 and records.read_gap(next((raw.dir / "gaps").iterdir())).outcome == "gave up"
    assert _owned(raw.owner) != []  # h2's neighbour, out of reach: the next run reaps it, as here
    killed, unreachable = remote.reap(inventory.load(lab2.inventory_path), ["h2"], raw.owner)
    assert unreachable == [] and any("sleep 3600.25" in line for line in killed["h2"]) and _left(raw.owner) == []


@ROOT_ONLY
@pytest.mark.lab
def test_a_host_gone_silent_is_lost_by_keepalive_not_at_the_reply_deadline(lab2, tmp_path, monkeypatch):
    monkeypatch.setattr(remote, "KEEPALIVE", 0.5)
    monkeypatch.setattr(remote, "SILENCE", 2.0)
    owner = f"silent-{os.getpid()}"
    with remote.connect(inventory.load(lab2.inventory_path), ["h2"]) as hosts:
        host = hosts["h2"]
        host.owner = owner
        with outage_when(tmp_path / "hit", lab2, "h2", silent=True) as outage:
            with pytest.raises(remote.HostLost) as err:
                # the leftover runs before the marker, so before the outage (a busy host may be slow to start it)
                host.run(f"sleep 100.25 & touch {tmp_path / 'hit'}; wait", timeout=120)
            assert outage.began.is_set()
        # the transport noticed (unacknowledged keepalives) while the command ran, not the reply deadline
        assert "no answer" not in err.value.reason and "lost while running" in str(err.value)
        host.reconnect(5)
        left = _owned(owner)
        assert left, "the command's processes were gone before the reap: the lost connection took them"
        reaped = host.reap(owner, own_netns=True)
        assert any("sleep 100.25" in line for line in reaped), f"alive before the reap: {left}; reaped: {reaped}"
    assert _left(owner) == []


@ROOT_ONLY
@pytest.mark.lab
def test_reaping_after_a_reconnection_spares_the_other_lab_hosts(lab2):
    owner = f"spare-{os.getpid()}"
    with remote.connect(inventory.load(lab2.inventory_path)) as hosts:
        hosts["h2"].owner = owner
        service = hosts["h2"].start("spare", "sleep 3600.75")
        try:
            assert hosts["h1"].reap(owner, own_netns=True) == [] and hosts["h2"].alive(service)
            (killed,) = hosts["h2"].reap(owner, own_netns=True)
            assert "sleep 3600.75" in killed
        finally:
            hosts["h2"].stop(service)
    assert _left(owner) == []


def test_the_reconnect_policy_has_documented_defaults_and_is_not_part_of_the_design(tmp_path):
    base = "campaign: c\nbenchmark: {tool: sysbench}\nhosts: {client: h1}\nfactors: {threads: [1]}\n"
    default = load_campaign(base).reconnect
    assert (default.attempts, default.backoff, default.max_backoff, default.max_wait) == (5, 1.0, 15.0, 60.0)
    assert [default.wait(k) for k in range(1, 6)] == [1, 2, 4, 8, 15]
    tuned = load_campaign(base + "reconnect: {attempts: 0, max_wait: 5}")
    assert tuned.reconnect.attempts == 0 and tuned.reconnect.max_wait == 5.0
    assert tuned.digest() == load_campaign(base).digest()
    with pytest.raises(campaign_mod.SpecError, match=r"c\.yaml:5: reconnect\.backoff: 0 is less than or equal"):
        load_campaign(base + "reconnect: {backoff: 0}", tmp_path)
    with pytest.raises(campaign_mod.SpecError, match=r"c\.yaml:5: reconnect\.tries: unknown field; remove it or use one of attempts, backoff"):
        load_campaign(base + "reconnect: {tries: 3}", tmp_path)


class Unreachable(remote.Host):
    """A local host whose reconnections fail: refused, or (``key_changed``) with a changed host key."""

    key_changed = False

    def reconnect(self, timeout: float) -> None:
        if self.key_changed:
            raise remote.HostError(f"host {self.name} (root@{self.address}:22): cannot connect: the host key changed")
        raise remote.HostLost(self.name, f"host {self.name}: cannot connect", "Connection refused")


def _reconnector(tmp_path: Path, policy: str, host: remote.Host) -> Reconnector:
    c = load_campaign("campaign: c\nbenchmark: {tool: sysbench}\nhosts: {client: h1}\nfactors: {threads: [1]}\n"
                      f"reconnect: {policy}\n")
    raw = store.RawStore(tmp_path, "c")
    raw.begin(records.CampaignRecord(campaign="c", design_digest=c.digest(), spec=dict(c.doc), source="c.yaml",
                                     perflab="test", python="3", schedule=[], inventory={}), min_free=0)
    return Reconnector(c, {"h1": host}, raw, Progress(1, 0, stream=io.StringIO()), ())


def _lose(host: remote.Host) -> None:
    raise remote.HostLost(host.name, f"host {host.name} (127.0.0.1): lost while running 'x': Socket is closed",
                          "Socket is closed")


def test_reconnect_attempts_stop_at_max_wait_and_at_a_changed_host_key(tmp_path):
    host = Unreachable(inventory.HostEntry("h1", "127.0.0.1", local=True))
    lost = _reconnector(tmp_path / "a", "{attempts: 50, backoff: 0.05, max_backoff: 0.1, max_wait: 0.6}", host)
    with pytest.raises(remote.HostError, match=r"^host h1 \(127\.0\.0\.1\): lost while running 'x': Socket is "
                       r"closed; reconnecting failed: \d+ attempt\(s\) in [\d.]+ s \(reconnect: attempts 50, backoff "
                       r"0\.05 s, max_backoff 0\.1 s, max_wait 0\.6 s\), last error: Connection refused$"):
        lost.retrying(lambda: _lose(host))
    gap = records.read_gap(next((tmp_path / "a" / "c" / "gaps").iterdir()))
    assert gap.outcome == "gave up" and 1 <= len(gap.attempts) < 50
    assert all(a["at"] - gap.lost_at < 0.6 for a in gap.attempts)  # no attempt starts after max_wait
    assert host.given_up.startswith("given up after")

    changed = Unreachable(inventory.HostEntry("h1", "127.0.0.1", local=True))
    changed.key_changed = True
    lost = _reconnector(tmp_path / "b", "{attempts: 5, backoff: 0.01}", changed)
    with pytest.raises(remote.HostError, match=r"; on reconnecting: .*the host key changed$"):
        lost.retrying(lambda: _lose(changed))
    gap = records.read_gap(next((tmp_path / "b" / "c" / "gaps").iterdir()))
    assert gap.outcome == "refused" and len(gap.attempts) == 1  # never retried


def test_a_step_that_loses_its_host_more_often_than_the_policy_allows_stops(tmp_path):
    host = remote.Host(inventory.HostEntry("h1", "127.0.0.1", local=True))
    host.reconnect = lambda timeout: None  # a local host is always back
    lost = _reconnector(tmp_path, "{attempts: 2, backoff: 0.01}", host)
    calls = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) <= 3:
            _lose(host)
        return "done"

    with pytest.raises(remote.HostError, match=r"; lost 3 times in one step, more than reconnect\.attempts \(2\)$"):
        lost.retrying(flaky)
    assert len(calls) == 3 and len(list((tmp_path / "c" / "gaps").iterdir())) == 3
    calls.clear()
    calls.append(1)  # now it is lost twice, within the policy: the step's result comes back
    assert lost.retrying(flaky) == "done" and len(calls) == 4


def test_two_losses_of_a_host_in_one_millisecond_are_two_gap_records(tmp_path, monkeypatch):
    """Gap records are named by the millisecond the host was lost; a second loss within it (a quick retry on a fast
    machine) is stored beside the first, never refused as a raw file written twice."""
    host = remote.Host(inventory.HostEntry("h1", "127.0.0.1", local=True))
    host.reconnect = lambda timeout: None
    lost = _reconnector(tmp_path, "{attempts: 5, backoff: 0.01}", host)
    monkeypatch.setattr(remote.time, "time", lambda: 1795923585.264)  # every loss noticed at the same instant
    calls = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) <= 2:
            _lose(host)
        return "done"

    assert lost.retrying(flaky) == "done"
    assert sorted(p.name for p in (tmp_path / "c" / "gaps").iterdir()) == [
        "h1-20261129T033945.263Z-2.json", "h1-20261129T033945.263Z.json"]
