"""Per-command dispatch cost on a lab host: perflab's persistent shell vs one SSH exec per command.

Both go over the same Fabric connection; the exec path is what Fabric's ``Connection.run``
does (a new SSH session per command). A local fork/exec is the floor.
"""

from __future__ import annotations

import subprocess
import time

from measure import Result

from perflab import inventory
from perflab.hosts import lab, remote

N = 50


def per_call(fn, n: int = N) -> float:
    """Mean seconds per call of ``fn`` over ``n`` calls."""
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def results() -> list[Result]:
    """Bring a one-host lab up, measure the three paths, take it down; one :class:`Result` each (no target)."""
    created = lab.up("bench", 1)
    try:
        with remote.connect(inventory.load(created.inventory_path)) as hosts:
            host = hosts["h1"]
            host.run("true")
            shell = per_call(lambda: host.run("true", timeout=10))
            conn = host.connection()
            exec_ = per_call(lambda: conn.run("true", hide=True, in_stream=False))
        local = per_call(lambda: subprocess.run(["true"], check=True))
    finally:
        lab.down("bench")
    return [
        Result("remote command via perflab's persistent shell", f"{shell * 1e3:.2f} ms", "(none)", None,
               f"{shell / local:.0f}x a local fork/exec ({local * 1e3:.2f} ms); mean of {N}"),
        Result("remote command via one SSH exec (Fabric's run)", f"{exec_ * 1e3:.2f} ms", "(none)", None,
               f"{exec_ / shell:.0f}x the persistent shell"),
    ]


def main() -> None:
    """Print each dispatch cost."""
    for result in results():
        print(result.line())


if __name__ == "__main__":
    main()
