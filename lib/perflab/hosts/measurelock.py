"""The machine-wide measurement lock: at most one campaign measures on a machine at a time.

All labs of one machine share its CPUs, memory and disks, so two campaigns measuring at
once measure each other (pyperf's own to-do list names the same need: "a system-wide lock
to prevent running two benchmarks at the same time"). The lock is a kernel-held
``flock`` on one file outside any project or lab directory (:func:`path`:
``$PERFLAB_MEASURE_LOCK``, else ``/var/lock/perflab-measure.lock``, else the same name in
the temporary directory), so a crashed or killed holder releases it with its last file
descriptor: there is never a stale lock to remove by hand.

The holder writes who it is into the file (:class:`Holder`, JSON with a ``format`` key:
campaign, pid, host, command, start and expected end); a process that finds the lock
taken reads it to say whom it waits for. :func:`hold` waits (re-announcing every
:data:`ANNOUNCE_SECONDS`) or, with ``wait=0``, stops at once with :class:`MachineBusy`.
The runner takes the lock around every measuring run (``perflab run``, ``perflab pilot``,
the experiment notebook); it is re-entrant within one thread, so a caller that already
holds it (a test, a script measuring several campaigns in turn) may call the runner.

Format history of the lock file's content: format 1 (perflab 0.1): ``campaign``, ``pid``,
``host``, ``command``, ``started_utc``, ``eta_utc`` (null when unknown).
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator, TextIO

from ..errors import UserError
from ..formats import locks

#: Environment variable naming the lock file (tests point it into a temporary directory).
ENV = "PERFLAB_MEASURE_LOCK"
#: Environment variable bounding the wait in seconds (unset: wait as long as it takes); the test
#: suite sets a short one and skips a live test when the machine is busy measuring.
WAIT_ENV = "PERFLAB_MEASURE_WAIT"
#: The lock file's name in the machine's lock directory.
NAME = "perflab-measure.lock"
#: Seconds between two "still waiting" lines.
ANNOUNCE_SECONDS = 60.0
#: Seconds between two attempts to take the lock while waiting.
POLL_SECONDS = 0.2
FORMAT = 1


class MachineBusy(UserError, RuntimeError):
    """Another campaign holds the measurement lock and the caller would not (or no longer) wait."""


@dataclass(frozen=True)
class Holder:
    """Who holds the lock, as written into the lock file."""

    campaign: str
    pid: int
    host: str
    command: str
    started_utc: str
    eta_utc: str | None = None
    format: int = FORMAT

    def describe(self) -> str:
        """One line naming the campaign, pid, host, start and expected end."""
        return (f"campaign {self.campaign} (pid {self.pid} on {self.host}, measuring since {self.started_utc}"
                + (f", expected to end about {self.eta_utc}" if self.eta_utc else "") + ")")


def path() -> Path:
    """The lock file: ``$PERFLAB_MEASURE_LOCK``, else in ``/var/lock``, else in the temporary directory."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    for d in (Path("/var/lock"), Path(tempfile.gettempdir())):
        if d.is_dir() and os.access(d, os.W_OK | os.X_OK):
            return d / NAME
    return Path(tempfile.gettempdir()) / NAME


def default_wait() -> float | None:
    """The wait bound from ``$PERFLAB_MEASURE_WAIT`` (seconds), or None (wait as long as it takes)."""
    text = os.environ.get(WAIT_ENV, "").strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        raise MachineBusy(f"${WAIT_ENV}={text!r}: expected a number of seconds; unset it to wait as long "
                          "as it takes") from None


def _open(p: Path) -> int:
    """Open the lock file for writing, creating it readable and writable by every user of the machine."""
    try:
        return os.open(p, os.O_RDWR)  # no O_CREAT: sticky /var/lock refuses it on another user's file
    except FileNotFoundError:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            os.fchmod(fd, 0o666)  # the umask would keep other users from recording themselves
        except PermissionError:
            pass
        return fd


def read_holder(p: Path | None = None) -> Holder | None:
    """The holder recorded in the lock file, or None when nobody holds the lock (or it names nobody yet)."""
    p = p or path()
    try:
        fd = os.open(p, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _parse(fh.read().decode(errors="replace"))
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return None  # nobody holds it: what the file says is history


def _parse(text: str) -> Holder | None:
    doc = locks.parse(text)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return None
    try:
        return Holder(**{k: doc[k] for k in ("campaign", "pid", "host", "command", "started_utc")},
                      eta_utc=doc.get("eta_utc"))
    except KeyError:
        return None


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _command() -> str:
    return " ".join(sys.argv)[:200] or "python"


_local = threading.local()


@contextmanager
def hold(campaign: str, *, eta_seconds: float | None = None, wait: float | None = None,
         stream: TextIO | None = None, announce: float = ANNOUNCE_SECONDS) -> Iterator[Holder]:
    """Hold the machine's measurement lock for ``campaign`` while the block runs.

    Waits while another campaign holds it, printing a line naming the holder to ``stream``
    and again every ``announce`` seconds; ``wait`` bounds the wait in seconds (0: do not
    wait; None: :func:`default_wait`), after which :class:`MachineBusy` is raised in one line.
    Re-entrant within one thread: a nested call yields the holder already recorded.
    """
    held = getattr(_local, "held", None)
    if held is not None:
        yield held[1]
        return
    out = stream or sys.stdout
    bound = default_wait() if wait is None else wait
    p = path()
    fd = _open(p)
    try:
        _acquire(fd, p, campaign, bound, out, announce)
        now = time.time()
        me = Holder(campaign, os.getpid(), socket.gethostname(), _command(), _utc(now),
                    _utc(now + eta_seconds) if eta_seconds is not None and eta_seconds == eta_seconds else None)
        os.ftruncate(fd, 0)
        os.pwrite(fd, locks.dumps(asdict(me)), 0)
        _local.held = (fd, me)
        try:
            yield me
        finally:
            _local.held = None
            os.ftruncate(fd, 0)  # what a reader finds once the lock is free: nothing
    finally:
        os.close(fd)  # releases the flock


def _acquire(fd: int, p: Path, campaign: str, bound: float | None, out: TextIO, announce: float) -> None:
    """Take the flock on ``fd``, waiting at most ``bound`` seconds (None: as long as it takes)."""
    start = time.monotonic()
    last = None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if last is not None:
                print(f"{campaign}: the machine is free after {time.monotonic() - start:.0f} s; measuring",
                      file=out, flush=True)
            return
        except BlockingIOError:
            pass
        waited = time.monotonic() - start
        holder = _parse(os.pread(fd, 4096, 0).decode(errors="replace"))
        who = holder.describe() if holder else "another campaign (it has not named itself yet)"
        if bound is not None and waited >= bound:
            raise MachineBusy(f"{campaign}: the machine is measuring {who}; one campaign measures at a time "
                              f"(lock {p}). " + ("Rerun once it has ended, or without --no-wait to wait for it"
                                                 if bound == 0 else f"Gave up after waiting {waited:.0f} s"))
        if last is None or time.monotonic() - last >= announce:
            limit = "as long as it takes" if bound is None else f"at most {bound:.0f} s"
            print(f"{campaign}: waiting for the machine: it is measuring {who}; one campaign measures at a "
                  f"time (lock {p}); waited {waited:.0f} s, waiting {limit} (Ctrl-C stops; "
                  "`perflab run --no-wait` stops at once)", file=out, flush=True)
            last = time.monotonic()
        time.sleep(POLL_SECONDS)
