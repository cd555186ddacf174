"""Faults around the executor: an interrupted command is gone when its interruption returns, and time during
which this process itself did not run (stopped, or the machine suspended) is never taken for a silent host."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from helpers import load_campaign
from perflab import agent as agent_program, inventory, store
from perflab.hosts import executor, remote
from perflab.formats import records
from perflab.runner.progress import Progress
from perflab.runner.session import Reconnector


class Interrupted(Exception):
    pass


def test_an_interrupted_command_is_ended_only_once_every_process_of_its_group_is_gone(monkeypatch):
    """KILL reaches a group's members asynchronously: on a busy machine the shell can be reaped while its child
    has not run yet to die. Here the KILL reaches the shell at once and its child 3 s later, as a loaded
    scheduler may deliver it; the interruption must not return while the child lives."""
    real_killpg = os.killpg
    late: list[threading.Thread] = []

    def killpg(pgid: int, sig: int) -> None:
        if sig != signal.SIGKILL:
            return real_killpg(pgid, sig)
        os.kill(pgid, sig)  # the group's leader, the shell, dies first
        later = threading.Timer(3.0, lambda: real_killpg(pgid, sig))
        late.append(later)
        later.start()

    def interrupt(signum, frame):
        raise Interrupted

    line = f"sleep 30.{os.getpid() % 1000:03d}; true"  # `; true`: the shell waits for its child, never execs it
    monkeypatch.setattr(agent_program.os, "killpg", killpg)
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(Interrupted):
            executor.run_here(line, timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        monkeypatch.undo()
    alive = subprocess.run(["pgrep", "-f", line.split(";")[0]], capture_output=True, text=True).stdout.split()
    for thread in late:
        thread.join()
    assert late and alive == [], "the interruption returned while the command's child still ran"


MARK = executor.MARK


class Clock:
    """The controller's clocks, moved by the fake channel: (monotonic, boot time)."""

    def __init__(self) -> None:
        self.mono, self.boot = 100.0, 5000.0

    def __call__(self) -> tuple[float, float]:
        return self.mono, self.boot


class ScriptedChannel:
    """A channel whose reads are scripted: ("stop", s) the read's wait overruns by s seconds (the process was
    stopped) and times out; ("silent",) the wait times out on time; ("suspend", s) the machine slept s seconds and
    the connection was dropped meanwhile; bytes: data."""

    def __init__(self, clock: Clock, script: list) -> None:
        self.clock, self.script, self.timeout = clock, list(script), None
        self.sent: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.sent.append(data)

    def settimeout(self, timeout: float | None) -> None:
        self.timeout = timeout

    def recv(self, n: int) -> bytes:
        step = self.script.pop(0)
        if isinstance(step, bytes):
            return step
        if step[0] == "suspend":  # the monotonic clock stands still while the machine sleeps
            self.clock.boot += step[1]
            return b""
        waited = self.timeout + (step[1] if step[0] == "stop" else 0.0)
        self.clock.mono += waited
        self.clock.boot += waited
        raise socket.timeout()

    def close(self) -> None:
        pass


def _agent(monkeypatch: pytest.MonkeyPatch, script: list) -> tuple[executor.Agent, Clock]:
    clock = Clock()
    monkeypatch.setattr(executor, "_clocks", clock, raising=False)
    return executor.Agent(ScriptedChannel(clock, script)), clock


def test_a_reply_waited_for_while_this_process_was_stopped_is_still_read(monkeypatch):
    """SIGSTOP for 60 s during a 51-s wait: the wait overran by far, the host had answered meanwhile."""
    agent, _ = _agent(monkeypatch, [("stop", 60.0), MARK + b" 0 3 0 0.5\nhi\n"])
    reply = agent.run("echo hi", timeout=16, reply_deadline=51)
    assert (reply.out, reply.exit_code) == (b"hi\n", 0)
    assert agent.stalled >= 60


def test_a_silent_host_still_times_out_at_its_deadline(monkeypatch):
    agent, clock = _agent(monkeypatch, [("silent",)] * 5)
    with pytest.raises(TimeoutError):
        agent.run("sleep 99", timeout=16, reply_deadline=51)
    assert clock.mono == pytest.approx(151) and agent.stalled == 0, "waited its 51 s, no more"


def test_a_host_lost_while_this_machine_slept_is_not_counted_against_it(monkeypatch, tmp_path):
    agent, _ = _agent(monkeypatch, [("suspend", 600.0)])
    host = remote.Host(inventory.HostEntry("h1", "198.18.0.1"))
    host._agent = agent
    with pytest.raises(remote.HostLost, match=r"after this process itself did not run for 600 s") as lost:
        host.run("sleep 1", timeout=10)
    assert lost.value.stalled >= 600

    back = remote.Host(inventory.HostEntry("h1", "127.0.0.1", local=True))
    back.reconnect = lambda timeout: None  # type: ignore[method-assign]
    calls = []

    def step() -> str:
        calls.append(1)
        if len(calls) <= 3:
            raise remote.HostLost("h1", "host h1: lost while running 'x'", "Socket is closed", stalled=600.0)
        return "done"

    assert _reconnector(tmp_path, "{attempts: 1, backoff: 0.01}", back).retrying(step) == "done"
    assert len(calls) == 4, "three losses while this process slept, none counted against reconnect.attempts (1)"


def _reconnector(tmp_path: Path, policy: str, host: remote.Host) -> Reconnector:
    c = load_campaign("campaign: c\nbenchmark: {tool: sysbench}\nhosts: {client: h1}\nfactors: {threads: [1]}\n"
                      f"reconnect: {policy}\n")
    raw = store.RawStore(tmp_path, "c")
    raw.begin(records.CampaignRecord(campaign="c", design_digest=c.digest(), spec=dict(c.doc), source="c.yaml",
                                     perflab="test", python="3", schedule=[], inventory={}), min_free=0)
    return Reconnector(c, {"h1": host}, raw, Progress(1, 0, stream=io.StringIO()), ())


#: A controller waiting 2 s for a reply that h1 sends after 1 s; it says "waiting" when its read begins.
STOPPED = r"""
import sys
from perflab import inventory
from perflab.hosts import remote

host = remote.Host(inventory.load(sys.argv[1])["h1"])
agent = host._executor("start")
agent.run("true", reply_deadline=30)

class Said:
    def __init__(self, chan):
        self.chan, self.said = chan, False
    def settimeout(self, t):
        if not self.said:
            self.said = True
            print("waiting", flush=True)
        self.chan.settimeout(t)
    def __getattr__(self, name):
        return getattr(self.chan, name)

agent.chan = Said(agent.chan)
try:
    reply = agent.run("sleep 1; echo done", reply_deadline=2)
    print("reply", bytes(reply.out).decode().strip(), round(getattr(agent, "stalled", 0)), flush=True)
except TimeoutError:
    print("no answer", flush=True)
"""


@pytest.mark.lab
def test_a_controller_stopped_for_longer_than_its_wait_still_reads_the_hosts_reply(lab):
    import sys
    import time

    child = subprocess.Popen([sys.executable, "-c", STOPPED, str(lab.inventory_path)], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "waiting"
        child.send_signal(signal.SIGSTOP)
        time.sleep(6)  # the stop itself, three times the wait: what the test is about, not a wait for luck
        child.send_signal(signal.SIGCONT)
        said = child.stdout.readline().split()
    finally:
        child.send_signal(signal.SIGCONT)
        child.wait(timeout=60)
    assert said[:2] == ["reply", "done"] and int(said[2]) >= 4, said
