"""The ledger: every planned run's state (todo, running, done, failed) as an event log.

Events are appended to ``ledger.jsonl`` in the campaign's raw directory; the last event of
a run is its state. The raw store stays the authority on what is done (a sample directory
exists), so a resume after ``kill -9`` is the set difference planned - stored, and a run
left "running" by a crash simply runs again. Appends hold an exclusive lock on the file, so
the threads of parallel host groups (and other processes) never interleave their lines.

Each event is appended with a single ``write`` of the whole line, then ``fsync``; a write
the disk could not hold in full (ENOSPC, EDQUOT) is cut back, so the file only ever holds
whole lines and a full disk ends in one :class:`LedgerError` line. A torn last line (the
machine stopped mid-write, or a ledger written before this rule) is cut off by
:meth:`Ledger.repair` when a run resumes, and the runner records what was cut.

The ledger is a hash chain (event format 2): each event carries ``prev``, the SHA-256 of the
line before it (its bytes, newline included); the first chained event of a ledger carries
the SHA-256 of the campaign record (``campaign.json``'s bytes) followed by every ledger byte
before it (none in a new campaign; the unchained format-1 lines of a campaign resumed by this
perflab). A ``done`` or ``failed`` event also carries the SHA-256 of each file of the sample
it stored (``files``), which binds the files to the run id. So the chain's head (the SHA-256
of the last line, :func:`chain`) depends on the campaign record, every event and every
sample's bytes: an event edited, deleted, inserted or moved breaks a link that
:func:`chain` finds, and a consistent rewrite of the whole ledger changes the head, which
``perflab verify``, the paper and the review site print. A ledger with no chained event
(written before format 2) has no chain: its head is the SHA-256 of the whole file.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UserError
from .files import atomic_write
from .formats.findings import Finding
from .formats.records import LedgerEvent, RecordError, event_object, parse_event

#: The campaign record beside the ledger, whose bytes the chain starts from.
ANCHOR = "campaign.json"
#: Bytes read back at a time from the ledger's end to find its last line.
_TAIL = 4096


class LedgerError(UserError, RuntimeError):
    """An event could not be appended (the disk is full); nothing partial was written."""


class Ledger:
    """Run states of one campaign, persisted as JSON lines."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def _append(self, run_id: str, state: str, attempt: int, reason: str | None = None,
                files: dict[str, str] | None = None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            data = LedgerEvent(t=round(time.time(), 3), run_id=run_id, state=state, attempt=attempt, reason=reason,
                               files=files, prev=self._link(fd, size)).to_line().encode()
            try:
                written = os.write(fd, data)
                if written != len(data):  # a short write: the file system could hold only part of the line
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                os.fsync(fd)
            except OSError as exc:
                os.ftruncate(fd, size)
                if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                    raise
                raise LedgerError(f"{self.path}: the disk is full ({exc.strerror}) while recording run {run_id} "
                                  f"as {state}; the ledger keeps whole lines only: free space and rerun the same "
                                  "command to resume") from None
        finally:
            os.close(fd)

    def _link(self, fd: int, size: int) -> str:
        """The ``prev`` of an event appended to the ledger open on ``fd`` (``size`` bytes, locked).

        The SHA-256 of the last whole line when it is a chained event; else (a new ledger, or one
        of format 1 only) of the campaign record's bytes followed by the ledger's whole lines.
        """
        line, end = _last_line(fd, size)
        if _chained(line):
            return hashlib.sha256(line).hexdigest()
        h = hashlib.sha256(_anchor(self.path))
        h.update(os.pread(fd, end, 0))
        return h.hexdigest()

    def running(self, run_id: str, attempt: int) -> None:
        """Mark a run as started (attempt counts from 1)."""
        self._append(run_id, "running", attempt=attempt)

    def done(self, run_id: str, attempt: int, files: dict[str, str] | None = None) -> None:
        """Mark a run as stored successfully; ``files`` (path in the sample -> SHA-256) binds its files to it."""
        self._append(run_id, "done", attempt=attempt, files=files)

    def failed(self, run_id: str, attempt: int, reason: str, files: dict[str, str] | None = None) -> None:
        """Mark an attempt as failed, with the reason (and ``files``, as for :meth:`done`, when it was stored)."""
        self._append(run_id, "failed", attempt=attempt, reason=reason, files=files)

    def events(self) -> list[LedgerEvent]:
        """All events in order; a line cut short by a crash (the last one) is skipped."""
        if not self.path.exists():
            return []
        out = []
        lines = self.path.read_text(errors="replace").splitlines()
        for lineno, line in enumerate(lines, 1):
            try:
                out.append(parse_event(line, f"{self.path}:{lineno}"))
            except json.JSONDecodeError:
                if lineno < len(lines):
                    raise RecordError("not a JSON line (a torn write); `perflab run` on the campaign cuts torn lines "
                                      "off and records them, then rerun this", file=self.path, line=lineno) from None
        return out

    def repair(self) -> list[dict[str, object]]:
        """Cut torn lines out of the ledger; return what was cut (line number, bytes as text, event kept).

        A torn line is one that is not a JSON event: the end of the file after the last
        newline, or, in a ledger written before appends were whole-line, a fragment that a
        later event was appended to (the fragment is cut, the event kept). The file is
        rewritten atomically only when something was cut; nothing else changes.
        """
        if not self.path.exists():
            return []
        with open(self.path, "rb+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            data = fh.read()
            lines = data.split(b"\n")  # the last item is what follows the last newline (b"" when whole)
            kept, cut = [], []
            for lineno, line in enumerate(lines, 1):
                if not line:
                    continue
                start = _event_start(line)
                if start is None:
                    cut.append({"line": lineno, "cut": line.decode("utf-8", "replace"), "kept": None})
                    continue
                if start or lineno == len(lines):  # a fragment before the event, or an event without its newline
                    cut.append({"line": lineno, "cut": line[:start].decode("utf-8", "replace"),
                                "kept": line[start:].decode("utf-8", "replace")})
                kept.append(line[start:] + b"\n")
            if cut:
                atomic_write(self.path, b"".join(kept))
        return cut

    def states(self, planned: list[str]) -> dict[str, str]:
        """State of every planned run id (``todo`` when it has no event)."""
        state = dict.fromkeys(planned, "todo")
        for event in self.events():
            if event.run_id in state:
                state[event.run_id] = event.state
        return state

    def failures(self) -> dict[str, list[str]]:
        """Failure reasons per run id, oldest first."""
        out: dict[str, list[str]] = {}
        for event in self.events():
            if event.state == "failed":
                out.setdefault(event.run_id, []).append(event.reason or "")
        return out


def _event_start(line: bytes) -> int | None:
    """Where the ledger event in ``line`` starts (0: the whole line is one), or None when it holds none."""
    at = 0
    while at >= 0:
        try:
            parse_event(line[at:].decode(), "")
            return at
        except (ValueError, RecordError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            at = line.find(b'{"', at + 1)
    return None


def _last_line(fd: int, size: int) -> tuple[bytes, int]:
    """The last whole line of the file open on ``fd`` (newline included; b"" when none) and the offset where it
    ends; a torn line after the last newline is no event (:meth:`Ledger.repair` cuts it)."""
    start = size
    while start > 0:  # read back from the end until the last whole line's start is found
        start = max(0, start - _TAIL)
        tail = os.pread(fd, size - start, start)
        last = tail.rfind(b"\n")
        if last < 0:
            continue
        before = tail.rfind(b"\n", 0, last)
        if before >= 0 or start == 0:
            return tail[before + 1:last + 1], start + last + 1
    return b"", 0


def _anchor(path: Path) -> bytes:
    """The bytes the chain starts from: the campaign record beside the ledger (none without one)."""
    try:
        return (path.parent / ANCHOR).read_bytes()
    except FileNotFoundError:
        return b""


def _chained(line: bytes) -> bool:
    """True when ``line`` is an event of a format that carries the chain's link (format 2 on)."""
    data = event_object(line)
    return data is not None and isinstance(data.get("format"), int) and data["format"] >= 2


@dataclass(frozen=True)
class Chain:
    """What :func:`chain` found in a ledger: its head, whether it is chained, and the links that break."""

    #: The SHA-256 of the last event's line when the ledger is chained; else of the whole file (no chain).
    head: str
    #: True when the ledger's last event carries a link (format 2 on).
    chained: bool
    #: Whole lines (events) in the ledger.
    events: int
    #: The highest event format in the ledger.
    format: int
    #: Broken links, typed (:class:`perflab.formats.findings.Finding`).
    problems: list[Finding] = field(default_factory=list)

    def describe(self) -> str:
        """One line for ``perflab verify``: the head and what it is the hash of."""
        if self.chained:
            return f"chain head {self.head} ({self.events} events, format {self.format})"
        return f"no chain (format {self.format}): {self.events} events; SHA-256 of the ledger file {self.head}"


def chain(path: str | Path) -> Chain | None:
    """Check the hash chain of the ledger at ``path`` and return its head (None: no ledger).

    Each chained event's ``prev`` must be the link the writer computed (see the module's
    description); a break names the line whose link does not match (the line before it was
    edited, deleted, inserted or moved), and an unchained event after a chained one is a
    problem too (an event inserted without a link). A torn last line is left to
    :meth:`Ledger.events`.
    """
    path = Path(path)
    if not path.exists():
        return None
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        lines.pop()
    prefix = hashlib.sha256(_anchor(path))
    previous: bytes | None = None  # the line before, when it is chained
    problems: list[Finding] = []
    top = 1
    for lineno, line in enumerate(lines, 1):
        linked = _chained(line)
        if linked:
            event = event_object(line) or {}
            top = max(top, event["format"])
            expected = hashlib.sha256(previous).hexdigest() if previous is not None else prefix.hexdigest()
            if event.get("prev") != expected:
                before = "the line before" if previous is not None else "the campaign record and the lines before"
                problems.append(Finding(f"{path.name}:{lineno}", f"the hash chain breaks here (its link does not match "
                                        f"{before}): an event before it was edited, deleted, inserted or moved"))
        elif previous is not None:
            problems.append(Finding(f"{path.name}:{lineno}", "an event without a chain link after chained ones "
                                                             "(inserted?)"))
        if previous is None and not linked:
            prefix.update(line)
        previous = line if linked else None
    if previous is not None:
        return Chain(hashlib.sha256(previous).hexdigest(), True, len(lines), top, problems)
    return Chain(hashlib.sha256(data).hexdigest(), False, len(lines), top, problems)
