"""A per-host command executor: one small Python agent on a channel of the host's connection.

perflab's first executor was a long-lived ``sh`` whose framing (a temporary directory, a
subshell, two ``wc`` and a ``cat`` per command) and ``timeout`` wrapper cost 15-40 ms per
command on a lab host; the agent costs one fork/exec of ``sh -c`` per command. It enforces the
timeout itself (TERM to the command's process group, KILL after the grace period), kills what
escaped the group by its registry tag, and times the command on the host, around the command
alone, so the recorded duration holds no framing or round trip.

The agent is :mod:`perflab.agent`, sent as source text; it needs ``python3`` on the host (3.6
or later, standard library only; the lab's hosts share this machine's). :func:`open_agent`
returns None when the host has none, and the caller keeps the shell executor. On this machine
(the ``localhost`` inventory) :func:`run_here` runs the same code in-process.

Protocol, one request at a time: the controller writes one JSON line ``{"line", "timeout",
"kill_after", "env", "tag", "cgroup"}``; the agent answers ``__PERFLAB_AGENT__ <rc> <n_out> <n_err>
<seconds>`` on a line of its own, then the ``n_out`` bytes of stdout and ``n_err`` of stderr,
verbatim, which the controller reads into spools (in memory while small, else on disk). The agent says
``__PERFLAB_AGENT__ ready 1`` once when it starts. A request ``{"op": "observe",
"truncate", "read", "stat"}`` (:meth:`Agent.observe`) reads small files without starting a process and answers
their text and modification times as JSON in the same framing.
"""

from __future__ import annotations

import json
import math
import shlex
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import agent as agent_program
from ..errors import UserError
from ..files import Spool

MARK = agent_program.MARK
#: Seconds the agent may take to say it is ready before the host counts as having no agent.
READY_TIMEOUT = 15.0


@dataclass(frozen=True)
class Reply:
    """What the agent returned for one command: its bytes, exit status and duration on the host."""

    out: Spool
    err: Spool
    exit_code: int
    seconds: float


#: Seconds by which a wait may overrun its timeout before this process counts as not having run meanwhile
#: (stopped with SIGSTOP or Ctrl-Z, or the machine suspended): far beyond a busy machine's scheduling delays.
STALL = 2.0


def _clocks() -> tuple[float, float]:
    """(monotonic, boot time) seconds now: the boot-time clock also counts a suspended machine's sleep."""
    return time.monotonic(), time.clock_gettime(time.CLOCK_BOOTTIME)


class Channel:
    """Replies read from one SSH channel, each read bounded by a deadline: header lines through a small buffer,
    the bytes of an output straight into a :class:`~perflab.files.Spool` (linear time, bounded memory).

    Time during which this process did not run (a wait that overran its timeout by more than :data:`STALL`
    seconds: stopped; the boot-time clock ahead of the monotonic one: suspended) is not the host's silence: the
    reply's wait starts again, and :attr:`stalled` counts those seconds.
    """

    def __init__(self, chan: Any) -> None:
        self.chan = chan
        self.buf = bytearray()
        self.wait: float | None = None
        self.deadline: float | None = None
        #: Seconds this process did not run while waiting for the current reply.
        self.stalled = 0.0
        self._mark = _clocks()

    def _start(self, wait: float | None) -> None:
        """Begin waiting for a reply: at most ``wait`` seconds of this process's running time (None: no bound)."""
        self.wait, self.stalled = wait, 0.0
        self._mark = _clocks()
        self.deadline = None if wait is None else self._mark[0] + wait

    def _fill(self) -> None:
        """Read what the channel has into :attr:`buf`; ``TimeoutError`` past the deadline, ``EOFError`` at its end."""
        while True:
            self._stall(_clocks(), 0.0)  # time between two reads is this process's own work
            left = None if self.deadline is None else self.deadline - self._mark[0]
            if left is not None and left <= 0:
                raise TimeoutError("the reply deadline")
            self.chan.settimeout(left)  # also None: an earlier command's deadline must not linger
            try:
                data = self.chan.recv(1 << 16)
            except socket.timeout:
                data = None
            self._stall(_clocks(), left)
            if data is None:
                continue  # the deadline passed, unless this process was stopped meanwhile
            if not data:
                raise EOFError("the executor's channel closed")
            self.buf += data
            return

    def _stall(self, now: tuple[float, float], waited: float | None) -> None:
        """Move the mark to ``now``; when more time passed than ``waited`` (plus :data:`STALL`), or the machine
        slept, count it in :attr:`stalled` and give the host the whole wait again from now."""
        (mono, boot), (mono0, boot0) = now, self._mark
        self._mark = now
        gap = max(mono - mono0 - (waited if waited is not None else math.inf), (boot - boot0) - (mono - mono0))
        if gap > STALL:
            self.stalled += gap
            if self.wait is not None:
                self.deadline = mono + self.wait

    def _line(self) -> bytes:
        """The next line (without its newline)."""
        seen = 0
        while (at := self.buf.find(b"\n", seen)) < 0:
            seen = len(self.buf)
            self._fill()
        line = bytes(self.buf[:at])
        del self.buf[:at + 1]
        return line

    def _spool(self, n: int, limit: int | None = None) -> Spool:
        """The next ``n`` bytes, as a :class:`Spool` keeping at most ``limit`` of them."""
        spool = Spool(limit=limit)
        while n > 0:
            if not self.buf:
                self._fill()
            piece = bytes(self.buf[:n])
            del self.buf[:len(piece)]
            spool.write(piece)
            n -= len(piece)
        return spool


class Agent(Channel):
    """The agent running on one channel of a host's connection; one command at a time."""

    def ready(self) -> bool:
        """True once the agent said it runs; False when the host has no usable ``python3``."""
        self._start(READY_TIMEOUT)
        try:
            return self._line() == MARK + b" ready 1"
        except (EOFError, TimeoutError):
            return False

    def run(self, line: str, *, timeout: float | None = None, kill_after: float = 5.0,
            env: Mapping[str, str] | None = None, tag: str | None = None, cgroup: str | None = None,
            reply_deadline: float | None = None, max_output: int | None = None) -> Reply:
        """Run ``line`` with ``sh -c`` on the host and return its :class:`Reply`.

        ``timeout``: seconds before the agent stops the command's process group (TERM, then
        KILL after ``kill_after``; exit status 124, or 137 when KILL was needed); ``env``: added
        to the command's environment (values never enter the command text); ``tag``: the
        command's ``PERFLAB_TAG``, whose processes are killed when a timed command ends;
        ``cgroup``: a cgroup directory made for the command, joined before it runs, and killed and
        removed when it ends (:mod:`perflab.hosts.registry`); ``reply_deadline``: seconds to wait for the reply before
        raising ``TimeoutError``; ``max_output``: bytes of stdout and of stderr kept at most (the rest is read and
        dropped, counted in :attr:`Spool.dropped <perflab.files.Spool.dropped>`).
        """
        return self._ask({"line": line, "timeout": timeout, "kill_after": kill_after, "env": dict(env or {}),
                          "tag": tag, "cgroup": cgroup}, reply_deadline, max_output)

    def observe(self, *, truncate: Sequence[str] = (), read: Sequence[str] = (), stat: Sequence[str] = (),
                reply_deadline: float | None = None) -> Observed:
        """Empty ``truncate``, read ``read`` and stat ``stat`` on the host without starting a process
        (:func:`perflab.agent.observe`); ``reply_deadline`` as for :meth:`run`."""
        reply = self._ask(_observe_request(truncate, read, stat), reply_deadline)
        return _observed(reply)

    def _ask(self, request: Mapping[str, Any], reply_deadline: float | None, limit: int | None = None) -> Reply:
        """Send one request and read its reply, waiting at most ``reply_deadline`` seconds (None: no bound);
        ``limit``: bytes kept of each output."""
        self._start(reply_deadline)
        self.chan.sendall(json.dumps(request).encode() + b"\n")
        header = self._line()
        if not header.startswith(MARK + b" "):
            raise EOFError(f"the agent answered {header[:80]!r}")
        code, n_out, n_err, seconds = header[len(MARK) + 1:].split()
        out = self._spool(int(n_out), limit)
        return Reply(out, self._spool(int(n_err), limit), int(code), float(seconds))

    def close(self) -> None:
        """Close the channel; the agent exits when its input ends."""
        self.chan.close()


#: Where the agent's interpreter is looked for first: the system's own, which starts in a third of the time
#: of a version manager's ``python3`` wrapper that a login's PATH may put first; then ``python3`` on the PATH.
PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")


def command() -> str:
    """The command line that starts the agent on a host (the agent's source as one quoted argument).

    The interpreter runs isolated (``-I -S``: no user site, no environment variables, no site
    packages), as the agent needs the standard library only.
    """
    source = shlex.quote(Path(agent_program.__file__).read_text())
    return (f"a={source}; for p in {' '.join(PYTHONS)} \"$(command -v python3)\"; do "
            "[ -x \"$p\" ] && exec \"$p\" -I -S -u -c \"$a\"; done; "
            "echo 'perflab agent: python3 not found' >&2; exit 127")


def run_here(line: str, *, timeout: float | None = None, kill_after: float = 5.0,
             env: Mapping[str, str] | None = None, tag: str | None = None, cgroup: str | None = None,
             max_output: int | None = None) -> Reply:
    """Run ``line`` on this machine as the agent would on a host (the ``localhost`` inventory); the output
    stays in the agent's temporary files (cut to ``max_output`` bytes each)."""
    rc, out, err, seconds = agent_program.run({"line": line, "timeout": timeout, "kill_after": kill_after,
                                               "env": dict(env or {}), "tag": tag, "cgroup": cgroup})
    return Reply(Spool(file=out, limit=max_output), Spool(file=err, limit=max_output), rc, seconds)


class Refused(UserError, RuntimeError):
    """The agent answered a request with an error (e.g. a file of an observe request could not be emptied)."""


@dataclass(frozen=True)
class Observed:
    """Small files read on a host without starting a process (:func:`perflab.agent.observe`)."""

    #: The files of ``read`` in ``tail -n +1``'s form.
    text: str
    #: Path -> modification time in ns of the files of ``stat`` (None: it could not be read).
    mtime_ns: dict[str, int | None]


def _observe_request(truncate: Sequence[str], read: Sequence[str], stat: Sequence[str]) -> dict[str, Any]:
    return {"op": "observe", "truncate": list(truncate), "read": list(read), "stat": list(stat)}


def _observed(reply: Reply) -> Observed:
    """The :class:`Observed` of an observe request's reply; :class:`Refused` with the agent's message when it failed."""
    if reply.exit_code != 0:
        raise Refused(reply.err.decode("utf-8", "replace").strip() or f"exit status {reply.exit_code}")
    doc = json.loads(bytes(reply.out))
    return Observed(doc["text"], dict(doc["mtime_ns"]))


def observe_here(*, truncate: Sequence[str] = (), read: Sequence[str] = (), stat: Sequence[str] = ()) -> Observed:
    """:meth:`Agent.observe` on this machine (the ``localhost`` inventory), in-process."""
    try:
        return _observed(Reply(Spool(agent_program.observe(_observe_request(truncate, read, stat))), Spool(), 0, 0.0))
    except OSError as exc:  # as the agent answers it
        raise Refused(f"perflab agent: {exc}") from exc


def open_agent(transport: Any) -> Agent | None:
    """Start the agent on a new channel of ``transport`` (a paramiko Transport); None when the host has no python3."""
    chan = transport.open_session(timeout=30)
    chan.exec_command(command())
    agent = Agent(chan)
    if agent.ready():
        return agent
    chan.close()
    return None
