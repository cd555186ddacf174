"""Fixtures for the tool adapter tests: fixture files, and a host to run real tools on.

``bench_host`` runs commands with subprocess on this machine for now; the lead will
point it (and ``server_address``) at SSH hosts of the network-namespace lab, so live
tests go only through ``bench_host.run``.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

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
def bench_host() -> LocalHost:
    """The host live tests run tools on (this machine)."""
    return LocalHost()


@pytest.fixture(scope="session")
def server_address() -> str:
    """Address the host's servers listen on and clients connect to."""
    return "127.0.0.1"


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
