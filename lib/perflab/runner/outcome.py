"""What a run of a campaign ends with: its summary, or the error that stopped it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError


class RunnerError(UserError, RuntimeError):
    """The campaign cannot run (a role's host is missing, a service does not start, ...)."""


@dataclass
class Summary:
    """What one invocation of :func:`run` did."""

    planned: int
    already_done: int
    done: int = 0
    failed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    raw_dir: Path | None = None

    @property
    def complete(self) -> bool:
        """True when every planned run has a stored sample."""
        return self.already_done + self.done == self.planned
