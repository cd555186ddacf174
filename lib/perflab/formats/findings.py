"""Verify findings: one file that does not verify, and how (``perflab verify`` prints them, ``--json`` writes them).

A finding is typed, ``path`` apart from ``problem``, from where it is found (the raw store's
checks, the ledger's chain, a refused record) to where it is printed, so no reader splits a
line of text to get them back. As text it is ``<path>: <problem>``; as JSON
``{"path": ..., "problem": ...}``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One file that does not verify (``path``, with ``:<line>`` when a line is named), and how."""

    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"

    def under(self, directory: str) -> Finding:
        """The same finding with its path taken inside ``directory``."""
        return Finding(f"{directory}/{self.path}", self.problem)

    def to_json(self) -> dict[str, str]:
        """The finding as ``perflab verify --json`` writes it."""
        return {"path": self.path, "problem": self.problem}
