"""How close `perflab plan`'s duration estimate is to the real run, for every shipped campaign.

Each campaign that runs on the flat lab (the studies' campaigns without an inventory of their
own, and ``campaigns/examples/``) runs its first few samples on a fresh lab; the estimate for
those samples is the plan's per-sample share of its estimate. The ratio estimate/actual must
be within 1/1.5 and 1.5. A campaign with a settle condition is left out (its waiting time is
the machine's, not the plan's), and so is one the flat lab cannot serve (hosts, links, or a step that fails there: said in the row).
"""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from measure import ROOT, Result

TARGET = 1.5
#: Samples run per campaign (the first ones of its schedule: warm-ups included).
SAMPLES = 6


def _campaigns() -> list[Path]:
    from perflab import study

    files = [ROOT / c.file for s in study.discover(ROOT) for c in s.campaigns if c.inventory is None]
    return files + sorted((ROOT / "campaigns/examples").glob("*.yaml"))


def results() -> list[Result]:
    """Estimate/actual ratio per campaign, measured on a lab of 3 hosts."""
    from perflab import campaign as campaign_mod, inventory, runner
    from perflab.hosts import lab
    from perflab.errors import UserError

    name = f"be{os.getpid() % 10000}"
    out = []
    created = lab.up(name, 3)
    try:
        entries = inventory.load(created.inventory_path)
        for path in _campaigns():
            c = campaign_mod.load(path)
            if c.settle is not None or c.links or set(c.involved()) - set(entries):
                out.append(Result(f"estimate {c.name}", "not measured", f"<= {TARGET}x", None,
                                  "settle, links or hosts beyond a flat 3-host lab"))
                continue
            info = runner.plan(c)
            k = min(SAMPLES, info["samples"])
            estimate = info["estimated_seconds"] * k / info["samples"]
            with TemporaryDirectory() as tmp:
                start = time.perf_counter()
                try:
                    runner.run(c, entries, tmp, stream=io.StringIO(), limit=k)
                except UserError as exc:  # e.g. a setup step needing its own lab's devices
                    out.append(Result(f"estimate {c.name}", "not measured", f"<= {TARGET}x", None,
                                      "the flat lab cannot run it: "
                                      + str(exc).splitlines()[0].replace(f"{ROOT}/", "")[:160]))
                    continue
                actual = time.perf_counter() - start
            ratio = estimate / actual
            out.append(Result(f"estimate {c.name} ({k} samples)", f"{ratio:.2f}x ({estimate:.1f} s / {actual:.1f} s)",
                              f"{1 / TARGET:.2f}-{TARGET}x", 1 / TARGET <= ratio <= TARGET))
    finally:
        lab.down(name)
    return out


if __name__ == "__main__":
    for result in results():
        print(result.line())
