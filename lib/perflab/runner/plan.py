"""Planning: what a campaign will run, for how long, and at what overhead (``perflab plan``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from .. import tools
from ..hosts import contention
from ..campaign import design
from ..campaign import Campaign


def sample_timeout(spec: Campaign, params: Mapping[str, Any]) -> float:
    """Seconds a sample may take: the campaign's ``timeout`` or twice the expected time plus 15 s."""
    return spec.timeout or 2 * tools.get(spec.tool).expected_duration(params) + 15


#: Seconds the monitors add per sample and host (the counters before the measured commands, the counters and
#: sadf's cut of the recording after them: 1 and 9 ms on a lab host of this 2-core machine, 2026-11-27).
MONITOR_SECONDS = 0.010
#: Seconds a recording of the monitors adds per host (its start and its stop, a round trip each; same machine).
RECORDING_SECONDS = 0.03
#: Seconds after which the runner renews a host's recording before the next sample: sadf's cut for a sample reads
#: the recording from its start, about 0.05 ms per second recorded on a lab host (3 ms at 60 s, 30 ms at 600 s),
#: where a renewal (a stop and a start) takes about 30 ms.
RENEW_SECONDS = 60.0
#: Seconds a full fingerprint takes per host (one round trip probing the campaign's tools; same machine).
FINGERPRINT_SECONDS = 0.13
#: Seconds a fingerprint whose digest held takes per host (one round trip, no tool run; same machine).
DIGEST_SECONDS = 0.022
#: Seconds a run spends besides its samples: connecting to every host (an SSH handshake and the agent's start), the
#: preflight check, the first reap, and the teardown (0.25-0.3 s on a one-host lab of this 2-core machine once the
#: lab's shells stopped reading the account's ~/.bashrc, 2026-11-27: benchmarks/README.md's intercept).
STARTUP_SECONDS = 0.5
#: Seconds the runner adds per sample besides monitors and fingerprints: the command's round trip and cgroup, the
#: contention record and the raw store's writes (about 14 ms once a run has started on a lab host of this 2-core
#: machine, 2026-11-27: benchmarks/README.md).
SAMPLE_SECONDS = 0.015
#: Seconds one settle poll of one host takes when the hosts are already quiet.
SETTLE_POLL_SECONDS = 0.01


def fingerprint_block(spec: Campaign, run_: design.Run) -> int:
    """The block a run's fingerprints belong to: its RMIT block, or its cell under a sequential design.

    A sequential schedule gives every sample its own block; fingerprinting around each
    would double the round trips, so there a block of fingerprints is a cell's run of samples.
    """
    return run_.cell.index if spec.design == "sequential" else run_.block


def plan(spec: Campaign) -> dict[str, Any]:
    """The schedule summary ``perflab plan`` prints: what the campaign plans (:meth:`Campaign.planned`),
    blocks, hosts, estimated duration and overheads.

    ``estimated_seconds`` is the tools' expected measurement time plus ``overhead_seconds``
    (the runner's own cost per sample, monitors, fingerprints and one settle poll per sample); ``settle_max_seconds`` is the
    most the settle condition can add when the hosts never settle. With groups, samples
    count every group's runs and the times are divided by the pool size ``parallel_groups``.
    """
    planned = spec.planned()
    if spec.seed is None:  # the order is drawn at run time; any seed gives the same counts and estimates
        spec = replace(spec, seed=0)
    runs = design.schedule(spec)
    parts = [spec.for_group(k) for k in range(len(spec.groups))] if spec.groups else [spec]
    estimates = [_estimate(part, [r for r in runs if r.group == part.group]) for part in parts]
    measure, overhead = sum(m for m, _ in estimates), sum(o for _, o in estimates)
    settle_max = len(runs) * spec.settle.timeout if spec.settle else 0.0
    grouped = {}
    if spec.groups:
        measure, overhead, settle_max = (x / spec.parallel_groups for x in (measure, overhead, settle_max))
        grouped = {"groups": [dict(g) for g in spec.groups], "parallel_groups": spec.parallel_groups}
    hosts = spec.involved()
    blocks = len({fingerprint_block(spec, r) for r in runs})
    return {**planned, "blocks": blocks, "hosts": hosts,
            "measure_seconds": round(measure, 1), "overhead_seconds": round(overhead, 1),
            "estimated_seconds": round(measure + overhead, 1),
            "settle_max_seconds": round(settle_max, 1),
            "settle": None if spec.settle is None else vars(spec.settle) | {"hosts": list(spec.settle.hosts)},
            "setup": [vars(st) for st in spec.setup], "teardown": [vars(st) for st in spec.teardown],
            "neighbours": [{"on": n.on, "run": n.run, "cells": {k: list(v) for k, v in n.cells.items()}}
                           for n in spec.neighbours],
            "services": [{"name": d.name, "on": d.on, "start": d.start, "scope": d.scope, "order": d.order,
                          "cells": {k: list(v) for k, v in d.cells.items()}} for d in spec.services],
            "concurrent": {role: [s.host for s in seats] for role, seats in spec.concurrent.items()},
            "phases": [p.label for p in spec.phases],
            "monitors": spec.monitors, "fingerprints": spec.fingerprints, **grouped, "runs": runs}


def _estimate(spec: Campaign, runs: list[design.Run]) -> tuple[float, float]:
    """Expected measurement seconds and overhead seconds of ``runs`` on the hosts of ``spec`` (no groups)."""
    tool = tools.get(spec.tool)
    measure = sum(tool.expected_duration(params) for r in runs for _, params in spec.phase_params(r.cell.levels))
    hosts = spec.involved()
    blocks = len({fingerprint_block(spec, r) for r in runs})
    overhead = STARTUP_SECONDS + len(runs) * SAMPLE_SECONDS
    if spec.monitors:  # reads per sample; a recording per host, renewed every RENEW_SECONDS of measurement
        overhead += len(hosts) * (len(runs) * MONITOR_SECONDS + (1 + measure // RENEW_SECONDS) * RECORDING_SECONDS)
    if spec.fingerprints and blocks:  # a full probe per host first, then digests while the facts hold
        # without a quiet gate a block's before-fingerprints are the previous block's after-fingerprints
        digests = 2 * blocks - 1 if contention.quiet_of(spec.doc, spec.source) is not None else blocks
        overhead += len(hosts) * (FINGERPRINT_SECONDS + digests * DIGEST_SECONDS)
    if spec.settle:
        overhead += len(runs) * len(spec.settle.hosts) * SETTLE_POLL_SECONDS
    return measure, overhead

