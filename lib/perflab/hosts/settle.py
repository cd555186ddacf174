"""Settle conditions: wait until hosts are quiet enough before a sample starts.

:func:`wait` polls ``/proc/loadavg`` on every named host (one command per host per
poll) until each host's 1-minute load average is at most ``max_load1`` at the same
poll, or the timeout passes; it never loops forever. Seed 000 waited for a load of
0.00 before each run; ``max_load1=0.0`` reproduces that. The 1-minute average decays
with a time constant of one minute, so after a busy period expect tens of seconds.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..errors import UserError
from .remote import Host

#: Seconds a single ``/proc/loadavg`` read may take on a host before it counts as failed.
READ_TIMEOUT = 10


class SettleError(UserError, RuntimeError):
    """A host's load could not be read, or :func:`wait` got arguments that cannot end well."""


@dataclass(frozen=True)
class SettleResult:
    """The outcome of :func:`wait`: whether all hosts settled, after how long, and their last loads."""

    satisfied: bool
    waited: float
    loads: Mapping[str, float]
    polls: int
    max_load1: float

    def __str__(self) -> str:
        loads = ", ".join(f"{h}={v:.2f}" for h, v in self.loads.items())
        verdict = "settled" if self.satisfied else "did not settle"
        return f"{verdict} after {self.waited:.1f} s and {self.polls} poll(s) (1-min load <= {self.max_load1:g}): {loads}"


def read_load1(host: Host) -> float:
    """The 1-minute load average of ``host``, from ``/proc/loadavg``."""
    res = host.run("cat /proc/loadavg", timeout=READ_TIMEOUT)
    return parse_loadavg(res.stdout, source=f"host {host.name}: /proc/loadavg (exit {res.exit_code})")


def parse_loadavg(text: str, *, source: str = "/proc/loadavg") -> float:
    """The first field of ``/proc/loadavg`` text (e.g. ``"0.19 0.54 0.35 2/85 8453"``)."""
    words = text.split()
    try:
        return float(words[0])
    except (IndexError, ValueError):
        raise SettleError(f"{source}: expected 'load1 load5 load15 running/total lastpid'; "
                          f"found {text.strip()[:80]!r}. Is /proc mounted on the host?") from None


def wait(hosts: Sequence[Host], *, max_load1: float, timeout: float, poll: float = 1.0) -> SettleResult:
    """Poll until every host's 1-minute load is at most ``max_load1``, for at most ``timeout`` seconds.

    Checks once immediately and once more at the deadline at the latest; returns
    ``satisfied=False`` rather than raising when the hosts did not settle in time.
    """
    if not (math.isfinite(timeout) and timeout >= 0):
        raise SettleError(f"settle timeout: expected a finite number of seconds >= 0; found {timeout!r}")
    if not (math.isfinite(poll) and poll > 0):
        raise SettleError(f"settle poll interval: expected a finite number of seconds > 0; found {poll!r}")
    if not hosts:
        raise SettleError("settle: expected at least one host to watch; found none")
    start = time.monotonic()
    deadline = start + timeout
    polls = 0
    while True:
        round_start = time.monotonic()
        loads = {host.name: read_load1(host) for host in hosts}
        polls += 1
        now = time.monotonic()
        satisfied = all(load <= max_load1 for load in loads.values())
        if satisfied or now >= deadline:
            return SettleResult(satisfied, now - start, loads, polls, max_load1)
        time.sleep(max(0.0, min(round_start + poll, deadline) - now))
