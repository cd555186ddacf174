"""Fixtures for the tool adapter tests: fixture files, and a host to run real tools on.

As root, ``bench_host`` is lab host h3, reached over real SSH (the session lab of
tests/conftest.py), and servers listen on its lab address; without root it runs commands
with subprocess on this machine. Live tests go only through ``bench_host.run``.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from perflab.hosts import remote

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@dataclass(frozen=True)
class Result:
    """What a command left behind: its output streams and exit code."""

    stdout: str
    stderr: str
    exit_code: int


class LocalHost:
    """Runs shell commands on this machine, each with a hard timeout."""

    def run(self, command: str, timeout: float) -> Result:
        """Run ``command`` with ``sh -c``; kill it (and fail the test) after ``timeout`` s."""
        try:
            done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"command timed out after {timeout} s: {command}\nstdout: {exc.stdout!r}")
        return Result(done.stdout, done.stderr, done.returncode)


@pytest.fixture(scope="session")
def bench_host(request):
    """The host live tests run tools on: lab host h3 over SSH as root, else this machine."""
    if os.geteuid() != 0:
        yield LocalHost()
        return
    entries = request.getfixturevalue("lab_inventory")
    with remote.connect(entries, ["h3"]) as hosts:
        yield hosts["h3"]


@pytest.fixture(scope="session")
def server_address(request) -> str:
    """Address the host's servers listen on and clients connect to."""
    return request.getfixturevalue("lab_inventory")["h3"].address if os.geteuid() == 0 else "127.0.0.1"


def fixture_text(relative: str) -> str:
    """The text of ``tests/fixtures/<relative>``."""
    return (FIXTURES / relative).read_text()


@pytest.fixture
def read_fixture() -> object:
    """``read_fixture("tool/file")`` returns a fixture file's text."""
    return fixture_text


@pytest.fixture
def fixture_path() -> object:
    """``fixture_path("tool/file")`` returns a fixture file's path."""
    return lambda relative: FIXTURES / relative
