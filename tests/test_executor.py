"""The per-host agent: exact bytes, exit statuses, its own timeouts, the tag sweep and the duration on the host.

The agent runs here as a local process behind a channel-like pipe, exactly the program a host
runs over SSH (``executor.command()``).
"""

import os
import select
import subprocess
import time
from pathlib import Path

import pytest

from perflab.hosts import executor


class PipeChannel:
    """The part of a paramiko channel the agent client uses, over a local process's pipes."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.timeout = None

    def sendall(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def settimeout(self, timeout):
        self.timeout = timeout

    def recv(self, n):
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        if not ready:
            import socket
            raise socket.timeout()
        return os.read(self.proc.stdout.fileno(), n)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def agent():
    a = executor.Agent(PipeChannel(["sh", "-c", executor.command()]))
    assert a.ready()
    yield a
    a.close()
    assert a.chan.proc.returncode == 0, "the agent exits when its input ends"


def _tagged(tag: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if f"PERFLAB_TAG={tag}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.append(int(pid))
        except OSError:
            pass
    return found


def test_output_bytes_and_exit_status_come_back_verbatim(agent):
    reply = agent.run("printf 'a\\0b\\377'; printf 'warn' >&2; exit 3")
    assert (reply.out, reply.err, reply.exit_code) == (b"a\0b\xff", b"warn", 3)
    again = agent.run("echo second")
    assert (again.out, again.err, again.exit_code) == (b"second\n", b"", 0), "one command's reply never leaks into the next"


def test_no_command_line_holds_the_command_text(agent):
    reply = agent.run("pgrep -f 'unlikely-text-4711' || echo none")
    assert reply.out == b"none\n", "pgrep found the shell running the command"
    assert agent.run('printf %s "${PERFLAB_COMMAND-unset}"').out == b"unset"


def test_a_value_in_the_environment_is_never_run(agent, tmp_path):
    canary = tmp_path / "canary"
    value = f"$(touch {canary}); `touch {canary}`; touch {canary}"
    reply = agent.run('printf %s "$V"', env={"V": value})
    assert reply.out.decode() == value and not canary.exists()


def test_the_agent_stops_a_command_at_its_timeout_and_kills_what_ignores_term(agent):
    stopped = agent.run("sleep 30", timeout=0.3, kill_after=5)
    assert stopped.exit_code == executor_timeout() and stopped.seconds < 30
    stubborn = agent.run("trap '' TERM; sleep 30", timeout=0.3, kill_after=0.3)
    assert stubborn.exit_code == 128 + 9 and stubborn.seconds < 30


def executor_timeout() -> int:
    from perflab.hosts import remote
    return remote.TIMEOUT_EXIT


def test_processes_that_left_the_group_die_with_a_timed_command(agent):
    tag = f"t{os.getpid()}x{time.monotonic_ns()}"
    reply = agent.run("setsid sleep 300 </dev/null >/dev/null 2>&1 & echo started", timeout=20, tag=tag)
    assert reply.exit_code == 0 and reply.out == b"started\n"
    assert _tagged(tag) == [], "the sweep killed the escaped sleep before the reply"


def test_a_child_left_in_the_background_does_not_hold_the_reply(agent):
    reply = agent.run("sleep 300 & echo $!")
    pid = int(bytes(reply.out))
    try:
        assert reply.exit_code == 0 and reply.seconds < 300
    finally:
        os.kill(pid, 9)


def test_the_duration_is_the_commands_own_on_the_host(agent):
    start = time.perf_counter()
    reply = agent.run("sleep 0.2")
    elapsed = time.perf_counter() - start
    assert 0.2 <= reply.seconds <= elapsed, "measured around the command, inside the controller's round trip"


def test_the_command_reads_dev_null_not_the_agents_clock_pipe(agent):
    reply = agent.run("cat; echo done; ls -l /proc/$$/fd/0", timeout=20)
    out = bytes(reply.out)
    assert out.startswith(b"done\n") and out.rstrip().endswith(b"/dev/null"), out


def test_a_command_whose_cgroup_cannot_be_joined_does_not_run(tmp_path):
    (tmp_path / "cg").mkdir()
    (tmp_path / "cg" / "cgroup.procs").mkdir()  # a directory: the shell's echo into it fails
    reply = executor.run_here(f"touch {tmp_path}/ran", cgroup=str(tmp_path / "cg"))
    assert reply.exit_code == 125 and not (tmp_path / "ran").exists()
    assert b"could not be moved into its cgroup" in bytes(reply.err)


def test_a_timed_command_leaves_no_thread_behind():
    import threading

    before = threading.active_count()
    assert executor.run_here("true", timeout=30).exit_code == 0
    assert executor.run_here("sleep 30", timeout=0.2).exit_code == executor_timeout()
    assert threading.active_count() == before, "the timeout's timer thread ended with its command"


def test_a_command_run_here_that_a_signal_interrupts_is_ended_with_its_timer():
    """On this machine the agent's code runs in perflab's own process, where Ctrl-C or SIGTERM raise: the
    command must not outlive the interruption, nor its timeout's thread signal a pid later."""
    import signal
    import threading

    class Interrupted(Exception):
        pass

    def interrupt(signum, frame):
        raise Interrupted

    line = f"sleep 30.{os.getpid() % 1000:03d}"
    before = threading.active_count()
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(Interrupted):
            executor.run_here(line, timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    alive = subprocess.run(["pgrep", "-fx", line], capture_output=True, text=True).stdout.split()
    assert alive == [] and threading.active_count() == before


def test_a_host_without_python3_has_no_agent():
    chan = PipeChannel(["sh", "-c", "echo 'sh: 1: python3: not found' >&2; exit 127"])
    assert executor.Agent(chan).ready() is False


def test_this_machine_runs_the_same_code_in_process(tmp_path):
    reply = executor.run_here('printf %s "$V"; exit 5', env={"V": "a b"})
    assert (reply.out, reply.exit_code) == (b"a b", 5)
    assert executor.run_here("sleep 30", timeout=0.2).exit_code == executor_timeout()


CGROUP2 = next((d for d in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
                if (d / "cgroup.controllers").exists()), None)


@pytest.mark.skipif(os.geteuid() != 0 or CGROUP2 is None, reason="needs root and the cgroup2 hierarchy")
def test_nothing_a_command_starts_leaves_its_cgroup(agent):
    own = CGROUP2 / Path("/proc/self/cgroup").read_text().split("0::", 1)[1].split("\n")[0].strip().lstrip("/")
    base = own / f"perflab-test-{os.getpid()}"
    scope = base / "c-1"
    try:
        reply = agent.run("env -i setsid sleep 301.5 </dev/null >/dev/null 2>&1 & echo $!", cgroup=str(scope))
        pid = int(bytes(reply.out))
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3], \
            "a process that dropped its environment and session outlived its cgroup"
        assert not scope.exists(), "the command's cgroup is removed"
    finally:
        for d in (scope, base):
            if d.exists():
                d.rmdir()


@pytest.mark.lab
def test_a_host_without_python3_runs_commands_through_the_shell(lab_inventory, monkeypatch):
    from perflab.hosts import remote
    monkeypatch.setattr(executor, "open_agent", lambda transport: None)
    host = remote.Host(lab_inventory["h1"])
    try:
        res = host.run('printf %s "$V"; exit 4', env={"V": "a b"})
        assert (res.out, res.exit_code, res.duration) == (b"a b", 4, None)
        assert host.run("sleep 30", timeout=0.3).timed_out
        assert host._agent is None and host._shell is not None, "the shell executor ran them"
    finally:
        host.close()


def _three(tmp_path: Path) -> list[str]:
    """Files whose text ends in a newline, does not, and is empty."""
    texts = {"a": "one\ntwo\n", "b": "no newline", "c": ""}
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
    return [str(tmp_path / name) for name in texts]


def test_observe_reads_files_as_tail_prints_them_and_starts_no_process(agent, tmp_path):
    paths, missing = _three(tmp_path), str(tmp_path / "missing")
    tail = subprocess.run(["tail", "-n", "+1", *paths], capture_output=True, text=True, check=True).stdout
    seen = agent.observe(read=[*paths, "/proc/self/stat"], stat=[paths[0], missing])
    text, own = seen.text.split("\n==> /proc/self/stat <==\n")
    assert text == tail
    assert int(own.split()[0]) == agent.chan.proc.pid, "/proc/self is the agent itself: it started no process"
    assert seen.mtime_ns == {paths[0]: os.stat(paths[0]).st_mtime_ns, missing: None}
    # a file that cannot be read is a line where tail's message would be, and the next file has no blank line
    both = subprocess.run(["sh", "-c", 'tail -n +1 "$0" "$1" 2>&1', missing, paths[0]], capture_output=True,
                          text=True).stdout
    got = agent.observe(read=[missing, paths[0]]).text
    assert got.startswith(f"perflab agent: cannot read {missing}: No such file or directory\n")
    assert got.split("\n", 1)[1] == both.split("\n", 1)[1] == f"==> {paths[0]} <==\none\ntwo\n"


def test_observe_empties_a_file_at_the_hosts_file_clock_and_a_failure_is_answered(agent, tmp_path):
    mark = tmp_path / "mark"
    mark.write_text("old")
    t0 = time.time_ns()
    seen = agent.observe(truncate=[str(mark)], stat=[str(mark)])
    t1 = time.time_ns()
    assert mark.read_bytes() == b"" and seen.mtime_ns[str(mark)] == mark.stat().st_mtime_ns
    # file times come from the kernel's coarse clock, at most one tick (10 ms at HZ=100) behind the fine one
    assert t0 - 10_000_000 <= seen.mtime_ns[str(mark)] <= t1
    with pytest.raises(executor.Refused, match="No such file"):
        agent.observe(truncate=[str(tmp_path / "gone" / "mark")])
    assert agent.run("echo alive").out == b"alive\n", "a refused request does not end the agent"


def test_this_machine_observes_with_the_agents_own_code(tmp_path):
    paths = _three(tmp_path)
    here = executor.observe_here(read=paths, stat=paths)
    a = executor.Agent(PipeChannel(["sh", "-c", executor.command()]))
    try:
        assert a.ready()
        assert a.observe(read=paths, stat=paths) == here
    finally:
        a.close()
    with pytest.raises(executor.Refused):
        executor.observe_here(truncate=[str(tmp_path / "gone" / "mark")])


@pytest.mark.lab
def test_a_host_without_python3_observes_through_the_shell_with_the_agents_answer(lab_inventory, monkeypatch):
    from perflab.hosts import remote
    with_agent = remote.Host(lab_inventory["h1"])
    d = f"{with_agent.workdir}/observe-{os.getpid()}"
    try:
        with_agent.check(f"mkdir -p {d} && printf 'one\\ntwo\\n' > {d}/a && printf 'no newline' > {d}/b && : > {d}/c")
        paths = [f"{d}/a", f"{d}/b", f"{d}/c"]
        stat = [*paths, f"{d}/missing"]
        by_agent = with_agent.observe(truncate=[f"{d}/c"], read=paths, stat=stat)
        monkeypatch.setattr(executor, "open_agent", lambda transport: None)
        shell = remote.Host(lab_inventory["h1"])
        try:
            by_shell = shell.observe(truncate=[f"{d}/c"], read=paths, stat=stat)
            assert shell._agent is None and shell._shell is not None, "the shell executor answered"
            assert by_shell.text == by_agent.text
            assert by_shell.mtime_ns[f"{d}/missing"] is None
            assert {p: by_shell.mtime_ns[p] for p in paths[:2]} == {p: by_agent.mtime_ns[p] for p in paths[:2]}
            assert by_shell.mtime_ns[f"{d}/c"] >= by_agent.mtime_ns[f"{d}/c"], "emptied again, later"
            with pytest.raises(remote.HostError, match="failed"):
                shell.observe(truncate=[f"{d}/gone/mark"])
        finally:
            shell.close()
        with pytest.raises(remote.HostError, match="No such file"):
            with_agent.observe(truncate=[f"{d}/gone/mark"])
    finally:
        with_agent.run(f"rm -rf {d}")
        with_agent.close()


def test_the_tag_sweep_scans_the_pids_allocated_since_the_command_started(monkeypatch):
    from perflab import agent as program

    values = {"/proc/stat": 1000, "/proc/loadavg": 120, "/proc/sys/kernel/pid_max": 32768}
    monkeypatch.setattr(program, "_number", lambda path, word=None, index=0: values[path])
    since = program.Since(100)
    assert since.window() == (100, 120)
    assert [p for p in (99, 100, 110, 120, 121) if program._inside(p, since.window())] == [100, 110, 120]
    late = program.Since(30000)
    values["/proc/loadavg"] = 350  # the counter wrapped: from 30000 to pid_max, then from the bottom to 350
    assert [p for p in (29999, 30000, 32767, 300, 350, 351) if program._inside(p, late.window())] == [30000, 32767,
                                                                                                     300, 350]
    values["/proc/stat"] = 1000 + 32768 // 4  # starts enough to come near the first pid again: every pid
    assert since.window() is None and late.window() is None and program._inside(5, None)
    values["/proc/stat"] = None
    assert since.window() is None, "a counter that cannot be read: every pid"

