"""Progress display of a running campaign: one line per sample (done/total, failures, ETA)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


class Progress:
    """Line-based progress (done/total, failures, ETA), at most one line per ``interval`` seconds; thread-safe."""

    def __init__(self, total: int, done: int, *, stream: TextIO | None = None, interval: float = 1.0) -> None:
        self.total, self.done, self.failures = total, done, 0
        self.start_done, self.t0, self.last = done, time.monotonic(), 0.0
        self.stream, self.interval = stream or sys.stdout, interval
        self.lock = threading.Lock()

    def update(self, label: str, *, ok: bool, detail: str = "") -> None:
        """Count one finished attempt and print a line when due (always for the last one)."""
        with self.lock:
            self._update(label, ok=ok, detail=detail)

    def _update(self, label: str, *, ok: bool, detail: str) -> None:
        if ok:
            self.done += 1
        else:
            self.failures += 1
        now = time.monotonic()
        if now - self.last < self.interval and self.done < self.total and ok:
            return
        self.last = now
        rate = (self.done - self.start_done) / max(now - self.t0, 1e-9)
        eta = (self.total - self.done) / rate if rate > 0 else float("nan")
        width = len(str(self.total))
        status = "ok" if ok else "FAILED"
        print(f"[{self.done:>{width}}/{self.total}] {label} {status} {detail}  "
              f"(failures {self.failures}, ETA {format_duration(eta)})", file=self.stream, flush=True)

    def note(self, text: str) -> None:
        """Print a line that is not about one sample (fingerprint differences, cleanup)."""
        with self.lock:
            print(f"  {text}", file=self.stream, flush=True)


def format_duration(seconds: float) -> str:
    """Seconds as ``1h02m`` or ``3m05s`` (``?`` when unknown)."""
    if seconds != seconds:
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


