"""Shared fixtures: a real network-namespace lab for end-to-end tests (root only)."""

from __future__ import annotations

import os
import subprocess

import pytest

from perflab import inventory, lab as lab_mod, remote

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


@pytest.fixture(scope="session")
def lab():
    """A three-host lab named after this test process, removed (and checked gone) at the end."""
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    name = f"t{os.getpid() % 100000}"
    created = lab_mod.up(name, 3)
    try:
        yield created
    finally:
        lab_mod.down(name)
        assert leftovers(name) == [], f"lab {name} left things behind"


@pytest.fixture(scope="session")
def lab_inventory(lab):
    """The lab's inventory entries (h1..h3)."""
    return inventory.load(lab.inventory_path)


@pytest.fixture(scope="session")
def hosts(lab_inventory):
    """Connected hosts of the session lab (h1..h3), closed at the end."""
    with remote.connect(lab_inventory) as connected:
        yield connected
