"""The runner: executes a campaign's schedule on its hosts and stores every sample raw.

One Fabric connection per host for the whole campaign; services (e.g. an iperf3 server)
start once for the cells that share them and stop at the end, also on failure or Ctrl-C;
each sample runs under a remote-side timeout; its stdout, stderr and metadata go to the
raw store atomically; the ledger records every state change, so a rerun resumes exactly
where the last one stopped.
"""

from __future__ import annotations

import json
import platform
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO

from . import __version__, design, tools
from .inventory import HostEntry
from .ledger import Ledger
from .remote import Host, HostError, Hosts, Service, connect
from .spec import Campaign
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
    """Line-based progress (done/total, failures, ETA), at most one line per ``interval`` seconds."""

    def __init__(self, total: int, done: int, *, stream: TextIO | None = None, interval: float = 1.0) -> None:
        self.total, self.done, self.failures = total, done, 0
        self.start_done, self.t0, self.last = done, time.monotonic(), 0.0
        self.stream, self.interval = stream or sys.stdout, interval

    def update(self, label: str, *, ok: bool, detail: str = "") -> None:
        """Count one finished attempt and print a line when due (always for the last one)."""
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
              f"(failures {self.failures}, ETA {_duration(eta)})", file=self.stream, flush=True)


def _duration(seconds: float) -> str:
    if seconds != seconds:
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def sample_timeout(spec: Campaign, params: Mapping[str, Any]) -> float:
    """Seconds a sample may take: the campaign's ``timeout`` or twice the expected time plus 15 s."""
    return spec.timeout or 2 * tools.get(spec.tool).expected_duration(params) + 15


def plan(spec: Campaign) -> dict[str, Any]:
    """The schedule summary ``perflab plan`` prints: cells, samples, estimated duration."""
    runs = design.schedule(spec)
    tool = tools.get(spec.tool)
    seconds = sum(tool.expected_duration({**spec.params, **r.cell.levels}) for r in runs)
    return {"campaign": spec.name, "tool": spec.tool, "design": spec.design, "seed": spec.seed,
            "cells": len(design.cells(spec.factors, spec.crossing)), "repetitions": spec.repetitions,
            "warmups": spec.warmups, "samples": len(runs), "estimated_seconds": round(seconds, 1), "runs": runs}


class _Services:
    """Services currently running, keyed by (host, command line); restarted only when they change."""

    def __init__(self, tool: tools.Tool, hosts: Mapping[str, Host]) -> None:
        self.tool, self.hosts, self.running = tool, hosts, {}  # type: dict[tuple[str, str], Service]

    def ensure(self, wanted: list[tuple[str, Command]], params: Mapping[str, Any], addresses: Mapping[str, str]) -> None:
        keys = {(host, cmd.line()) for host, cmd in wanted}
        for key in [k for k in self.running if k not in keys]:
            self.hosts[key[0]].stop(self.running.pop(key))
        for host, cmd in wanted:
            if (host, cmd.line()) in self.running:
                continue
            service = self.hosts[host].start(f"{self.tool.name}-{cmd.role}", cmd.line())
            self.running[(host, cmd.line())] = service
            check = self.tool.ready(params, addresses)
            if check:
                res = self.hosts[host].run(f"until {check}; do sleep 0.05; done", timeout=15)
                if not res.ok:
                    log = self.hosts[host].stop(self.running.pop((host, cmd.line())))
                    raise RunnerError(f"host {host}: service `{cmd.line()}` did not become ready in 15 s; "
                                      f"its output: {log.strip()[:400] or '(none)'}")

    def stop_all(self) -> None:
        for key in list(self.running):
            try:
                self.hosts[key[0]].stop(self.running.pop(key))
            except HostError:
                pass


def run(spec: Campaign, entries: Mapping[str, HostEntry], raw_root: str | Path, *,
        stream: TextIO | None = None, limit: int | None = None,
        on_sample: Callable[[design.Run], None] | None = None) -> Summary:
    """Run (or resume) ``spec`` on the inventory ``entries``, storing raw data under ``raw_root``.

    ``limit`` stops after that many samples (for pilots and tests); ``on_sample`` is called
    after each stored sample.
    """
    missing = sorted({name for name in spec.hosts.values() if name not in entries})
    if missing:
        raise RunnerError(f"{spec.source}: hosts {', '.join(missing)} are not in the inventory "
                          f"(it has {', '.join(sorted(entries))})")
    runs = design.schedule(spec)
    store = RawStore(raw_root, spec.name)
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
    tool = tools.get(spec.tool)
    ledger = Ledger(store.dir / "ledger.jsonl")
    progress = Progress(len(runs), summary.already_done, stream=out)
    with connect(entries, sorted(set(spec.hosts.values()))) as hosts:
        services = _Services(tool, hosts)
        try:
            for run_ in todo[:limit]:
                ok = _run_one(spec, tool, run_, hosts, services, store, ledger, progress)
                if ok:
                    summary.done += 1
                    if on_sample:
                        on_sample(run_)
                else:
                    summary.failed.append(run_.run_id)
        finally:
            services.stop_all()
    return summary


def _run_one(spec: Campaign, tool: tools.Tool, run_: design.Run, hosts: Hosts, services: _Services,
             store: RawStore, ledger: Ledger, progress: Progress) -> bool:
    params = {**spec.params, **run_.cell.levels}
    addresses = {role: hosts[name].address for role, name in spec.hosts.items()}
    commands = tool.commands(params, addresses)
    services.ensure([(spec.hosts[c.role], c) for c in commands if c.service], params, addresses)
    measured = [c for c in commands if not c.service]
    label = f"{run_.cell.slug} {'warm-up' if run_.warmup else 'rep'} {run_.repetition}"
    for attempt in range(store.attempts(run_.run_id) + 1, store.attempts(run_.run_id) + spec.retries + 2):
        ledger.running(run_.run_id, attempt)
        results, reason = [], ""
        for cmd in measured:
            host = hosts[spec.hosts[cmd.role]]
            try:
                res = host.run(cmd.line(), timeout=sample_timeout(spec, params))
            except HostError as exc:
                reason = str(exc)
                break
            results.append((cmd, host, res))
            if res.timed_out:
                reason = f"timed out after {sample_timeout(spec, params):g} s on {host.name}"
            elif not res.ok:
                reason = f"exit code {res.exit_code} on {host.name}: {res.stderr.strip()[:200]}"
            if reason:
                break
        detail = ""
        if not reason and results:
            try:
                rows = tool.parse(results[0][2].stdout, results[0][2].stderr, source=f"{run_.run_id}/stdout")
                detail = _headline(rows)
            except ParseError as exc:
                reason = f"output does not parse: {exc}"
        files = _sample_files(spec, tool, run_, attempt, results, reason)
        store.put_sample(run_.run_id, files, failed=bool(reason))
        if reason:
            ledger.failed(run_.run_id, attempt, reason)
            progress.update(label, ok=False, detail=reason[:160])
            continue
        ledger.done(run_.run_id, attempt)
        progress.update(label, ok=True, detail=detail)
        return True
    return False


def _headline(rows: list) -> str:
    if not rows or rows[0].value is None:
        return ""
    m = rows[0]
    if m.unit == "bit/s":
        return f"{m.metric} {m.value / 1e9:.3g} Gbit/s"
    return f"{m.metric} {m.value:.4g} {m.unit}"


def _sample_files(spec: Campaign, tool: tools.Tool, run_: design.Run, attempt: int,
                  results: list, reason: str) -> dict[str, str]:
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
            "roles": dict(spec.hosts), "commands": commands, "perflab": __version__}
    files["meta.json"] = json.dumps(meta, indent=1, default=str) + "\n"
    return files
