"""Per-command dispatch cost on a lab host: perflab's persistent shell vs one SSH exec per command.

Both go over the same Fabric connection; the exec path is what Fabric's ``Connection.run``
does (a new SSH session per command). A local fork/exec is the floor.
"""

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
            shell = per_call(lambda: host.run("true", timeout=10))
            conn = host.connection()
            exec_ = per_call(lambda: conn.run("true", hide=True, in_stream=False))
        local = per_call(lambda: subprocess.run(["true"], check=True))
    finally:
        lab.down("bench")
    print(f"local fork/exec               {local * 1e3:8.2f} ms per command")
    print(f"SSH exec per command (Fabric) {exec_ * 1e3:8.2f} ms per command  ({exec_ / local:.0f}x local)")
    print(f"perflab persistent shell      {shell * 1e3:8.2f} ms per command  ({shell / local:.0f}x local)")
    print(f"exec / persistent shell: {exec_ / shell:.0f}x; overhead on a 1 s sample: "
          f"{exec_ * 100:.1f} % vs {shell * 100:.2f} %")


if __name__ == "__main__":
    main()
