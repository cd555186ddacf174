"""The sample loop: bring the hosts into a run's state, measure under the monitors, store raw."""

from __future__ import annotations

import shlex
import threading
from functools import partial
from typing import Any, Callable, Mapping

from .. import __version__, tools
from ..campaign import design
from ..hosts import monitors, preflight, settle
from ..formats import records
from ..inventory import HostEntry
from ..ledger import Ledger
from ..hosts.remote import HostError, Hosts, connect
from ..campaign import Campaign
from ..campaign.values import fill
from ..files import Spool
from ..store import RawStore
from ..tools.base import ParseError
from .measured import Measured, build, run_waves
from .plan import fingerprint_block
from . import leftovers, stopping
from .progress import Progress
from .outcome import RunnerError, Summary
from .session import Background, Blocks, Cells, Reconnector, Want, cell_values, utc


def session(spec: Campaign, entries: Mapping[str, HostEntry], runs: list[design.Run], todo: list[design.Run],
             store: RawStore, progress: Progress, *, on_sample: Callable[[design.Run], None] | None,
             summary: Summary, stop: threading.Event | None = None) -> None:
    """Run ``todo`` (part of ``runs``) on one connection per host of ``spec``, counting into ``summary``.

    Stops early when ``stop`` is set; cells, neighbours and services are stopped whatever happens.
    A host lost on the way is reconnected under the campaign's ``reconnect`` policy (see :class:`Reconnector`).
    """
    last_of_block = {fingerprint_block(spec, r): r.run_id for r in runs}
    refused = monitors.study_policy(spec.monitors, spec.source)
    if refused:
        raise RunnerError(refused)
    with connect(entries, spec.involved()) as hosts:
        for note in _reap(hosts, store):
            progress.note(note)
            summary.notes.append(note)
        for host in hosts.values():
            host.owner = store.owner  # the process registry every command and service is tagged with
            if note := host.open_registry():
                progress.note(note)
                summary.notes.append(note)
        problems = preflight.check(spec, hosts)
        if problems:
            for host in hosts.values():  # nothing ran: the registries just made go again
                host.close_registry()
            raise RunnerError(f"{spec.source}: the hosts are not ready for this campaign (nothing was run):\n  "
                              + "\n  ".join(problems))
        engine = Engine(spec, hosts, store, progress)
        lost = Reconnector(spec, hosts, store, progress,
                          (engine.neighbours, engine.services, engine.fixtures, engine.blocks.recordings))
        try:
            for run_ in todo:
                if stop is not None and stop.is_set():
                    break
                stopping.check()
                if lost.retrying(partial(engine.sample, run_)):
                    summary.done += 1
                    if on_sample:
                        on_sample(run_)
                else:
                    summary.failed.append(run_.run_id)
                if last_of_block[fingerprint_block(spec, run_)] == run_.run_id:
                    lost.retrying(engine.blocks.finish)
        finally:
            summary.notes += engine.close() + _close_registries(hosts, store)



class Engine:
    """One campaign session on connected hosts: cells, neighbours, services, settle, monitors, fingerprints."""

    def __init__(self, spec: Campaign, hosts: Hosts, store: RawStore, progress: Progress) -> None:
        self.spec, self.hosts, self.store, self.progress = spec, hosts, store, progress
        self.tool = tools.get(spec.tool)
        self.ledger = Ledger(store.dir / "ledger.jsonl")
        self.cells = Cells(spec, hosts, store)
        self.services, self.neighbours, self.fixtures = Background(hosts), Background(hosts), Background(hosts)
        self.blocks = Blocks(spec, hosts, store, progress, quieten=lambda: self.neighbours.ensure([]))

    def prepare(self, run_: design.Run) -> list[list[Measured]]:
        """Bring the hosts into the state of ``run_``'s block and cell; return the waves of measured commands."""
        self.blocks.enter(fingerprint_block(self.spec, run_))
        self.cells.enter(run_.cell)
        values = cell_values(self.spec, self.hosts, run_.cell.levels)
        self.fixtures.ensure(self._fixtures(run_, values))
        self.neighbours.ensure([Want(self.spec.host_of(n.on), f"neighbour-{i}", fill(n.run, values))
                                for i, n in enumerate(self.spec.neighbours) if n.applies(run_.cell.levels)])
        waves, services = build(self.spec, self.tool, self.hosts, run_.cell.levels)
        self.services.ensure(services)
        for background in (self.fixtures, self.neighbours, self.services):  # alive before every sample
            background.check()
        return waves

    def _fixtures(self, run_: design.Run, values: Mapping[str, Any]) -> list[Want]:
        """The declared services ``run_`` needs, in start order, each keyed by its scope."""
        wanted = []
        for d in sorted(self.spec.services, key=lambda d: d.order):
            if not d.applies(run_.cell.levels):
                continue
            scope = {"campaign": "campaign", "cell": f"cell {run_.cell.index}",
                     "block": f"block {fingerprint_block(self.spec, run_)}"}[d.scope]
            wanted.append(Want(self.spec.host_of(d.on), f"service-{d.name}", fill(d.start, values),
                               fill(d.ready, values) if d.ready else None, scope,
                               fill(d.stop, values) if d.stop else None, d.timeout))
        return wanted

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

    def _measure(self, run_: design.Run, measured: list[list[Measured]], files: dict[str, bytes | str | Spool],
                 contended: dict[str, Any]) -> tuple[list, str]:
        """Run the measured commands under the monitors; monitor files go into ``files`` (as
        ``monitors/<host>/<name>``, packed per host when stored), the machine's contention during the
        commands into ``contended``."""
        results: list = []
        reason = ""
        watched = [self.hosts[n] for n in self.hosts] if self.spec.monitors else []
        outputs: dict[str, dict[str, str]] = {}
        try:
            with self.blocks.recordings.sample() as outputs:
                accounted = [h for h in watched if h.entry.cgroups]
                for host in accounted:
                    files[f"monitors/{host.name}/cgroup-before.txt"] = monitors.cgroup_snapshot(host.entry.cgroups)
                with self.blocks.gate.sample(contended):
                    results, reason = run_waves(self.spec, self.hosts, measured)
                for host in accounted:
                    files[f"monitors/{host.name}/cgroup-after.txt"] = monitors.cgroup_snapshot(host.entry.cgroups)
        except monitors.MonitorError as exc:
            files["monitors/errors.txt"] = f"{exc}\n"
        for host, produced in outputs.items():
            files.update({f"monitors/{host}/{name}": text for name, text in produced.items()})
        return results, reason

    def sample(self, run_: design.Run) -> bool:
        """Run one planned sample with its retries; True when a sample was stored."""
        group = "" if run_.group is None else f"g{run_.group} "
        label = f"{group}{run_.cell.slug} {'warm-up' if run_.warmup else 'rep'} {run_.repetition}"
        measured = self.prepare(run_)
        first = self.store.attempts(run_.run_id) + 1
        for attempt in range(first, first + self.spec.retries + 1):
            files: dict[str, bytes | str | Spool] = {}
            contended: dict[str, Any] = {}
            settled = self._settle()
            self.ledger.running(run_.run_id, attempt)
            try:
                results, reason = self._measure(run_, measured, files, contended)
            except HostError as exc:
                files.update(_sample_files(self.spec, self.tool, run_, attempt, [], str(exc),
                                           settle=settled, neighbours=self.neighbours.lines(),
                                       services=self.fixtures.lines(), verified=self.cells.verified,
                                       contention=contended or None))
                stored = self.store.put_sample(run_.run_id, files, failed=True)
                self.ledger.failed(run_.run_id, attempt, str(exc), files=self.store.digests(stored))
                self.progress.update(label, ok=False, detail=str(exc)[:160])
                raise
            detail = ""
            if not reason and results:
                reason, detail = _check_outputs(self.tool, run_, results)
            files.update(_sample_files(self.spec, self.tool, run_, attempt, results, reason,
                                       settle=settled, neighbours=self.neighbours.lines(),
                                       services=self.fixtures.lines(), verified=self.cells.verified,
                                       contention=contended or None))
            stored = self.store.put_sample(run_.run_id, files, failed=bool(reason))
            if reason:
                self.ledger.failed(run_.run_id, attempt, reason, files=self.store.digests(stored))
                self.progress.update(label, ok=False, detail=reason[:160])
                continue
            self.ledger.done(run_.run_id, attempt, files=self.store.digests(stored))
            self.progress.update(label, ok=True, detail=detail)
            return True
        return False

    def close(self) -> list[str]:
        """Tear the current cell down and stop the recordings, neighbours and services, whatever happened; return notes."""
        notes = []
        try:
            self.cells.leave()
        except (RunnerError, HostError) as exc:
            notes.append(f"teardown: {exc}")
        notes += (self.blocks.recordings.stop_all() + self.neighbours.stop_all() + self.services.stop_all()
                  + self.fixtures.stop_all())
        for note in notes:
            self.progress.note(note)
        return notes


def _reap(hosts: Hosts, store: RawStore) -> list[str]:
    """Stop what an earlier, killed attempt of the campaign left on ``hosts`` (each in its own network namespace:
    the lab's hosts share a kernel, and other groups' hosts run on) and record it; return a note when it did."""
    return leftovers.found_at_start(store, {name: host.reap(store.owner, own_netns=True) for name, host in hosts.items()})


def _close_registries(hosts: Hosts, store: RawStore) -> list[str]:
    """Kill what is left in the campaign's cgroup on every host (what escaped its command or service) and record it."""
    killed, notes = {}, []
    for name, host in hosts.items():
        try:
            killed[name] = host.close_registry()
        except HostError as exc:
            notes.append(f"could not stop the campaign's processes on {name}: {exc}")
    path = leftovers.record(store, killed, "left running by their commands, killed at the end of the run")
    return notes + ([f"killed {leftovers.describe(killed, path)} that outlived their commands"] if path else [])


def _headline(rows: list, primary: str | None) -> str:
    """The value a progress line shows: the tool's primary summary metric, else its first summary row."""
    summary = [m for m in rows if not m.dims and m.value is not None]
    m = next((m for m in summary if m.metric == primary), summary[0] if summary else None)
    if m is None:
        return ""
    if m.unit == "bit/s":
        return f"{m.metric} {m.value / 1e9:.3g} Gbit/s"
    return f"{m.metric} {m.value:.4g} {m.unit}"


def _check_outputs(tool: tools.Tool, run_: design.Run, results: list) -> tuple[str, str]:
    """(reason, progress detail): every output the tool parses must parse; the detail is the first one's headline."""
    detail = ""
    for (cmd, _host, res), name in zip(results, _file_names(results)):
        if cmd.role != results[0][0].role:
            continue
        try:
            rows = tool.parse(res.stdout, res.stderr, source=f"{run_.run_id}/{name}")
        except ParseError as exc:
            return f"output does not parse: {exc}", ""
        detail = detail or _headline(rows, tool.primary_metric)
    return "", detail


def _file_names(results: list) -> list[str]:
    """The raw file name of each result's stdout: ``stdout`` for the first, then ``.<role>`` for another
    role, ``@<host>`` for another host of a role, ``+<phase>`` for a later phase."""
    if not results:
        return []
    role, phase = results[0][0].role, getattr(results[0][0], "phase", None)
    first: dict[str, str] = {}
    names = []
    for cmd, host, _ in results:
        first.setdefault(cmd.role, host.name)
        this = getattr(cmd, "phase", None)  # a plain Command (no phases) has none
        names.append("stdout" + (f".{cmd.role}" if cmd.role != role else "")
                     + (f"@{host.name}" if host.name != first[cmd.role] else "")
                     + (f"+{this}" if this != phase else ""))
    return names


def _sample_files(spec: Campaign, tool: tools.Tool, run_: design.Run, attempt: int, results: list, reason: str,
                  *, settle: dict[str, Any] | None, neighbours: list[dict[str, str]],
                  services: list[dict[str, str]], verified: str | None = None,
                  contention: dict[str, Any] | None = None) -> dict[str, bytes | str | Spool]:
    files: dict[str, bytes | str | Spool] = {}
    commands = []
    for (cmd, host, res), name in zip(results, _file_names(results)):
        err = "stderr" + name[len("stdout"):]
        files[name] = res.out  # the bytes verbatim, never a decoded copy
        files[err] = res.err
        phase = getattr(cmd, "phase", None)
        commands.append({"role": cmd.role, "host": host.name, "address": host.address, "argv": list(cmd.argv),
                         "command": shlex.join(cmd.argv), "exit_code": res.exit_code,
                         "started": res.started, "ended": res.ended, "started_utc": utc(res.started),
                         "stdout": name, "stderr": err}
                        | ({"duration": res.duration} if res.duration is not None else {})
                        | ({"phase": phase} if phase else {})
                        | ({"emulated": True} if host.entry.vm and host.entry.vm.get("emulated") else {}))
    meta = records.SampleMeta(
        campaign=spec.name, run_id=run_.run_id, tool=tool.name, cell=dict(run_.cell.levels),
        cell_index=run_.cell.index, repetition=run_.repetition, warmup=run_.warmup, block=run_.block,
        position=run_.position, seed=spec.seed, attempt=attempt, status="failed" if reason else "ok",
        reason=reason or None, roles=dict(spec.hosts), commands=commands, settle=settle, neighbours=neighbours, services=services,
        perflab=__version__, group=spec.group,
        group_hosts=None if spec.group is None else dict(spec.doc["groups"][spec.group]), verified=verified,
        contention=contention)
    files["meta.json"] = meta.to_json()
    return files
