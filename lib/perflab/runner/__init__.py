"""The runner: executes a campaign's schedule on its hosts and stores every sample raw.

One Fabric connection per host for the whole campaign; services (e.g. an iperf3 server)
start once for the cells that share them and stop at the end, also on failure or Ctrl-C;
each sample runs under a remote-side timeout; its stdout, stderr and metadata go to the
raw store atomically; the ledger records every state change, so a rerun resumes exactly
where the last one stopped.

Around the samples, in this order: when the schedule enters a new block, every involved
host is fingerprinted (``blocks/<b>/fingerprint-before-<host>.json``: a full probe the first time a
run sees the host, then a digest of what can change, and a full probe only when the digest moved;
see :mod:`perflab.hosts.fingerprint`), and sysstat records on every involved host (monitors on; started
before the first sample, renewed before a sample once a minute old, see :mod:`perflab.hosts.monitors`);
when it enters a new cell, the previous cell's teardown and the new cell's setup steps run; the
cell's neighbour loads start (and loads of other cells stop); services start; the settle
condition is waited for; then the measured commands run between two reads of every host's
counters and recording, whose files go into the sample's ``monitors/<host>.tar.xz``. When a
block ends, the hosts are fingerprinted again and the differences (before/after per host,
between hosts, since the previous block) are printed and stored in
``blocks/<b>/differences.json``. Without a quiet gate (the campaign's ``quiet``, see
:mod:`perflab.hosts.contention`), nothing runs on the hosts between that and the next block's
fingerprints, so a host is not probed again there: its fingerprint before the next block is
the one after this block, in its own file naming that probe (``probe_from``).
Teardown, neighbours, services and monitors are stopped whatever happens (failure, lost host, Ctrl-C).

A campaign with ``groups`` runs the whole schedule once per group, each group on its own
hosts with its own connections, services, neighbours, monitors and fingerprints, in a
thread pool of ``parallel_groups`` workers. A group whose host goes away stops (its
processes stopped) while the others run on; the run then raises :class:`RunnerError`
naming it, and a rerun resumes.

The package is split by job: :mod:`.plan` (schedule summary and time estimates),
:mod:`.progress` (progress lines), :mod:`.session` (services, neighbour loads, cell steps
and block fingerprints on the connected hosts), :mod:`.samples` (the sample loop) and
:mod:`.pool` (parallel host groups); this module holds the entry point :func:`run`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import platform
import secrets
import sys
from pathlib import Path
from typing import Callable, Mapping, TextIO

from .. import __version__, questions
from ..hosts import contention, measurelock
from ..campaign import design
from ..formats import records
from ..inventory import HostEntry
from ..campaign import Campaign
from ..store import RawStore
from .plan import (DIGEST_SECONDS, FINGERPRINT_SECONDS, MONITOR_SECONDS, RECORDING_SECONDS, RENEW_SECONDS,
                   SAMPLE_SECONDS, SETTLE_POLL_SECONDS, STARTUP_SECONDS, plan, sample_timeout)
from . import leftovers
from .outcome import RunnerError, Summary
from .progress import Progress, format_duration
from .stopping import Stopped, on_signals

__all__ = ["DIGEST_SECONDS", "FINGERPRINT_SECONDS", "MONITOR_SECONDS", "RECORDING_SECONDS", "RENEW_SECONDS",
           "SAMPLE_SECONDS", "SETTLE_POLL_SECONDS", "STARTUP_SECONDS", "RunnerError", "Stopped", "Summary", "format_duration", "plan", "run", "sample_timeout"]


def run(spec: Campaign, entries: Mapping[str, HostEntry], raw_root: str | Path, *,
        stream: TextIO | None = None, limit: int | None = None,
        on_sample: Callable[[design.Run], None] | None = None, wait: float | None = None) -> Summary:
    """Run (or resume) ``spec`` on the inventory ``entries``, storing raw data under ``raw_root``.

    ``limit`` stops after that many samples (for pilots and tests; with groups, per group);
    ``on_sample`` is called after each stored sample (with groups, from the groups' threads).
    A host that goes away is reconnected under ``spec.reconnect`` (the gap is stored under
    ``gaps/`` and the sample runs again as a new attempt); when that fails, the failed attempt
    is kept and :class:`RunnerError` is raised in one line after everything started was
    stopped (with groups, after the other groups finished); rerunning resumes. Ctrl-C,
    SIGTERM and SIGHUP stop the run the same way and raise :class:`Stopped`, whose message
    says what was stopped, what could not be, and how to resume. Samples are measured under
    the machine's measurement lock (:mod:`perflab.hosts.measurelock`; ``wait`` bounds the wait for
    it in seconds, 0: stop at once with :class:`~perflab.hosts.measurelock.MachineBusy`).
    """
    names = spec.involved()
    missing = [name for name in names if name not in entries]
    if missing:
        raise RunnerError(f"{spec.source}: hosts {', '.join(missing)} are not in the inventory "
                          f"(it has {', '.join(sorted(entries))})")
    store = RawStore(raw_root, spec.name)
    with on_signals(), store.lock(stream or sys.stdout), contextlib.ExitStack() as measuring:
        spec = _seeded(spec, store, stream or sys.stdout)
        return _run(spec, entries, design.schedule(spec), store, stream=stream, limit=limit, on_sample=on_sample,
                    measuring=(measuring, wait))


def _emulated(entry: HostEntry) -> bool:
    """True for a virtual lab host running under emulation (TCG): its numbers measure the emulator."""
    return bool(entry.vm and entry.vm.get("emulated"))


def _seeded(spec: Campaign, store: RawStore, out: TextIO) -> Campaign:
    """``spec`` with its RMIT seed: its own, the one an earlier run of it drew, or a new one (printed)."""
    if spec.seed is not None:
        return spec
    path = store.dir / "campaign.json"
    if path.exists():
        seed = records.read_campaign(path).spec.get("seed")
        print(f"{spec.name}: using the seed {seed} drawn by its first run (stored in {path})", file=out, flush=True)
    else:
        seed = secrets.randbelow(2**31)
        print(f"{spec.name}: drew the RMIT seed {seed}; it is stored in {path}. Write `seed: {seed}` in "
              f"{spec.source} to fix it", file=out, flush=True)
    return dataclasses.replace(spec, seed=seed, doc={**spec.doc, "seed": seed})


def _reap(spec: Campaign, entries: Mapping[str, HostEntry], store: RawStore) -> list[str]:
    """Stop what an earlier, killed attempt of this campaign left running on its hosts; record it in the raw data."""
    from ..hosts import remote  # Fabric: imported when a campaign runs, never by planning

    killed, unreachable = remote.reap(entries, spec.involved(), store.owner)
    notes = [f"could not check {', '.join(unreachable)} for processes an earlier attempt left"] if unreachable else []
    return notes + leftovers.found_at_start(store, killed)


def _stopped(exc: Stopped, spec: Campaign, entries: Mapping[str, HostEntry], runs: list[design.Run],
             store: RawStore, summary: Summary) -> Stopped:
    """After a signal stopped the session (which stopped what it started): kill what is left of the campaign's
    registry on every host, record it, and say in one line what was and was not stopped and how to resume."""
    from ..hosts import remote

    name = exc.args[0].removeprefix("stopped by ")
    killed, unreachable = remote.reap(entries, spec.involved(), store.owner)
    path = leftovers.record(store, killed, f"stopped by {name}")
    stored = len(store.done_ids() & {r.run_id for r in runs})
    failed = [n for n in summary.notes if n.startswith(("could not stop", "teardown:"))]
    ended = [n for n in summary.notes if n.startswith("killed ")]  # what the session's end found in the cgroups
    parts = [f"{spec.name}: stopped by {name} after {stored} of {len(runs)} samples; the cell's teardown, neighbour "
             "loads, services and monitors were stopped" if not failed else
             f"{spec.name}: stopped by {name} after {stored} of {len(runs)} samples; NOT stopped in order: "
             + "; ".join(failed)]
    parts += ended
    if path:
        parts.append(f"then killed {leftovers.describe(killed, path)}")
    parts.append(f"could not reach {', '.join(unreachable)}: processes may still run there (the next run stops "
                 "them)" if unreachable else "no process of the campaign is left on its hosts")
    return Stopped(exc.signum, "; ".join(parts) + ". Rerun the same command to resume: stored samples are kept")


def _run(spec: Campaign, entries: Mapping[str, HostEntry], runs: list[design.Run], store: RawStore, *,
         stream: TextIO | None, limit: int | None, on_sample: Callable[[design.Run], None] | None,
         measuring: tuple[contextlib.ExitStack, float | None] | None = None) -> Summary:
    store.begin(records.CampaignRecord(
        campaign=spec.name, design_digest=spec.digest(), spec=dict(spec.doc), source=spec.source,
        perflab=__version__, python=platform.python_version(), schedule=[r.run_id for r in runs],
        inventory={n: {"address": e.address, "local": e.local, "accept_new_host_keys": e.accept_new_host_keys}
                   | ({"emulated": True} if _emulated(e) else {})
                   for n, e in entries.items()}))
    if not store.done_ids() and not (store.dir / questions.RECORD).exists():  # frozen with the first sample
        frozen = questions.for_campaign_file(spec.source, spec.name)
        if frozen is not None:
            store.put_file(questions.RECORD, frozen)
    summary = Summary(planned=len(runs), already_done=0, raw_dir=store.dir)
    summary.notes += store.recover()
    done = store.done_ids()
    todo = [r for r in runs if r.run_id not in done]
    summary.already_done = len(runs) - len(todo)
    out = stream or sys.stdout
    if not todo:  # a session reaps its hosts on its own connections; with nothing to run, this does
        summary.notes += _reap(spec, entries, store)
        print(f"{spec.name}: all {len(runs)} samples are stored in {store.dir}; nothing to do", file=out, flush=True)
        return summary
    if summary.already_done:
        print(f"{spec.name}: resuming, {summary.already_done} of {len(runs)} samples already stored", file=out, flush=True)
    if measuring is not None:  # one campaign measures on this machine at a time
        eta = plan(spec)["estimated_seconds"] * len(todo[:limit]) / len(runs)
        measuring[0].enter_context(measurelock.hold(spec.name, eta_seconds=eta, wait=measuring[1], stream=out))
        measuring[0].enter_context(contention.own_cgroup())  # perflab's own CPU, told from the rest
    progress = Progress(len(runs), summary.already_done, stream=out)
    # The sample loop and the pool import Fabric; planning (``perflab plan``) never needs them.
    from ..hosts.remote import HostError
    from .pool import run_groups
    from .samples import session

    try:
        if spec.groups:
            return run_groups(spec, entries, runs, todo, store, progress, limit=limit, on_sample=on_sample,
                              summary=summary)
        session(spec, entries, runs, todo[:limit], store, progress, on_sample=on_sample, summary=summary)
    except Stopped as exc:
        raise _stopped(exc, spec, entries, runs, store, summary) from None
    except HostError as exc:
        raise RunnerError(f"{exc}. The campaign stopped after {summary.already_done + summary.done} of "
                          f"{len(runs)} samples; bring the host back (`perflab lab status` shows the lab's), then "
                          f"rerun the same command to resume: `perflab run` keeps the stored samples") from exc
    return summary


