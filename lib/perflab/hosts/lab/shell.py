"""Commands on this machine for the lab: running a command, links and namespaces, killing processes."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from .model import LabError


def sh(*argv: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
    """Run a command on this machine; :class:`LabError` with its stderr when it fails and ``check`` is set."""
    proc = subprocess.run(argv, capture_output=True, text=True, input=input)
    if check and proc.returncode != 0:
        raise LabError(f"`{' '.join(argv)}` failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def link_exists(dev: str) -> bool:
    """True when network interface ``dev`` exists in this machine's root namespace."""
    return sh("ip", "link", "show", "dev", dev, check=False).returncode == 0


def netns_list() -> set[str]:
    """The names of the network namespaces on this machine."""
    out = sh("ip", "-j", "netns", "list", check=False).stdout.strip()
    return {n["name"] for n in json.loads(out)} if out else set()


def kill(pids: set[str]) -> None:
    """SIGKILL ``pids`` and wait until they have exited."""
    for p in pids:
        try:
            os.kill(int(p), 9)
        except (ProcessLookupError, ValueError):
            pass
    _wait_gone(pids)


def _dead(pid: str) -> bool:
    """True once ``pid`` has exited: gone, or a zombie (its namespaces and cgroups are already released)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] in "ZX"
    except (OSError, IndexError):
        return True


def _wait_gone(pids: set[str], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    for pid in pids:
        while not _dead(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
