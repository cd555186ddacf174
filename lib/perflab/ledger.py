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
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from pathlib import Path

from .errors import UserError
from .files import atomic_write
from .records import LedgerEvent, RecordError, parse_event

class LedgerError(UserError, RuntimeError):
    """An event could not be appended (the disk is full); nothing partial was written."""


class Ledger:
    """Run states of one campaign, persisted as JSON lines."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def _append(self, run_id: str, state: str, attempt: int, reason: str | None = None) -> None:
        data = LedgerEvent(t=round(time.time(), 3), run_id=run_id, state=state, attempt=attempt,
                           reason=reason).to_line().encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
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

    def running(self, run_id: str, attempt: int) -> None:
        """Mark a run as started (attempt counts from 1)."""
        self._append(run_id, "running", attempt=attempt)

    def done(self, run_id: str, attempt: int) -> None:
        """Mark a run as stored successfully."""
        self._append(run_id, "done", attempt=attempt)

    def failed(self, run_id: str, attempt: int, reason: str) -> None:
        """Mark an attempt as failed, with the reason."""
        self._append(run_id, "failed", attempt=attempt, reason=reason)

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
                    raise RecordError(f"{self.path}:{lineno}: not a JSON line (a torn write); `perflab run` on the "
                                      "campaign cuts torn lines off and records them, then rerun this") from None
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
