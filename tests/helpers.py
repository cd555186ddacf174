"""Helpers shared by the test modules (import as `from helpers import ...`)."""

from __future__ import annotations

import os
import subprocess

import pytest

from perflab import lab as lab_mod

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces, sshd)")


def leftovers(name: str) -> list[str]:
    """Namespaces, links and sshd processes of lab ``name`` still present on the machine."""
    layout = lab_mod.layout(name, 8)
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    procs = subprocess.run(["pgrep", "-af", f"{lab_mod.STATE_ROOT}/{name}/"], capture_output=True, text=True).stdout
    found = [line for line in ns.splitlines() if line.startswith(f"perflab-{name}-")]
    found += [h.veth for h in layout.hosts if f" {h.veth}@" in links or f" {h.veth}:" in links]
    found += [layout.bridge] if f" {layout.bridge}:" in links else []
    found += procs.splitlines()
    return found
