"""The runner: executes a campaign's schedule on its hosts and stores every sample raw.

One Fabric connection per host for the whole campaign; services (e.g. an iperf3 server)
start once for the cells that share them and stop at the end, also on failure or Ctrl-C;
each sample runs under a remote-side timeout; its stdout, stderr and metadata go to the
raw store atomically; the ledger records every state change, so a rerun resumes exactly
where the last one stopped.

Around the samples, in this order: when the schedule enters a new block, every involved
host is fingerprinted (``blocks/<b>/fingerprint-before-<host>.json``); when it enters a
new cell, the previous cell's teardown and the new cell's setup steps run; the cell's
neighbour loads start (and loads of other cells stop); services start; the settle
condition is waited for; then sysstat monitors run on every involved host while the
measured commands run, and their files go into the sample's ``monitors/<host>/``. When a
block ends, the hosts are fingerprinted again and the differences (before/after per host,
between hosts, since the previous block) are printed and stored in
``blocks/<b>/differences.json``. Teardown, neighbours, services and monitors are stopped
whatever happens (failure, lost host, Ctrl-C).

A campaign with ``groups`` runs the whole schedule once per group, each group on its own
hosts with its own connections, services, neighbours, monitors and fingerprints, in a
thread pool of ``parallel_groups`` workers. A group whose host goes away stops (its
processes stopped) while the others run on; the run then raises :class:`RunnerError`
naming it, and a rerun resumes.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import secrets
import shlex
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, TextIO

from . import __version__, design, fingerprint, monitors, settle, tools
from .inventory import HostEntry
from .ledger import Ledger
from .remote import Host, HostError, Hosts, Service, connect
from .spec import Campaign, Step, fill
from .store import RawStore
from .tools.base import Command, ParseError


class RunnerError(RuntimeError):
    """The campaign cannot run (a role's host is missing, a service does not start, ...)."""


@dataclass
class Summary:
    """What one invocation of :func:`run` did."""

    planned: int
    already_done: int
    done: int = 0
    failed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    raw_dir: Path | None = None

    @property
    def complete(self) -> bool:
        """True when every planned run has a stored sample."""
        return self.already_done + self.done == self.planned


class Progress:
    """Line-based progress (done/total, failures, ETA), at most one line per ``interval`` seconds; thread-safe."""

    def __init__(self, total: int, done: int, *, stream: TextIO | None = None, interval: float = 1.0) -> None:
        self.total, self.done, self.failures = total, done, 0
        self.start_done, self.t0, self.last = done, time.monotonic(), 0.0
        self.stream, self.interval = stream or sys.stdout, interval
        self.lock = threading.Lock()

    def update(self, label: str, *, ok: bool, detail: str = "") -> None:
        """Count one finished attempt and print a line when due (always for the last one)."""
        with self.lock:
            self._update(label, ok=ok, detail=detail)

    def _update(self, label: str, *, ok: bool, detail: str) -> None:
        if ok:
            self.done += 1
        else:
            self.failures += 1
        now = time.monotonic()
        if now - self.last < self.interval and self.done < self.total and ok:
            return
        self.last = now
        rate = (self.done - self.start_done) / max(now - self.t0, 1e-9)
        eta = (self.total - self.done) / rate if rate > 0 else float("nan")
        width = len(str(self.total))
        status = "ok" if ok else "FAILED"
        print(f"[{self.done:>{width}}/{self.total}] {label} {status} {detail}  "
              f"(failures {self.failures}, ETA {format_duration(eta)})", file=self.stream, flush=True)

    def note(self, text: str) -> None:
        """Print a line that is not about one sample (fingerprint differences, cleanup)."""
        with self.lock:
            print(f"  {text}", file=self.stream, flush=True)


def format_duration(seconds: float) -> str:
    """Seconds as ``1h02m`` or ``3m05s`` (``?`` when unknown)."""
    if seconds != seconds:
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def sample_timeout(spec: Campaign, params: Mapping[str, Any]) -> float:
    """Seconds a sample may take: the campaign's ``timeout`` or twice the expected time plus 15 s."""
    return spec.timeout or 2 * tools.get(spec.tool).expected_duration(params) + 15


#: Seconds the monitors add per sample and host (start and stop, measured over SSH in the lab).
MONITOR_SECONDS = 0.55
#: Seconds one fingerprint takes per host (one round trip, measured over SSH in the lab).
FINGERPRINT_SECONDS = 0.2
#: Seconds one settle poll of one host takes when the hosts are already quiet.
SETTLE_POLL_SECONDS = 0.01


def fingerprint_block(spec: Campaign, run_: design.Run) -> int:
    """The block a run's fingerprints belong to: its RMIT block, or its cell under a sequential design.

    A sequential schedule gives every sample its own block; fingerprinting around each
    would double the round trips, so there a block of fingerprints is a cell's run of samples.
    """
    return run_.cell.index if spec.design == "sequential" else run_.block


def plan(spec: Campaign) -> dict[str, Any]:
    """The schedule summary ``perflab plan`` prints: cells, samples, estimated duration and overheads.

    ``estimated_seconds`` is the tools' expected measurement time plus ``overhead_seconds``
    (monitors, fingerprints and one settle poll per sample); ``settle_max_seconds`` is the
    most the settle condition can add when the hosts never settle. With groups, samples
    count every group's runs and the times are divided by the pool size ``parallel_groups``.
    """
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
    return {"campaign": spec.name, "tool": spec.tool, "design": spec.design, "seed": spec.seed,
            "cells": len(design.cells(spec.factors, spec.crossing)), "repetitions": spec.repetitions,
            "warmups": spec.warmups, "samples": len(runs), "blocks": blocks, "hosts": hosts,
            "measure_seconds": round(measure, 1), "overhead_seconds": round(overhead, 1),
            "estimated_seconds": round(measure + overhead, 1),
            "settle_max_seconds": round(settle_max, 1),
            "settle": None if spec.settle is None else vars(spec.settle) | {"hosts": list(spec.settle.hosts)},
            "setup": [vars(st) for st in spec.setup], "teardown": [vars(st) for st in spec.teardown],
            "neighbours": [{"on": n.on, "run": n.run, "cells": {k: list(v) for k, v in n.cells.items()}}
                           for n in spec.neighbours],
            "monitors": spec.monitors, "fingerprints": spec.fingerprints, **grouped, "runs": runs}


def _estimate(spec: Campaign, runs: list[design.Run]) -> tuple[float, float]:
    """Expected measurement seconds and overhead seconds of ``runs`` on the hosts of ``spec`` (no groups)."""
    tool = tools.get(spec.tool)
    measure = sum(tool.expected_duration({**spec.params, **r.cell.levels}) for r in runs)
    hosts = spec.involved()
    blocks = len({fingerprint_block(spec, r) for r in runs})
    overhead = len(runs) * len(hosts) * (MONITOR_SECONDS if spec.monitors else 0)
    overhead += 2 * blocks * len(hosts) * (FINGERPRINT_SECONDS if spec.fingerprints else 0)
    if spec.settle:
        overhead += len(runs) * len(spec.settle.hosts) * SETTLE_POLL_SECONDS
    return measure, overhead


class _Background:
    """Background processes (tool services or neighbour loads) keyed by (host, command line).

    :meth:`ensure` stops those no longer wanted and starts the missing ones, so a process
    shared by consecutive cells keeps running; :meth:`stop_all` ends every one of them.
    """

    def __init__(self, hosts: Mapping[str, Host]) -> None:
        self.hosts: Mapping[str, Host] = hosts
        self.running: dict[tuple[str, str], Service] = {}
        #: Suffix of pidfile and log names, so that campaigns run at the same time on hosts that
        #: share a file system (the lab's namespaces) never stop each other's processes.
        self.tag = secrets.token_hex(4)

    def ensure(self, wanted: list[tuple[str, str, str, str | None]]) -> None:
        """Make exactly ``wanted`` run: (host, name, command line, readiness shell test or None)."""
        keys = {(host, line) for host, _, line, _ in wanted}
        for key in [k for k in self.running if k not in keys]:
            self.hosts[key[0]].stop(self.running.pop(key))
        for host, name, line, check in wanted:
            if (host, line) in self.running:
                continue
            self.running[(host, line)] = self.hosts[host].start(f"{name}-{self.tag}", line)
            if check:
                res = self.hosts[host].run(f"until {check}; do sleep 0.05; done", timeout=15)
                if not res.ok:
                    log = self.hosts[host].stop(self.running.pop((host, line)))
                    raise RunnerError(f"host {host}: `{line}` did not become ready in 15 s; "
                                      f"its output: {log.strip()[:400] or '(none)'}")

    def lines(self) -> list[dict[str, str]]:
        """What runs now, for a sample's metadata."""
        return [{"host": host, "command": line} for host, line in self.running]

    def stop_all(self) -> list[str]:
        """Stop everything; return a note per process that could not be stopped (its host is gone)."""
        notes = []
        for key in list(self.running):
            try:
                self.hosts[key[0]].stop(self.running.pop(key))
            except HostError as exc:
                notes.append(f"could not stop `{key[1]}`: {exc}")
        return notes


class _Cells:
    """Runs the setup steps when the schedule enters a cell and the teardown steps when it leaves it."""

    def __init__(self, spec: Campaign, hosts: Mapping[str, Host], addresses: Mapping[str, str]) -> None:
        self.spec, self.hosts, self.addresses, self.current = spec, hosts, addresses, None  # type: design.Cell | None

    def _steps(self, steps: tuple[Step, ...], cell: design.Cell, kind: str) -> None:
        values = self.spec.values(cell.levels, self.addresses)
        for i, step in enumerate(steps):
            host = self.hosts[self.spec.host_of(step.on)]
            res = host.run(fill(step.run, values), timeout=step.timeout)
            if not res.ok:
                raise RunnerError(f"{self.spec.source}: {kind}[{i}] `{fill(step.run, values)}` on host {host.name} "
                                  f"(cell {cell.slug}) exited {res.exit_code}"
                                  f"{' (timed out)' if res.timed_out else ''}: {res.stderr.strip()[:300] or 'no error output'}; "
                                  f"fix the step or the host, then rerun to resume")

    def enter(self, cell: design.Cell) -> None:
        """Leave the current cell (teardown) unless it is ``cell``, then set ``cell`` up."""
        if self.current is not None and self.current.index == cell.index:
            return
        self.leave()
        self.current = cell
        self._steps(self.spec.setup, cell, "setup")

    def leave(self) -> None:
        """Run the current cell's teardown steps (if a cell is entered)."""
        cell, self.current = self.current, None
        if cell is not None:
            self._steps(self.spec.teardown, cell, "teardown")


class _Blocks:
    """Fingerprints of every involved host before and after each block, and their differences."""

    def __init__(self, spec: Campaign, hosts: Mapping[str, Host], store: RawStore, progress: Progress) -> None:
        self.spec, self.hosts, self.store, self.progress = spec, hosts, store, progress
        self.current: int | None = None
        self.reported: set[str] = set()
        #: Groups fingerprint (and compare) their own hosts, each into its own files.
        self.suffix = "" if spec.group is None else f"-g{spec.group}"

    def _path(self, block: int, when: str, host: str) -> str:
        return f"blocks/{block}/fingerprint-{when}-{host}{self.suffix}.json"

    def _load(self, block: int, when: str) -> dict[str, dict]:
        out = {}
        for host in self.hosts:
            path = self.store.dir / self._path(block, when, host)
            if path.exists():
                out[host] = json.loads(path.read_text())
        return out

    def _collect(self, block: int, when: str) -> None:
        for name, host in self.hosts.items():
            if not (self.store.dir / self._path(block, when, name)).exists():
                fp = fingerprint.collect(host)
                self.store.put_file(self._path(block, when, name), json.dumps(fp, indent=1, sort_keys=True) + "\n")

    def enter(self, block: int) -> None:
        """Finish the current block, then fingerprint the hosts before ``block``.

        A host fingerprinted before ``block`` by an interrupted earlier session keeps that fingerprint.
        """
        if not self.spec.fingerprints or block == self.current:
            return
        self.finish()
        self.current = block
        self._collect(block, "before")

    def finish(self) -> None:
        """Fingerprint the hosts after the current block and store and print the differences."""
        block, self.current = self.current, None
        if block is None:
            return
        self._collect(block, "after")
        before, after = self._load(block, "before"), self._load(block, "after")
        found = {"block": block,
                 "changed": [d for h in after if h in before for d in fingerprint.diff(before[h], after[h])],
                 "between_hosts_before": fingerprint.compare_hosts(before),
                 "between_hosts_after": fingerprint.compare_hosts(after),
                 "since_previous_block": []}
        previous = self._load(block - 1, "after") if block > 0 else {}
        found["since_previous_block"] = [d for h in before if h in previous
                                         for d in fingerprint.diff(previous[h], before[h])]
        for kind in ("since_previous_block", "changed", "between_hosts_before", "between_hosts_after"):
            for d in found[kind]:
                text = f"block {block}: {d}" if kind != "since_previous_block" else f"before block {block}: {d}"
                if kind.startswith("between") and str(d) in self.reported:
                    continue
                self.reported.add(str(d))
                self.progress.note(f"fingerprint: {text}")
        record = {k: [vars(d) | {"hosts": list(d.hosts)} for d in v] if isinstance(v, list) else v
                  for k, v in found.items()}
        path = f"blocks/{block}/differences{self.suffix}.json"
        if not (self.store.dir / path).exists():
            self.store.put_file(path, json.dumps(record, indent=1, default=str) + "\n")


def run(spec: Campaign, entries: Mapping[str, HostEntry], raw_root: str | Path, *,
        stream: TextIO | None = None, limit: int | None = None,
        on_sample: Callable[[design.Run], None] | None = None) -> Summary:
    """Run (or resume) ``spec`` on the inventory ``entries``, storing raw data under ``raw_root``.

    ``limit`` stops after that many samples (for pilots and tests; with groups, per group);
    ``on_sample`` is called after each stored sample (with groups, from the groups' threads).
    A host that goes away records the failed attempt and raises :class:`RunnerError` after
    everything started was stopped (with groups, after the other groups finished); rerunning resumes.
    """
    names = spec.involved()
    missing = [name for name in names if name not in entries]
    if missing:
        raise RunnerError(f"{spec.source}: hosts {', '.join(missing)} are not in the inventory "
                          f"(it has {', '.join(sorted(entries))})")
    runs = design.schedule(spec)
    store = RawStore(raw_root, spec.name)
    with _exclusive(store.dir):
        return _run(spec, entries, runs, store, stream=stream, limit=limit, on_sample=on_sample)


@contextmanager
def _exclusive(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on a campaign directory, so two runs never store the same samples."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            raise RunnerError(f"{directory}: another perflab run (pid {fh.read().strip() or '?'}) is running this "
                              "campaign; wait for it to finish or stop it, then rerun to resume") from None
        fh.truncate(0)
        fh.write(str(os.getpid()))
        fh.flush()
        yield


def _run(spec: Campaign, entries: Mapping[str, HostEntry], runs: list[design.Run], store: RawStore, *,
         stream: TextIO | None, limit: int | None, on_sample: Callable[[design.Run], None] | None) -> Summary:
    store.begin({"campaign": spec.name, "design_digest": spec.digest(), "spec": dict(spec.doc),
                 "source": spec.source, "perflab": __version__, "python": platform.python_version(),
                 "schedule": [r.run_id for r in runs],
                 "inventory": {n: {"address": e.address, "local": e.local} for n, e in entries.items()}})
    summary = Summary(planned=len(runs), already_done=0, raw_dir=store.dir)
    summary.notes += store.recover()
    done = store.done_ids()
    todo = [r for r in runs if r.run_id not in done]
    summary.already_done = len(runs) - len(todo)
    out = stream or sys.stdout
    if not todo:
        print(f"{spec.name}: all {len(runs)} samples are stored in {store.dir}; nothing to do", file=out, flush=True)
        return summary
    if summary.already_done:
        print(f"{spec.name}: resuming, {summary.already_done} of {len(runs)} samples already stored", file=out, flush=True)
    progress = Progress(len(runs), summary.already_done, stream=out)
    if spec.groups:
        return _run_groups(spec, entries, runs, todo, store, progress, limit=limit, on_sample=on_sample,
                           summary=summary)
    try:
        _session(spec, entries, runs, todo[:limit], store, progress, on_sample=on_sample, summary=summary)
    except HostError as exc:
        raise RunnerError(f"{exc}. The campaign stopped after {summary.already_done + summary.done} of "
                          f"{len(runs)} samples; bring the host back, then rerun the same command to resume "
                          f"(stored samples are kept)") from exc
    return summary


def _session(spec: Campaign, entries: Mapping[str, HostEntry], runs: list[design.Run], todo: list[design.Run],
             store: RawStore, progress: Progress, *, on_sample: Callable[[design.Run], None] | None,
             summary: Summary, stop: threading.Event | None = None) -> None:
    """Run ``todo`` (part of ``runs``) on one connection per host of ``spec``, counting into ``summary``.

    Stops early when ``stop`` is set; cells, neighbours and services are stopped whatever happens.
    """
    last_of_block = {fingerprint_block(spec, r): r.run_id for r in runs}
    with connect(entries, spec.involved()) as hosts:
        engine = _Engine(spec, hosts, store, progress)
        try:
            for run_ in todo:
                if stop is not None and stop.is_set():
                    break
                if engine.sample(run_):
                    summary.done += 1
                    if on_sample:
                        on_sample(run_)
                else:
                    summary.failed.append(run_.run_id)
                if last_of_block[fingerprint_block(spec, run_)] == run_.run_id:
                    engine.blocks.finish()
        finally:
            summary.notes += engine.close()


def _run_groups(spec: Campaign, entries: Mapping[str, HostEntry], runs: list[design.Run], todo: list[design.Run],
                store: RawStore, progress: Progress, *, limit: int | None,
                on_sample: Callable[[design.Run], None] | None, summary: Summary) -> Summary:
    """Run every group's part of ``todo`` in a pool of ``parallel_groups`` threads; merge into ``summary``."""
    stop = threading.Event()

    def one(k: int) -> tuple[Summary, str | None]:
        part = Summary(planned=0, already_done=0)
        mine = [r for r in runs if r.group == k]
        try:
            _session(spec.for_group(k), entries, mine, [r for r in todo if r.group == k][:limit], store, progress,
                     on_sample=on_sample, summary=part, stop=stop)
        except (HostError, RunnerError) as exc:
            progress.note(f"group {k} stopped: {exc}")
            return part, str(exc)
        return part, None

    with ThreadPoolExecutor(max_workers=spec.parallel_groups, thread_name_prefix="perflab-group") as pool:
        futures = [pool.submit(one, k) for k in range(len(spec.groups))]
        try:
            results = [f.result() for f in futures]
        except BaseException:
            stop.set()
            raise
    errors = []
    for k, (part, error) in enumerate(results):
        summary.done += part.done
        summary.failed += part.failed
        summary.notes += part.notes
        if error:
            errors.append(f"group {k}: {error}")
    if errors:
        raise RunnerError(f"{'; '.join(errors)}. The other groups ran on; {summary.already_done + summary.done} of "
                          f"{len(runs)} samples are stored; bring the host back, then rerun the same command to "
                          f"resume (stored samples are kept)")
    return summary


class _Engine:
    """One campaign session on connected hosts: cells, neighbours, services, settle, monitors, fingerprints."""

    def __init__(self, spec: Campaign, hosts: Hosts, store: RawStore, progress: Progress) -> None:
        self.spec, self.hosts, self.store, self.progress = spec, hosts, store, progress
        self.tool = tools.get(spec.tool)
        self.ledger = Ledger(store.dir / "ledger.jsonl")
        self.addresses = {role: hosts[name].address for role, name in spec.hosts.items()}
        self.cells = _Cells(spec, hosts, self.addresses)
        self.blocks = _Blocks(spec, hosts, store, progress)
        self.services, self.neighbours = _Background(hosts), _Background(hosts)

    def prepare(self, run_: design.Run) -> list[Command]:
        """Bring the hosts into the state of ``run_``'s block and cell; return the measured commands."""
        params = {**self.spec.params, **run_.cell.levels}
        self.blocks.enter(fingerprint_block(self.spec, run_))
        self.cells.enter(run_.cell)
        values = self.spec.values(run_.cell.levels, self.addresses)
        self.neighbours.ensure([(self.spec.host_of(n.on), f"neighbour-{i}", fill(n.run, values), None)
                                for i, n in enumerate(self.spec.neighbours) if n.applies(run_.cell.levels)])
        commands = self.tool.commands(params, self.addresses)
        self.services.ensure([(self.spec.hosts[c.role], f"{self.tool.name}-{c.role}", c.line(),
                               self.tool.ready(params, self.addresses)) for c in commands if c.service])
        return [c for c in commands if not c.service]

    def _settle(self) -> dict[str, Any] | None:
        cond = self.spec.settle
        if cond is None:
            return None
        res = settle.wait([self.hosts[self.spec.host_of(h)] for h in cond.hosts],
                          max_load1=cond.max_load1, timeout=cond.timeout, poll=cond.poll)
        if not res.satisfied:
            self.progress.note(f"settle: {res}; running the sample anyway")
        return {"satisfied": res.satisfied, "waited": round(res.waited, 3), "loads": dict(res.loads),
                "polls": res.polls, "max_load1": res.max_load1}

    def _measure(self, run_: design.Run, measured: list[Command], params: Mapping[str, Any],
                 files: dict[str, str]) -> tuple[list, str]:
        """Run the measured commands under the monitors; monitor files go into ``files``."""
        results: list = []
        reason = ""
        watched = [self.hosts[n] for n in self.hosts] if self.spec.monitors else []
        try:
            with monitors.monitoring(watched, run_.run_id) as outputs:
                for cmd in measured:
                    host = self.hosts[self.spec.hosts[cmd.role]]
                    res = host.run(cmd.line(), timeout=sample_timeout(self.spec, params))
                    results.append((cmd, host, res))
                    if res.timed_out:
                        reason = f"timed out after {sample_timeout(self.spec, params):g} s on {host.name}"
                    elif not res.ok:
                        reason = f"exit code {res.exit_code} on {host.name}: {res.stderr.strip()[:200]}"
                    if reason:
                        break
        except monitors.MonitorError as exc:
            files["monitors/errors.txt"] = f"{exc}\n"
        for host, produced in outputs.items():
            files.update({f"monitors/{host}/{name}": text for name, text in produced.items()})
        return results, reason

    def sample(self, run_: design.Run) -> bool:
        """Run one planned sample with its retries; True when a sample was stored."""
        params = {**self.spec.params, **run_.cell.levels}
        group = "" if run_.group is None else f"g{run_.group} "
        label = f"{group}{run_.cell.slug} {'warm-up' if run_.warmup else 'rep'} {run_.repetition}"
        measured = self.prepare(run_)
        first = self.store.attempts(run_.run_id) + 1
        for attempt in range(first, first + self.spec.retries + 1):
            files: dict[str, str] = {}
            settled = self._settle()
            self.ledger.running(run_.run_id, attempt)
            try:
                results, reason = self._measure(run_, measured, params, files)
            except HostError as exc:
                files.update(_sample_files(self.spec, self.tool, run_, attempt, [], str(exc),
                                           settle=settled, neighbours=self.neighbours.lines()))
                self.store.put_sample(run_.run_id, files, failed=True)
                self.ledger.failed(run_.run_id, attempt, str(exc))
                self.progress.update(label, ok=False, detail=str(exc)[:160])
                raise
            detail = ""
            if not reason and results:
                try:
                    rows = self.tool.parse(results[0][2].stdout, results[0][2].stderr, source=f"{run_.run_id}/stdout")
                    detail = _headline(rows, self.tool.primary_metric)
                except ParseError as exc:
                    reason = f"output does not parse: {exc}"
            files.update(_sample_files(self.spec, self.tool, run_, attempt, results, reason,
                                       settle=settled, neighbours=self.neighbours.lines()))
            self.store.put_sample(run_.run_id, files, failed=bool(reason))
            if reason:
                self.ledger.failed(run_.run_id, attempt, reason)
                self.progress.update(label, ok=False, detail=reason[:160])
                continue
            self.ledger.done(run_.run_id, attempt)
            self.progress.update(label, ok=True, detail=detail)
            return True
        return False

    def close(self) -> list[str]:
        """Tear the current cell down and stop neighbours and services, whatever happened; return notes."""
        notes = []
        try:
            self.cells.leave()
        except (RunnerError, HostError) as exc:
            notes.append(f"teardown: {exc}")
        notes += self.neighbours.stop_all() + self.services.stop_all()
        for note in notes:
            self.progress.note(note)
        return notes


def _headline(rows: list, primary: str | None) -> str:
    """The value a progress line shows: the tool's primary summary metric, else its first summary row."""
    summary = [m for m in rows if not m.dims and m.value is not None]
    m = next((m for m in summary if m.metric == primary), summary[0] if summary else None)
    if m is None:
        return ""
    if m.unit == "bit/s":
        return f"{m.metric} {m.value / 1e9:.3g} Gbit/s"
    return f"{m.metric} {m.value:.4g} {m.unit}"


def _sample_files(spec: Campaign, tool: tools.Tool, run_: design.Run, attempt: int, results: list, reason: str,
                  *, settle: dict[str, Any] | None, neighbours: list[dict[str, str]]) -> dict[str, str]:
    files: dict[str, str] = {}
    commands = []
    for i, (cmd, host, res) in enumerate(results):
        suffix = "" if i == 0 else f".{cmd.role}"
        files[f"stdout{suffix}"] = res.stdout
        files[f"stderr{suffix}"] = res.stderr
        commands.append({"role": cmd.role, "host": host.name, "address": host.address, "argv": list(cmd.argv),
                         "command": shlex.join(cmd.argv), "exit_code": res.exit_code,
                         "started": res.started, "ended": res.ended,
                         "started_utc": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(res.started))
                         + f".{int(res.started % 1 * 1000):03d}Z"})
    meta = {"format": 1, "campaign": spec.name, "run_id": run_.run_id, "tool": tool.name,
            "cell": dict(run_.cell.levels), "cell_index": run_.cell.index, "repetition": run_.repetition,
            "warmup": run_.warmup, "block": run_.block, "position": run_.position, "seed": spec.seed,
            "attempt": attempt, "status": "failed" if reason else "ok", "reason": reason or None,
            "roles": dict(spec.hosts), "commands": commands, "settle": settle, "neighbours": neighbours,
            "perflab": __version__}
    if spec.group is not None:
        meta |= {"group": spec.group, "group_hosts": dict(spec.doc["groups"][spec.group])}
    files["meta.json"] = json.dumps(meta, indent=1, default=str) + "\n"
    return files
