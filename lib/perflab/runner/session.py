"""The per-host session of a campaign: background services and loads, cell setup and teardown,
and the host fingerprints around each block."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from .. import design, fingerprint
from ..remote import Host, HostError, Service
from ..spec import Campaign, Step, fill
from ..store import RawStore
from .progress import Progress


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


class Background:
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


class Cells:
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


class Blocks:
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


