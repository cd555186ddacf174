"""The ledger: every planned run's state (todo, running, done, failed) as an event log.

Events are appended to ``ledger.jsonl`` in the campaign's raw directory; the last event of
a run is its state. The raw store stays the authority on what is done (a sample directory
exists), so a resume after ``kill -9`` is the set difference planned - stored, and a run
left "running" by a crash simply runs again. Appends hold an exclusive lock on the file, so
the threads of parallel host groups (and other processes) never interleave their lines.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from .records import LedgerEvent, RecordError, parse_event

class Ledger:
    """Run states of one campaign, persisted as JSON lines."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def _append(self, run_id: str, state: str, attempt: int, reason: str | None = None) -> None:
        event = LedgerEvent(t=round(time.time(), 3), run_id=run_id, state=state, attempt=attempt, reason=reason)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write(event.to_line())
            fh.flush()
            os.fsync(fh.fileno())

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
        lines = self.path.read_text().splitlines()
        for lineno, line in enumerate(lines, 1):
            try:
                out.append(parse_event(line, f"{self.path}:{lineno}"))
            except json.JSONDecodeError:
                if lineno < len(lines):
                    raise RecordError(f"{self.path}:{lineno}: not a JSON line; the ledger is append-only, "
                                      "restore the original file") from None
        return out

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
