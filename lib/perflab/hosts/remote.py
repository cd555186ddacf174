"""Hosts: one Fabric connection per host, remote-side timeouts, services, local fallback.

Every command runs under ``timeout --kill-after`` on the host itself, so a hung benchmark
dies with its whole process group even when the SSH channel is gone (Fabric's ``kill()``
only closes the channel). Long-running services start under ``setsid`` with a pidfile and
are stopped by process group.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
import shlex
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

import paramiko
from fabric import Config, Connection

from .. import knownhosts
from . import executor, registry, sshconfig
from ..errors import UserError
from ..files import Spool
from ..inventory import HostEntry

T = TypeVar("T")

# paramiko logs a dropped connection ("Socket exception: Connection reset by peer") from its transport
# thread, which Python would print to stderr; the loss reaches the caller as HostLost instead.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

#: Grace period between SIGTERM and SIGKILL for remote commands, in seconds.
KILL_AFTER = 5
#: Exit status GNU timeout returns when it had to stop the command.
TIMEOUT_EXIT = 124
#: Seconds a new connection may take (TCP connect) before the host counts as unreachable.
CONNECT_TIMEOUT = 10.0
#: Seconds between two keepalive messages on an idle connection (so that a silent peer is noticed).
KEEPALIVE = 15.0
#: Seconds sent data may stay unacknowledged before the kernel drops the connection (TCP_USER_TIMEOUT):
#: a host that went silent (link down, no reset) is lost after at most KEEPALIVE + SILENCE seconds.
SILENCE = 30.0
#: Seconds between two checks of a host-side wait (a service's pidfile, a stopped group's exit).
POLL = 0.005


#: Shell test: the process group "$p" has a member that is not a zombie. ``kill -0`` (a builtin) answers
#: first: a group it finds nothing of is gone; one it finds may be zombies only, which ``ps`` tells apart.
_GROUP_ALIVE = ("kill -0 -\"$p\" 2>/dev/null && "
                "ps -e -o pgid= -o stat= | awk -v g=\"$p\" '$1 == g && $2 !~ /^Z/ {n++} END {exit !n}'")


def halt_group(pidfile: str, *, grace: float = 2.0) -> str:
    """Shell lines that stop the process group whose leader's pid is in ``pidfile``.

    Sends TERM, waits up to ``grace`` seconds for the group's live members to exit (zombies,
    which ``kill -s 0`` reports alive until reaped, do not count), then sends KILL. Ends
    with a newline so callers can append more commands.
    """
    alive = _GROUP_ALIVE
    polls = max(1, int(grace / 0.02))
    return (f"p=$(cat {pidfile} 2>/dev/null); if [ -n \"$p\" ]; then kill -TERM -\"$p\" 2>/dev/null; i=0; "
            f"while {alive} && [ $i -lt {polls} ]; do sleep 0.02; i=$((i+1)); done; "
            f"kill -KILL -\"$p\" 2>/dev/null; fi\n")


def sweep(variable: str, value: str, *, own_netns: bool = False) -> str:
    """Shell lines that KILL every process whose environment holds ``variable=value``; prints "pid command" each.

    Every such process is listed (and printed) first, then all are killed by one ``kill``: killing
    one of them cannot change what the others are before they are listed (a command's own agent,
    for one, sweeps what its command left once the command's shell dies). They return once the
    killed processes are gone (exited: reaped or a zombie), or after 2 s per process.

    ``own_netns`` spares processes of other network namespaces (the lab's other hosts, which share the kernel).
    """
    match = shlex.quote(f"{variable}={value}")
    here = "n=$(readlink /proc/$$/ns/net); " if own_netns else ""
    same = "[ \"$(readlink /proc/$p/ns/net)\" = \"$n\" ] || continue; " if own_netns else ""
    # KILL is delivered asynchronously: wait (up to 2 s each) until the killed have exited, so that the
    # next command on the host never sees them running
    return (f"{here}k=; for f in $(grep -lzx {match} /proc/[0-9]*/environ 2>/dev/null); do p=${{f#/proc/}}; "
            f"p=${{p%/environ}}; kill -0 \"$p\" 2>/dev/null || continue; {same}"
            f"c=$(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null); "
            f"echo \"$p $c\"; k=\"$k $p\"; done; [ -z \"$k\" ] || kill -KILL $k 2>/dev/null; "
            f"for p in $k; do i=0; while [ $i -lt 100 ] && [ -r /proc/$p/status ] && "
            f"! grep -q '^State:[[:space:]]*Z' /proc/$p/status 2>/dev/null; do sleep 0.02; i=$((i+1)); done; done; true")


class HostError(UserError, RuntimeError):
    """A host could not be reached or refused a command; the message names the host."""


class HostLost(HostError):
    """The transport to a host failed (connection dropped, refused or silent), not a command on it.

    ``host`` is the inventory name, ``reason`` what the transport reported (one line) and ``at``
    the time (epoch seconds) the loss was noticed; a reconnection may help, unlike a refused
    host key or a command that exited non-zero. ``stalled``: seconds this process itself did not run
    (stopped, or the machine suspended) while it waited, so the loss may be its own doing, not the host's.
    """

    def __init__(self, host: str, message: str, reason: str, stalled: float = 0.0) -> None:
        super().__init__(message)
        self.host, self.reason, self.at, self.stalled = host, reason, time.time(), stalled


def known_hosts_file(entry: HostEntry) -> Path:
    """The known_hosts file that holds ``entry``'s key: the inventory's, else ``~/.ssh/known_hosts``."""
    return Path(entry.known_hosts) if entry.known_hosts else Path.home() / ".ssh" / "known_hosts"


def _key_name(entry: HostEntry) -> str:
    """The host's name in known_hosts (``[address]:port`` for a port other than 22, as OpenSSH writes it)."""
    return entry.address if entry.port == 22 else f"[{entry.address}]:{entry.port}"


def _fingerprint(key: paramiko.PKey) -> str:
    """``<type> SHA256:<base64>``, as ``ssh-keygen -l`` prints a key's fingerprint."""
    digest = base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")
    return f"{key.get_name()} SHA256:{digest}"


class _UnknownHostKey(paramiko.SSHException):
    """The host offered a key that the known_hosts file does not list."""


class _KeyPolicy(paramiko.MissingHostKeyPolicy):
    """Refuse unknown host keys (as OpenSSH's StrictHostKeyChecking=yes), or append them when opted in."""

    def __init__(self, host: "Host", known: Path, listed: knownhosts.KnownHosts) -> None:
        self.host, self.known, self.listed, self.accepted = host, known, listed, False

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        """Raise :class:`_UnknownHostKey` with the fix, or record and append the key (accept-new)."""
        entry = self.host.entry
        if self.listed.is_revoked(key):
            raise _UnknownHostKey(f"{hostname} offered {_fingerprint(key)}, which {self.known} marks @revoked; the "
                                  "host is refused: give it a new host key, then list that key")
        if not entry.accept_new_host_keys:
            raise _UnknownHostKey(
                f"no host key for {hostname} in {self.known} (offered {_fingerprint(key)}); check that "
                f"fingerprint out of band, then run `ssh-keyscan -p {entry.port} {entry.address} >> {self.known}` "
                f"(or set `accept_new_host_keys: true` for this host in the inventory, which is recorded)")
        self.known.parent.mkdir(parents=True, exist_ok=True)
        with open(self.known, "a") as fh:
            fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        self.accepted = True


@dataclass(frozen=True)
class Result:
    """What one command did on one host: verbatim output bytes, exit status and wall-clock times.

    ``out`` and ``err`` are the bytes the command wrote, unaltered, as spools (in memory while small, else in a
    temporary file; bytes given are taken as a spool of them): store those. ``stdout`` and ``stderr`` decode them
    (UTF-8, undecodable bytes replaced) for parsers and messages.
    """

    host: str
    command: str
    out: Spool
    err: Spool
    exit_code: int
    started: float
    ended: float
    #: Seconds the command itself ran, taken on the host around its process alone (no framing, no
    #: round trip); None from the shell executor, which cannot take it.
    duration: float | None = None

    def __post_init__(self) -> None:
        for name in ("out", "err"):
            if isinstance(getattr(self, name), bytes):
                object.__setattr__(self, name, Spool(getattr(self, name)))

    @property
    def cut(self) -> str:
        """Which outputs exceeded the command's ``max_output`` and were cut there ("stdout and stderr"), or ""."""
        return " and ".join(n for n, s in (("stdout", self.out), ("stderr", self.err)) if s.dropped)

    @property
    def stdout(self) -> str:
        """The standard output as text, for parsing (never store this: store ``out``)."""
        return self.out.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        """The standard error as text, for parsing and messages (never store this: store ``err``)."""
        return self.err.decode("utf-8", "replace")

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
    #: The service's cgroup in the campaign's registry on the host (None: the host has none).
    cgroup: str | None = None


#: The line between the files' text and their modification times in :meth:`Host._observe_by_shell`'s output.
_STAT_MARK = "__PERFLAB_STAT__"


def _ns(stamp: str | None) -> int | None:
    """Nanoseconds of ``stat -c %.9Y``'s seconds with nine decimals (None when absent or not such a number)."""
    whole, _, frac = (stamp or "").partition(".")
    return int(whole) * 1_000_000_000 + int(frac.ljust(9, "0")[:9]) if whole.isdigit() and frac.isdigit() else None


class _Shell(executor.Channel):
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
        super().__init__(conn.transport.open_session(timeout=30))
        self.chan.exec_command("exec sh")
        self.chan.sendall(self.PRELUDE)

    def run(self, line: str, timeout: float | None, limit: int | None = None) -> tuple[Spool, Spool, int]:
        """Run ``line`` in the shell; return (stdout, stderr, exit status), the bytes verbatim (at most ``limit``
        of each kept)."""
        self._start(timeout)
        self.chan.sendall(f"__pl {shlex.quote(line)}\n".encode())
        while (at := self.buf.find(self.MARK)) < 0:
            self._fill()
        del self.buf[:at]
        code, n_out, n_err = (int(x) for x in self._line()[len(self.MARK):].split())
        out = self._spool(n_out, limit)
        return out, self._spool(n_err, limit), code


class Host:
    """A host of the inventory, reached over one persistent Fabric connection (or locally)."""

    def __init__(self, entry: HostEntry, *, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self.entry = entry
        #: The process registry this host's commands and services are tagged with (a campaign
        #: directory's :attr:`~perflab.store.RawStore.owner`, set by the runner), or None.
        self.owner: str | None = None
        self.name = entry.name
        self.address = entry.address
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        #: The host's executor: the agent (:mod:`perflab.hosts.executor`), or the shell where the host has no python3.
        self._agent: executor.Agent | None = None
        self._shell: _Shell | None = None
        self._connect_timeout = connect_timeout
        self.workdir = f"/tmp/perflab-{entry.name}"
        #: How the host key was checked (file, policy, key fingerprint, whether it was newly
        #: accepted), set on connection; None before the first connection and for local hosts.
        self.host_key: dict[str, Any] | None = None
        #: Why the runner gave up on this host (see :meth:`give_up`), else None.
        self.given_up: str | None = None
        #: The campaign's cgroup on this host (see :mod:`perflab.hosts.registry`), set by :meth:`open_registry`.
        self.cgroup: str | None = None

    def __repr__(self) -> str:
        return f"Host({self.name!r}, {self.address!r}{', local' if self.entry.local else ''})"

    @property
    def is_local(self) -> bool:
        """True for the localhost inventory, which runs commands without SSH."""
        return self.entry.local

    def connection(self, timeout: float | None = None) -> Connection:
        """The host's Fabric connection, opened on first use (within ``timeout`` seconds) and kept.

        The host key is always checked against the inventory's ``known_hosts`` (else the
        user's ``~/.ssh/known_hosts``): an unknown or changed key is refused with the
        command that fixes it, unless the inventory opts in with ``accept_new_host_keys``
        (then an unknown key is appended to that file and recorded in :attr:`host_key`).
        A host that cannot be reached raises :class:`HostLost`; a refused key, :class:`HostError`.
        """
        if self._conn is None:
            cfg = Config(overrides={"run": {"in_stream": False}, **sshconfig.FABRIC_OVERRIDES})
            sshconfig.warn(self.entry)
            kwargs: dict[str, Any] = {"look_for_keys": False, "allow_agent": False}
            if self.entry.key:
                kwargs["key_filename"] = self.entry.key
            limit = self._connect_timeout if timeout is None else timeout
            if timeout is not None:  # a reconnection bounds the whole handshake, not only the TCP connect
                kwargs |= {"banner_timeout": timeout, "auth_timeout": timeout}
            conn = Connection(self.entry.address, user=self.entry.user, port=self.entry.port, config=cfg,
                              connect_timeout=limit, connect_kwargs=kwargs)
            known = known_hosts_file(self.entry)
            listed = knownhosts.load(known)
            listed.add_to(conn.client.get_host_keys())
            policy = _KeyPolicy(self, known, listed)
            conn.client.set_missing_host_key_policy(policy)
            where = f"host {self.name} ({self.entry.user}@{self.address}:{self.entry.port})"
            try:
                conn.open()
            except paramiko.BadHostKeyException as exc:
                raise HostError(f"{where}: cannot connect: the host key changed (offered {_fingerprint(exc.key)}, "
                                f"{known} has {_fingerprint(exc.expected_key)}); this may be an attack. If the "
                                f"host was really reinstalled, check the new key out of band, then run "
                                f"`ssh-keygen -f {known} -R {shlex.quote(_key_name(self.entry))}` and "
                                f"`ssh-keyscan -p {self.entry.port} {self.address} >> {known}`") from None
            except _UnknownHostKey as exc:
                raise HostError(f"{where}: cannot connect: {exc}") from None
            except (OSError, paramiko.SSHException) as exc:
                raise HostLost(self.name, f"{where}: cannot connect: {_one_line(exc)}. Is the lab up "
                               "(`perflab lab status`)?", _one_line(exc)) from exc
            server_key = conn.transport.get_remote_server_key()
            self.host_key = {"known_hosts": str(known), "key": _fingerprint(server_key),
                             "accepted_new": policy.accepted, "policy": "accept-new" if
                             self.entry.accept_new_host_keys else "strict"}
            conn.transport.set_keepalive(KEEPALIVE)
            if isinstance(conn.transport.sock, socket.socket) and hasattr(socket, "TCP_USER_TIMEOUT"):
                conn.transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, int(SILENCE * 1000))
            self._conn = conn
        return self._conn

    def run(self, command: str, *, timeout: float | None = None, env: Mapping[str, str] | None = None,
            tagged: bool = True, max_output: int | None = None) -> Result:
        """Run ``command`` through ``sh -c`` on the host, bounded by a remote-side timeout.

        With a timeout, the command's processes carry the host's process registry in their
        environment (``PERFLAB_OWNER``, and a ``PERFLAB_TAG`` of this command alone): when the
        command ends or times out, every process still tagged with it is killed, so children
        that left the process group (``setsid``) die with it. ``tagged=False`` is only for
        the registry's own maintenance (:meth:`reap`) and reads that start no lasting process (:meth:`observe` on a
        host without python3). Never raises for a non-zero exit;
        raises :class:`HostError` when the host is gone.

        The agent (:mod:`perflab.hosts.executor`) enforces the timeout and sweeps the tag itself and
        times the command on the host (:attr:`Result.duration`); a host without ``python3`` gets
        the same through a shell line and ``timeout``, without the duration.

        The output is received in chunks into spools (memory bounded, whatever its size); ``max_output`` keeps at
        most that many bytes of stdout and of stderr, the rest is dropped (:attr:`Result.cut` says which).
        """
        tag = secrets.token_hex(8) if timeout is not None and tagged else None
        # the command's own cgroup in the campaign's registry: nothing it starts can leave it (env -i, setsid)
        scope = registry.child(self.cgroup, f"c-{tag}") if tag and self.cgroup else None
        with self._lock:
            started = time.time()
            if self.is_local:
                reply = executor.run_here(command, timeout=timeout, kill_after=KILL_AFTER,
                                          env=self._registry(env, tag), tag=tag, cgroup=scope, max_output=max_output)
            elif (agent := self._executor(command)) is not None:
                reply = self._exchange(command, timeout, lambda wait: agent.run(
                    command, timeout=timeout, kill_after=KILL_AFTER, env=self._registry(env, tag), tag=tag,
                    cgroup=scope, reply_deadline=wait, max_output=max_output))
            else:
                shell, line = self._shell, self._shell_line(command, timeout, env, tag, scope)
                assert shell is not None
                stdout, stderr, code = self._exchange(command, timeout, lambda wait: shell.run(line, wait, max_output))
                return Result(self.name, command, stdout, stderr, code, started, time.time())
        return Result(self.name, command, reply.out, reply.err, reply.exit_code, started, time.time(), reply.seconds)

    def observe(self, *, truncate: Sequence[str] = (), read: Sequence[str] = (), stat: Sequence[str] = (),
                timeout: float = 60) -> executor.Observed:
        """Empty the files ``truncate``, read ``read`` and stat ``stat`` on the host, in that order, in one round trip.

        The agent does it without starting a process (:func:`perflab.agent.observe`: the text of ``read`` in
        ``tail -n +1``'s form, the modification times of ``stat`` in ns); a host without ``python3`` runs ``:>``,
        ``tail`` and ``stat`` through its shell for the same answer. Raises :class:`HostError` when a file cannot
        be emptied and :class:`HostLost` when the host is gone or silent for ``timeout`` seconds.
        """
        what = f"reading {' '.join(read or stat or truncate)[:80]}"
        try:
            with self._lock:
                if self.is_local:
                    return executor.observe_here(truncate=truncate, read=read, stat=stat)
                if (agent := self._executor(what)) is not None:
                    return self._exchange(what, timeout, lambda wait: agent.observe(
                        truncate=truncate, read=read, stat=stat, reply_deadline=wait))
        except executor.Refused as exc:
            raise HostError(f"host {self.name}: {what} failed: {_one_line(exc)}") from exc
        return self._observe_by_shell(truncate, read, stat, timeout)

    def _observe_by_shell(self, truncate: Sequence[str], read: Sequence[str], stat: Sequence[str],
                          timeout: float) -> executor.Observed:
        """:meth:`observe` on a host without ``python3``: ``:>``, ``tail -n +1`` and ``stat`` in one shell line."""
        line = "".join(f": > {shlex.quote(p)} || exit 1; " for p in truncate)
        line += (f"tail -n +1 {shlex.join(read)} 2>&1; " if read else "") + f"echo; echo {_STAT_MARK}; "
        line += (f"stat -c '%.9Y %n' {shlex.join(stat)} 2>/dev/null; " if stat else "") + "true"
        res = self.run(line, timeout=timeout, tagged=False)
        text, marked, times = res.stdout.rpartition(f"\n{_STAT_MARK}\n")
        if not res.ok or not marked:
            raise HostError(f"host {self.name}: reading {' '.join(read or stat or truncate)[:80]} failed (exit "
                            f"status {res.exit_code}): {res.stderr.strip()[:300] or 'no message'}")
        stamps = {path: stamp for stamp, _, path in (row.partition(" ") for row in times.splitlines())}
        return executor.Observed(text, {p: _ns(stamps.get(p)) for p in stat})

    def _shell_line(self, command: str, timeout: float | None, env: Mapping[str, str] | None, tag: str | None,
                    scope: str | None = None) -> str:
        """``command`` as a line for the shell executor: its environment, ``timeout``, its cgroup ``scope`` (made,
        joined before it runs and killed after) and the tag sweep written out."""
        line = command
        if env:
            line = "export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + "; " + line
        if scope:
            line = f"{registry.join(scope)} || exit 125; {line}"
        if timeout is not None:
            line = f"timeout --kill-after={KILL_AFTER} {timeout:g} sh -c {shlex.quote(line)}"
            if tag:
                owner = f"PERFLAB_OWNER={shlex.quote(self.owner)}; export PERFLAB_OWNER; " if self.owner else ""
                made, killed = (f"{registry.make(scope)}; ", f"{registry.kill(scope)}; ") if scope else ("", "")
                line = (f"{owner}PERFLAB_TAG={tag}; export PERFLAB_TAG; {made}{line}; rc=$?; "
                        f"{{ {killed}{sweep('PERFLAB_TAG', tag)}; }} >/dev/null; exit $rc")
        return line

    def _registry(self, env: Mapping[str, str] | None, tag: str | None) -> dict[str, str]:
        """The environment a command gets: ``env``, and the host's process registry when the command is tagged."""
        return {**(env or {}), **({"PERFLAB_OWNER": self.owner} if tag and self.owner else {})}

    def _executor(self, command: str) -> executor.Agent | None:
        """The host's agent, started on first use; None (and the shell from then on) for a host without python3."""
        if self._agent is None and self._shell is None:
            if self.given_up:
                raise HostLost(self.name, f"host {self.name} ({self.address}): {self.given_up}", self.given_up)
            try:
                self._agent = executor.open_agent(self.connection().transport)
            except (OSError, paramiko.SSHException, EOFError) as exc:
                self.close()
                raise HostLost(self.name, f"host {self.name} ({self.address}): lost while running "
                               f"{_brief(command)}: {_one_line(exc)}", _one_line(exc)) from exc
            if self._agent is None:
                self._shell = _Shell(self.connection())
        return self._agent

    def _exchange(self, command: str, timeout: float | None, send: Callable[[float | None], T]) -> T:
        """``send(reply_deadline)`` on the host's executor; a silent or lost host raises :class:`HostLost`."""
        if self.given_up:
            raise HostLost(self.name, f"host {self.name} ({self.address}): {self.given_up}", self.given_up)
        wait = None if timeout is None else timeout + KILL_AFTER + 30
        channel = self._agent or self._shell
        try:
            return send(wait)
        except TimeoutError as exc:  # before OSError, of which it is a subclass (time this process did not run
            self.close()               # is not counted: executor.Channel waits anew after it)
            silent = f"no answer within {wait:g} s although the host itself stops the command after {timeout:g} s"
            raise HostLost(self.name, f"host {self.name} ({self.address}): {silent} (running "
                           f"{_brief(command)})", silent) from exc
        except (OSError, paramiko.SSHException, EOFError) as exc:
            self.close()
            stalled = channel.stalled if channel is not None else 0.0
            own = (f" after this process itself did not run for {stalled:.0f} s (stopped or suspended)"
                   if stalled else "")
            raise HostLost(self.name, f"host {self.name} ({self.address}): lost while running "
                           f"{_brief(command)}{own}: {_one_line(exc)}", _one_line(exc), stalled) from exc
        except BaseException:  # a signal while waiting: the reply will come on a channel no command reads again
            for running in (self._agent, self._shell):
                if running is not None:
                    running.chan.close()
            self._agent = self._shell = None
            raise

    def check(self, command: str, *, timeout: float | None = 60) -> str:
        """Run ``command`` and return its stdout; raise :class:`HostError` on a non-zero exit."""
        res = self.run(command, timeout=timeout)
        if not res.ok:
            raise HostError(f"host {self.name}: `{command}` exited {res.exit_code}: {res.stderr.strip()[:400]}")
        return res.stdout

    def start(self, name: str, command: str) -> Service:
        """Start ``command`` in the background under ``setsid``, with a pidfile and a log file.

        The service carries the host's ``PERFLAB_OWNER`` (so :meth:`reap` finds it after a
        crash) and a ``PERFLAB_TAG`` of its own instead of the starting command's (so it
        outlives that command, and :meth:`stop` finds its ``setsid`` children).
        """
        pidfile, logfile = f"{self.workdir}/{name}.pid", f"{self.workdir}/{name}.log"
        scope = registry.child(self.cgroup, f"s-{name}") if self.cgroup else None
        inner = (f"{registry.join(scope)} || exit 125; " if scope else "") + f"echo $$ > {pidfile}; exec {command}"
        owner = f" PERFLAB_OWNER={shlex.quote(self.owner)}" if self.owner else ""
        tag = shlex.quote(f"PERFLAB_TAG=service:{pidfile}")
        polls = int(2 / POLL)  # the pidfile appears within 2 s, or the start failed
        self.check(f"mkdir -p {self.workdir}" + (f" && {registry.make(scope)}" if scope else "") + " || exit $?\n"
                   f"env {tag}{owner} setsid sh -c {shlex.quote(inner)} > {logfile} 2>&1 < /dev/null & "
                   f"i=0; until [ -s {pidfile} ] || [ $i -ge {polls} ]; do sleep {POLL}; i=$((i+1)); done; "
                   f"[ -s {pidfile} ]")
        return Service(self, name, command, pidfile, logfile, cgroup=scope)

    def open_registry(self) -> str | None:
        """Create the campaign's cgroup on this host (see :mod:`perflab.hosts.registry`); None, or why there is none.

        Needs :attr:`owner`; afterwards every command and service runs in a child cgroup of it.
        """
        if self.owner is None:
            return "no process registry (no owner)"
        res = self.run(registry.probe(self.owner, self.name, self.workdir), timeout=30, tagged=False)
        if not res.ok:
            self.cgroup = None
            why = res.stderr.strip()[:200] or f"exit {res.exit_code}"
            return (f"host {self.name}: no cgroup for the campaign's processes ({why}); processes that drop "
                    "their environment (env -i) can outlive the run there")
        self.cgroup = res.stdout.strip()
        return None

    def forget(self, service: Service) -> str:
        """Shell lines that kill what is left in ``service``'s cgroup and remove it (empty without a cgroup)."""
        return f"{{ {registry.kill(service.cgroup)}; }} >/dev/null 2>&1\n" if service.cgroup else ""

    def close_registry(self) -> list[str]:
        """Kill whatever is left in the campaign's cgroup on this host and remove it; return ``"<pid> <command>"``
        per process killed (none when everything was stopped in order)."""
        if not self.cgroup:
            return []
        parent = shlex.quote(self.cgroup.rsplit("/", 1)[0])  # perflab-<owner>, removed once no host uses it
        res = self.run(f"{registry.kill(self.cgroup, report=True)}; rmdir {parent} 2>/dev/null; true", timeout=30,
                       tagged=False)
        self.cgroup = None
        return [line for line in res.stdout.splitlines() if line.strip()]

    def alive(self, service: Service) -> bool:
        """True when the service's process group still has a member (it did not exit after starting)."""
        return self.run(f"p=$(cat {service.pidfile}) && [ -n \"$p\" ] && {_GROUP_ALIVE}", timeout=15).ok

    def dead(self, services: list[Service]) -> list[Service]:
        """Those of ``services`` (started on this host) whose process group has no live member: one round trip."""
        if not services:
            return []
        checks = "".join(f"p=$(cat {s.pidfile} 2>/dev/null); [ -n \"$p\" ] && {_GROUP_ALIVE} || echo {i}; "
                         for i, s in enumerate(services))
        res = self.run(checks + "true", timeout=15)
        return [services[int(i)] for i in res.stdout.split() if i.isdigit()]

    def port_holder(self, service: Service, port: int) -> str | None:
        """Who listens on TCP ``port`` if not ``service``'s own processes (``"pid N (comm)"``), else None.

        A listener counts as the service's when it is in the service's cgroup (or, on a host
        without one, in its process group). None also when ``ss -p`` names no process.
        """
        if service.cgroup:
            mine = f"grep -q {shlex.quote('^0::.*/' + '/'.join(service.cgroup.split('/')[-3:]) + '$')} /proc/$p/cgroup"
        else:
            mine = f"[ \"$(ps -o pgid= -p $p | tr -d ' ')\" = \"$(cat {service.pidfile})\" ]"
        script = (f"for p in $(ss -Hltnp {shlex.quote(f'sport = :{port}')} | grep -o 'pid=[0-9]*' | cut -d= -f2 | "
                  f"sort -u); do {mine} && continue; echo \"pid $p ($(cat /proc/$p/comm 2>/dev/null))\"; break; done")
        return self.run(script, timeout=15).stdout.strip() or None

    def reap(self, owner: str, *, own_netns: bool = False) -> list[str]:
        """Kill every process on this host registered to ``owner`` (left by an earlier, killed run).

        Kills this host's cgroup of the registry (see :mod:`perflab.hosts.registry`), then every
        process still carrying ``PERFLAB_OWNER=<owner>``. Returns one ``"<pid> <command
        line>"`` per process killed. Hosts that share a kernel (the lab's namespaces) see each
        other's processes, which carry the same owner; ``own_netns`` kills only those in this
        host's network namespace (the cgroup part is always this host's own).
        """
        script = f"{registry.kill_all(owner, self.name)}; {sweep('PERFLAB_OWNER', owner, own_netns=own_netns)}"
        res = self.run(script, timeout=30, tagged=False)
        return list(dict.fromkeys(line for line in res.stdout.splitlines() if line.strip()))

    def stop(self, service: Service) -> str:
        """Stop a service's whole process group (TERM, then KILL) and its setsid children; return its log."""
        if service.stopped:
            return ""
        script = (halt_group(service.pidfile) + self.forget(service)
                  + f"{{ {sweep('PERFLAB_TAG', f'service:{service.pidfile}')}; }} >/dev/null; "
                  f"cat {service.logfile} 2>/dev/null; "
                  f"rm -f {service.pidfile} {service.logfile}; true")
        out = self.run(script, timeout=30).stdout
        service.stopped = True
        return out

    def reconnect(self, timeout: float) -> None:
        """Drop the connection and open a new one within ``timeout`` seconds, the host key checked as at first.

        Raises :class:`HostLost` while the host cannot be reached, :class:`HostError` for a refused key.
        """
        with self._lock:
            self.close()
            self.connection(timeout)

    def give_up(self, why: str) -> None:
        """Stop trying this host: every later command raises :class:`HostLost` at once, saying ``why``.

        So that stopping what runs on the other hosts is not held up by connect timeouts.
        """
        self.close()
        self.given_up = why

    def close(self) -> None:
        """Close the connection (a later command reconnects)."""
        self._shell = None
        self._agent = None
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None


def _brief(command: str) -> str:
    """A command for a message: its first line, cut to 60 characters."""
    first = command.strip().split("\n", 1)[0]
    return repr(first if len(first) <= 60 and first == command.strip() else first[:60] + "...")


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line (paramiko's may span several), or its class name."""
    return " ".join(str(exc).split()) or type(exc).__name__


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


def reap(entries: Mapping[str, HostEntry], names: list[str], owner: str) -> tuple[dict[str, list[str]], list[str]]:
    """Kill what earlier runs registered to ``owner`` left on hosts ``names``.

    Returns host -> killed processes, and the hosts that could not be reached (their own
    session reports them; what they hold is stopped by the next run that reaches them).
    """
    killed, unreachable = {}, []
    with connect(entries, names) as hosts:
        for name, host in hosts.items():
            try:
                if found := host.reap(owner, own_netns=True):  # the lab's hosts share a kernel: each its own
                    killed[name] = found
            except HostError:
                unreachable.append(name)
    return killed, unreachable

