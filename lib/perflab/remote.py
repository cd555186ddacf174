"""Hosts: one Fabric connection per host, remote-side timeouts, services, local fallback.

Every command runs under ``timeout --kill-after`` on the host itself, so a hung benchmark
dies with its whole process group even when the SSH channel is gone (Fabric's ``kill()``
only closes the channel). Long-running services start under ``setsid`` with a pidfile and
are stopped by process group.
"""

from __future__ import annotations

import shlex
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import invoke
import paramiko
from fabric import Config, Connection

from .inventory import HostEntry

#: Grace period between SIGTERM and SIGKILL for remote commands, in seconds.
KILL_AFTER = 5
#: Exit status GNU timeout returns when it had to stop the command.
TIMEOUT_EXIT = 124


def halt_group(pidfile: str, *, grace: float = 2.0) -> str:
    """Shell lines that stop the process group whose leader's pid is in ``pidfile``.

    Sends TERM, waits up to ``grace`` seconds for the group's live members to exit (zombies,
    which ``kill -s 0`` reports alive until reaped, do not count), then sends KILL. Ends
    with a newline so callers can append more commands.
    """
    alive = "ps -e -o pgid= -o stat= | awk -v g=\"$p\" '$1 == g && $2 !~ /^Z/ {n++} END {exit !n}'"
    polls = max(1, int(grace / 0.02))
    return (f"p=$(cat {pidfile} 2>/dev/null); if [ -n \"$p\" ]; then kill -TERM -\"$p\" 2>/dev/null; i=0; "
            f"while {alive} && [ $i -lt {polls} ]; do sleep 0.02; i=$((i+1)); done; "
            f"kill -KILL -\"$p\" 2>/dev/null; fi\n")


class HostError(RuntimeError):
    """A host could not be reached or refused a command; the message names the host."""


@dataclass(frozen=True)
class Result:
    """What one command did on one host: verbatim output, exit status and wall-clock times."""

    host: str
    command: str
    stdout: str
    stderr: str
    exit_code: int
    started: float
    ended: float

    @property
    def ok(self) -> bool:
        """True when the command exited with status 0."""
        return self.exit_code == 0

    @property
    def timed_out(self) -> bool:
        """True when the remote-side timeout stopped the command."""
        return self.exit_code in (TIMEOUT_EXIT, 128 + 9)


@dataclass
class Service:
    """A background process started on a host by :meth:`Host.start`."""

    host: "Host"
    name: str
    command: str
    pidfile: str
    logfile: str
    stopped: bool = field(default=False)


class _Shell:
    """One long-lived ``sh`` on a channel of the host's connection, running commands one at a time.

    An SSH exec request costs ~170 ms on a lab host (sshd sets up a session per request);
    a command written to a shell that is already running costs about a millisecond. Each
    command runs in a subshell with stdin from /dev/null and its stdout and stderr captured
    to files, so the reply is framed exactly: a header line with the exit status and the two
    byte counts, then the bytes.
    """

    MARK = b"__PERFLAB_REPLY__"
    PRELUDE = (b"__pl() { d=$(mktemp -d) || exit 1; (eval \"$1\") >\"$d/o\" 2>\"$d/e\" </dev/null; r=$?; "
               b"printf '\\n__PERFLAB_REPLY__ %s %s %s\\n' \"$r\" \"$(wc -c <\"$d/o\")\" \"$(wc -c <\"$d/e\")\"; "
               b"cat \"$d/o\" \"$d/e\"; rm -rf \"$d\"; }\n")

    def __init__(self, conn: Connection) -> None:
        self.chan = conn.transport.open_session(timeout=30)
        self.chan.exec_command("exec sh")
        self.chan.sendall(self.PRELUDE)
        self.buf = b""

    def _fill(self, deadline: float | None) -> None:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(round(left, 1))
            self.chan.settimeout(left)
        try:
            data = self.chan.recv(1 << 16)
        except socket.timeout:
            raise TimeoutError("the reply deadline") from None
        if not data:
            raise EOFError("the shell's channel closed")
        self.buf += data

    def run(self, line: str, timeout: float | None) -> tuple[str, str, int]:
        """Run ``line`` in the shell; return (stdout, stderr, exit status)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self.chan.sendall(f"__pl {shlex.quote(line)}\n".encode())
        while (at := self.buf.find(self.MARK)) < 0 or self.buf.find(b"\n", at) < 0:
            self._fill(deadline)
        end = self.buf.index(b"\n", at)
        code, n_out, n_err = (int(x) for x in self.buf[at + len(self.MARK):end].split())
        while len(self.buf) < end + 1 + n_out + n_err:
            self._fill(deadline)
        body = self.buf[end + 1:end + 1 + n_out + n_err]
        self.buf = self.buf[end + 1 + n_out + n_err:]
        return (body[:n_out].decode("utf-8", "replace"), body[n_out:].decode("utf-8", "replace"), code)


class Host:
    """A host of the inventory, reached over one persistent Fabric connection (or locally)."""

    def __init__(self, entry: HostEntry, *, connect_timeout: float = 10.0) -> None:
        self.entry = entry
        self.name = entry.name
        self.address = entry.address
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._shell: _Shell | None = None
        self._connect_timeout = connect_timeout
        self.workdir = f"/tmp/perflab-{entry.name}"

    def __repr__(self) -> str:
        return f"Host({self.name!r}, {self.address!r}{', local' if self.entry.local else ''})"

    @property
    def is_local(self) -> bool:
        """True for the localhost inventory, which runs commands without SSH."""
        return self.entry.local

    def connection(self) -> Connection:
        """The host's Fabric connection, opened on first use and kept for the campaign."""
        if self._conn is None:
            cfg = Config(overrides={"run": {"in_stream": False}})
            kwargs: dict[str, Any] = {"look_for_keys": False, "allow_agent": False}
            if self.entry.key:
                kwargs["key_filename"] = self.entry.key
            conn = Connection(self.entry.address, user=self.entry.user, port=self.entry.port, config=cfg,
                              connect_timeout=int(self._connect_timeout), connect_kwargs=kwargs)
            if self.entry.known_hosts:
                conn.client.load_host_keys(self.entry.known_hosts)
                conn.client.set_missing_host_key_policy(paramiko.RejectPolicy())
            try:
                conn.open()
            except (OSError, paramiko.SSHException) as exc:
                raise HostError(f"host {self.name} ({self.entry.user}@{self.address}:{self.entry.port}): "
                                f"cannot connect: {exc}. Is the lab up (`perflab lab status`)?") from exc
            conn.transport.set_keepalive(15)
            self._conn = conn
        return self._conn

    def run(self, command: str, *, timeout: float | None = None, env: Mapping[str, str] | None = None) -> Result:
        """Run ``command`` through ``sh -c`` on the host, bounded by a remote-side timeout.

        Never raises for a non-zero exit; raises :class:`HostError` when the host is gone.
        """
        line = command
        if env:
            line = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + line
        if timeout is not None:
            line = f"timeout --kill-after={KILL_AFTER} {timeout:g} sh -c {shlex.quote(line)}"
        started = time.time()
        with self._lock:
            if self.is_local:
                res = invoke.run(line, hide=True, warn=True, in_stream=False)
                return Result(self.name, command, res.stdout, res.stderr, res.exited, started, time.time())
            try:
                if self._shell is None:
                    self._shell = _Shell(self.connection())
                stdout, stderr, code = self._shell.run(line, None if timeout is None else timeout + KILL_AFTER + 30)
            except (OSError, paramiko.SSHException, EOFError) as exc:
                self.close()
                raise HostError(f"host {self.name} ({self.address}): lost while running {command!r}: {exc}") from exc
            except TimeoutError as exc:
                self.close()
                raise HostError(f"host {self.name} ({self.address}): no answer for {command!r} "
                                f"within {exc} s although the remote side had a timeout") from exc
        return Result(self.name, command, stdout, stderr, code, started, time.time())

    def check(self, command: str, *, timeout: float | None = 60) -> str:
        """Run ``command`` and return its stdout; raise :class:`HostError` on a non-zero exit."""
        res = self.run(command, timeout=timeout)
        if not res.ok:
            raise HostError(f"host {self.name}: `{command}` exited {res.exit_code}: {res.stderr.strip()[:400]}")
        return res.stdout

    def start(self, name: str, command: str) -> Service:
        """Start ``command`` in the background under ``setsid``, with a pidfile and a log file."""
        pidfile, logfile = f"{self.workdir}/{name}.pid", f"{self.workdir}/{name}.log"
        self.check(f"mkdir -p {self.workdir}")
        inner = f"echo $$ > {pidfile}; exec {command}"
        self.check(f"setsid sh -c {shlex.quote(inner)} > {logfile} 2>&1 < /dev/null & "
                   f"for i in $(seq 100); do [ -s {pidfile} ] && break; sleep 0.02; done; [ -s {pidfile} ]")
        return Service(self, name, command, pidfile, logfile)

    def stop(self, service: Service) -> str:
        """Stop a service's whole process group (TERM, then KILL) and return its log."""
        if service.stopped:
            return ""
        script = (halt_group(service.pidfile) + f"cat {service.logfile} 2>/dev/null; "
                  f"rm -f {service.pidfile} {service.logfile}; true")
        out = self.run(script, timeout=30).stdout
        service.stopped = True
        return out

    def close(self) -> None:
        """Close the connection (a later command reconnects)."""
        self._shell = None
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None


class Hosts(dict):
    """Hosts by inventory name, closed together."""

    def close(self) -> None:
        """Close every open connection."""
        for host in self.values():
            host.close()

    def __enter__(self) -> "Hosts":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(entries: Mapping[str, HostEntry], names: list[str] | None = None) -> Hosts:
    """Hosts for the inventory ``entries`` (all, or only ``names``), connected lazily."""
    chosen = names if names is not None else list(entries)
    return Hosts({n: Host(entries[n]) for n in chosen})

