"""Shared fixtures: a real network-namespace lab for end-to-end tests (root only)."""

from __future__ import annotations

import os

import pytest

from helpers import LAB_GROUP, leftovers
from perflab import inventory, tools
from perflab.hosts import lab as lab_mod, measurelock, remote


def pytest_configure(config):
    """A live campaign of the suite waits 120 s for another campaign measuring on the machine, then skips; in
    two processes (pytest-xdist ``-n 2``, set here before the processes start, which inherit it) 600 s, since
    a campaign of the other process may hold the machine's lock for minutes (the Ceph lab, a pipeline run)."""
    parallel = bool(getattr(config.option, "numprocesses", None)) or hasattr(config, "workerinput")
    os.environ.setdefault(measurelock.WAIT_ENV, "600" if parallel else "120")


#: Fixtures that bring up or reach the session's lab (one per test process, named after it).
LAB_FIXTURES = frozenset({"lab", "lab_inventory", "hosts"})


# before pytest-xdist's own hook, which reads the marks to name each test after its group (``--dist loadgroup``)
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """In two processes (``--dist loadgroup``), every test of a module with a lab test, or reaching the session
    lab, runs in the same process as the rest of its module, one after the other: a module's lab (and what its
    module fixtures computed) is brought up once. Two modules' labs may be up at once, each under its own
    name and addresses; their campaigns take the machine's measurement lock in turn."""
    def module(item):
        return getattr(getattr(item, "module", None), "__name__", None)

    lab_modules = {module(item) for item in items
                   if item.get_closest_marker("lab") or LAB_FIXTURES & set(getattr(item, "fixturenames", ()))}
    for item in items:
        if (name := module(item)) in lab_modules - {None}:
            item.add_marker(pytest.mark.xdist_group(f"{LAB_GROUP}{name}"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test whose campaign could not take the machine's measurement lock in time is skipped, with the reason."""
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance(measurelock.MachineBusy):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {call.excinfo.value}")


@pytest.fixture
def probe(monkeypatch):
    """Register the test-only ``probe`` tool (helpers.Probe: the sample is a shell command)."""
    monkeypatch.setitem(tools.REGISTRY, "probe", "helpers:Probe")


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
