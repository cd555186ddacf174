"""Helpers shared by the test modules (import as `from helpers import ...`)."""

from __future__ import annotations

import os

import pytest

from perflab import lab as lab_mod

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces, sshd)")


def leftovers(name: str) -> list[str]:
    """Namespaces, links, sshd processes, cgroups and loop devices of lab ``name`` still on the machine."""
    return lab_mod.traces(name)
