"""Stopping a run on a signal: Ctrl-C (SIGINT), SIGTERM (a scheduler, ``kill``) and SIGHUP (a closed terminal).

The first signal raises :class:`Stopped` in the main thread, so the run stops the way an
error stops it: the cell's teardown runs, neighbours, services and monitors are stopped, the
campaign's processes on the hosts are killed and recorded, and one line says how to resume.
Later signals while that happens are only noted: cleaning the hosts is never cut short (each
of its steps has a time limit), so what the last line says was stopped was stopped.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

#: The signals a run stops on.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: The signals received within the innermost :func:`on_signals` block, and whether :func:`check` raised for them.
_received: list[int] = []
_checked: list[bool] = [False]


class Stopped(KeyboardInterrupt):
    """The run was asked to stop by ``signum``; ``str()`` is the one line to print once the hosts are clean."""

    def __init__(self, signum: int, message: str = "") -> None:
        super().__init__(message or f"stopped by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """The exit status a shell expects of a command ended by the signal (128 + its number)."""
        return 128 + self.signum


@contextmanager
def on_signals() -> Iterator[None]:
    """Within the block, the first of :data:`SIGNALS` raises :class:`Stopped`; later ones are noted on stderr.

    Outside the main thread (where Python delivers signals) nothing is installed.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = _received
    received.clear()
    _checked[0] = False

    def handle(signum: int, frame: object) -> None:
        if signum == signal.SIGHUP:
            _detach_terminal()
        if received:
            received.append(signum)
            print(f"perflab: {signal.Signals(signum).name} again: still stopping the campaign's processes on the "
                  "hosts (every step has a time limit); then it ends", file=sys.stderr, flush=True)
            return
        received.append(signum)
        raise Stopped(signum)

    old = {s: signal.signal(s, handle) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        received.clear()


def check() -> None:
    """Raise :class:`Stopped` once when a signal came but its exception was lost where it landed.

    Python ignores an exception raised in a finalizer (a temporary file's ``__del__``, say); the runner calls this
    before each sample so that such a signal still stops the run there. Outside the main thread it does nothing.
    """
    if _received and not _checked[0] and threading.current_thread() is threading.main_thread():
        _checked[0] = True
        raise Stopped(_received[0])


def _detach_terminal() -> None:
    """Point stdout and stderr at /dev/null when they are the terminal that went away (SIGHUP).

    Otherwise writing a progress line would fail and cut the cleanup short.
    """
    null = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        try:
            if os.isatty(fd):
                os.dup2(null, fd)
        except OSError:
            os.dup2(null, fd)
    os.close(null)
