"""Per-command dispatch cost: persistent SSH connection to a lab host vs local fork/exec."""

from __future__ import annotations

import subprocess
import time

from perflab import inventory, lab, remote

N = 50


def per_call(fn, n: int = N) -> float:
    """Mean seconds per call of ``fn`` over ``n`` calls."""
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def main() -> None:
    """Bring a one-host lab up, measure, and take it down."""
    created = lab.up("bench", 1)
    try:
        with remote.connect(inventory.load(created.inventory_path)) as hosts:
            host = hosts["h1"]
            host.run("true")
            ssh = per_call(lambda: host.run("true"))
            ssh_timeout = per_call(lambda: host.run("true", timeout=10))
        local = per_call(lambda: subprocess.run(["true"], check=True))
    finally:
        lab.down("bench")
    print(f"local fork/exec      {local * 1e3:8.2f} ms per command")
    print(f"SSH exec             {ssh * 1e3:8.2f} ms per command  ({ssh / local:.0f}x local)")
    print(f"SSH exec + timeout   {ssh_timeout * 1e3:8.2f} ms per command  ({ssh_timeout / local:.0f}x local)")
    print(f"overhead on a 1 s sample: {ssh_timeout * 100:.1f} %")


if __name__ == "__main__":
    main()
