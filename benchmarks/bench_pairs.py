"""Past one pair of hosts: a campaign over 8 lab hosts as 4 independent client/server pairs, in the bounded
group pool, against the same campaign on one pair: wall time of 4 pairs / 1 pair, interleaved rounds.

Both campaigns run the same schedule per pair (ping, 3 requests 0.2 s apart per sample); the 4-pair
one runs 4 times the samples. Ideal is 1.0x (the pairs share nothing); the target allows the harness
50 % for what the groups do share: this machine's cores and the Python process that drives every SSH
connection. Measured with monitors and fingerprints at their defaults (the target), and without them
(what the pool itself costs).
"""

from __future__ import annotations

import io
import os
import statistics
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from measure import Result, check, ratios, spread

PAIRS = 4
ROUNDS = 3
TARGET = 1.5
CAMPAIGN = """\
campaign: pairs
benchmark: {tool: ping, params: {count: 3, interval: 0.2}}
%s
factors: {size: [56, 1000]}
repetitions: 3
warmups: 0
seed: 14
monitors: %s
fingerprints: %s
"""


def _campaigns(tmp: Path, extras: bool) -> dict[int, object]:
    """The campaign on 1 pair and on :data:`PAIRS` pairs (``parallel_groups`` = every pair); ``extras``:
    monitors and fingerprints on."""
    from perflab import campaign as campaign_mod

    out = {}
    for pairs in (1, PAIRS):
        groups = ", ".join(f"{{client: h{2 * k + 1}, server: h{2 * k + 2}}}" for k in range(pairs))
        path = tmp / f"pairs{pairs}-{extras}.yaml"
        path.write_text(CAMPAIGN % (f"groups: [{groups}]\nparallel_groups: {pairs}", extras, extras))
        out[pairs] = campaign_mod.load(path)
    return out


def _lab_cpu(name: str) -> float:
    """CPU seconds used so far by every process of lab ``name``'s hosts (their cgroups; 0 without cgroups)."""
    from perflab.hosts import lab

    roots = lab.cgroup_hierarchies()
    if "cpuacct" in roots:
        path = roots["cpuacct"] / lab.CGROUP_PARENT / name / "cpuacct.usage"
        return int(path.read_text()) / 1e9 if path.exists() else 0.0
    path = roots.get("unified", Path("/nonexistent")) / lab.CGROUP_PARENT / name / "cpu.stat"
    stats = dict(line.split() for line in path.read_text().splitlines()) if path.exists() else {}
    return int(stats.get("usage_usec", 0)) / 1e6


def results(rounds: int = ROUNDS) -> list[Result]:
    """Run both campaigns ``rounds`` times, alternating which goes first, on a lab of ``2 * PAIRS`` hosts,
    with monitors and fingerprints on and off."""
    from perflab import inventory, runner
    from perflab.hosts import lab

    name = f"bp{os.getpid() % 10000}"
    created = lab.up(name, 2 * PAIRS)
    out = []
    try:
        entries = inventory.load(created.inventory_path)
        for extras in (True, False):
            times: dict[int, list[float]] = {1: [], PAIRS: []}
            cpu: dict[int, list[float]] = {1: [], PAIRS: []}  # of this process: the one driving every pair
            hosts_cpu: dict[int, list[float]] = {1: [], PAIRS: []}  # of the lab hosts' processes (sshd, shells, tool)
            samples: dict[int, int] = {}
            with TemporaryDirectory() as tmp:
                campaigns = _campaigns(Path(tmp), extras)
                for i in range(rounds):
                    for pairs in ((1, PAIRS) if i % 2 == 0 else (PAIRS, 1)):
                        start, start_cpu, start_hosts = time.perf_counter(), time.process_time(), _lab_cpu(name)
                        summary = runner.run(campaigns[pairs], entries, Path(tmp) / f"raw{i}-{pairs}",
                                             stream=io.StringIO())
                        times[pairs].append(time.perf_counter() - start)
                        cpu[pairs].append(time.process_time() - start_cpu)
                        hosts_cpu[pairs].append(_lab_cpu(name) - start_hosts)
                        samples[pairs] = summary.done
            ratio = ratios(times[PAIRS], times[1])
            met, missed = check(statistics.median(ratio), TARGET)
            shown = "defaults" if extras else "monitors and fingerprints off"
            out.append(Result(f"{PAIRS} client/server pairs in parallel / 1 pair (8 lab hosts, {shown})",
                              spread(ratio, "x"), f"<= {TARGET}x", met if extras else None,
                              f"{missed if extras else ''}{samples[PAIRS]} samples in {spread(times[PAIRS])} vs "
                              f"{samples[1]} in {spread(times[1])}; {statistics.median(ratio) / PAIRS:.2f} of one "
                              f"pair's time per sample; ideal 1.0x; CPU of the driving process "
                              f"{spread(cpu[PAIRS])} vs {spread(cpu[1])}, of the lab hosts "
                              f"{spread(hosts_cpu[PAIRS])} vs {spread(hosts_cpu[1])}"))
    finally:
        lab.down(name)
    return out


if __name__ == "__main__":
    for result in results():
        print(result.line())
