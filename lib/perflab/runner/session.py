"""The per-host session of a campaign: background services and loads, cell setup and teardown,
the host fingerprints around each block, and reconnecting a host that went away."""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence, TypeVar

from .. import __version__
from ..hosts import contention, fingerprint, monitors
from ..formats import fingerprints as fp_format, quiet, records
from ..hosts.remote import CONNECT_TIMEOUT, Host, HostError, HostLost, Result, Service
from ..campaign import Campaign, Cell, Step
from ..campaign.values import fill
from ..store import RawStore
from .outcome import RunnerError
from .plan import RENEW_SECONDS
from .progress import Progress


@dataclass(frozen=True)
class Want:
    """A background process wanted on a host: a tool's server, a neighbour load or a declared service.

    ``scope_key`` makes a process restart when it changes (a service of scope ``cell`` or
    ``block`` carries the cell or block); ``stop`` runs before the process group is stopped.
    """

    host: str
    name: str
    line: str
    ready: str | None = None
    scope_key: str = ""
    stop: str | None = None
    timeout: float = 15.0

    @property
    def key(self) -> tuple[str, str, str]:
        """What identifies the process: host, command line and scope key."""
        return (self.host, self.line, self.scope_key)


class Background:
    """Background processes on the hosts, started in the order wanted and stopped in reverse.

    :meth:`ensure` stops those no longer wanted and starts the missing ones, so a process
    shared by consecutive cells keeps running; :meth:`stop_all` ends every one of them.
    """

    def __init__(self, hosts: Mapping[str, Host]) -> None:
        self.hosts: Mapping[str, Host] = hosts
        self.running: dict[tuple[str, str, str], tuple[Want, Service]] = {}
        #: Suffix of pidfile and log names, so that campaigns run at the same time on hosts that
        #: share a file system (the lab's namespaces) never stop each other's processes.
        self.tag = secrets.token_hex(4)

    def _stop(self, key: tuple[str, str, str]) -> str:
        want, service = self.running.pop(key)
        host = self.hosts[want.host]
        if want.stop:
            res = host.run(want.stop, timeout=60)
            if not res.ok:
                host.stop(service)
                raise RunnerError(f"host {want.host}: stop command of {want.name} `{want.stop}` exited "
                                  f"{res.exit_code}: {res.stderr.strip()[:300] or 'no error output'}")
        return host.stop(service)

    def ensure(self, wanted: list[Want]) -> None:
        """Make exactly ``wanted`` run, starting the missing ones in order and checking each is ready."""
        keys = {w.key for w in wanted}
        for key in [k for k in reversed(self.running) if k not in keys]:
            self._stop(key)
        for want in wanted:
            if want.key in self.running:
                continue
            host = self.hosts[want.host]
            self.running[want.key] = (want, host.start(f"{want.name}-{self.tag}", want.line))
            if want.ready:
                res = host.run(f"until {want.ready}; do sleep 0.05; done", timeout=want.timeout)
                if not res.ok:
                    log = self._stop(want.key)
                    raise RunnerError(f"host {want.host}: {want.name} `{want.line}` did not become ready in "
                                      f"{want.timeout:g} s; its output: {log.strip()[:400] or '(none)'}")
                if not host.alive(self.running[want.key][1]):  # ready, but thanks to someone else's process
                    log = self._stop(want.key)
                    raise RunnerError(f"host {want.host}: {want.name} `{want.line}` exited although its readiness "
                                      f"check passed (another process answers for it?); its output: "
                                      f"{log.strip()[:400] or '(none)'}")
                for port in map(int, _PORT.findall(want.ready)):  # the port it checks must be the service's own
                    if holder := host.port_holder(self.running[want.key][1], port):
                        self._stop(want.key)
                        raise RunnerError(f"host {want.host}: {want.name} `{want.line}`: its readiness check passed "
                                          f"on port {port}, but {holder} holds that port, not the service; stop that "
                                          f"process (or use another port), then rerun to resume")

    def check(self) -> None:
        """Raise :class:`RunnerError` when a process started here has exited since (checked before every sample)."""
        by_host: dict[str, list[tuple[Want, Service]]] = {}
        for want, service in self.running.values():
            by_host.setdefault(want.host, []).append((want, service))
        for name, pairs in by_host.items():
            dead = self.hosts[name].dead([s for _, s in pairs])
            for want, service in pairs:
                if service in dead:
                    log = self._stop(want.key)
                    raise RunnerError(f"host {name}: {want.name} `{want.line}` exited during the run; its output: "
                                      f"{log.strip()[:400] or '(none)'}; fix it, then rerun to resume")

    def lines(self) -> list[dict[str, str]]:
        """What runs now, for a sample's metadata."""
        return [{"host": w.host, "command": w.line} | ({"name": w.name, "scope": w.scope_key} if w.scope_key else {})
                for w, _ in self.running.values()]

    def stop_all(self) -> list[str]:
        """Stop everything, last started first; return a note per process that could not be stopped."""
        notes = []
        for key in list(reversed(self.running)):
            try:
                self._stop(key)
            except (HostError, RunnerError) as exc:
                notes.append(f"could not stop `{key[1]}`: {exc}")
        return notes


def address_of(spec: Campaign, hosts: Mapping[str, Host], role: str, name: str, levels: Mapping[str, Any]) -> str:
    """The address host ``name`` is reached at as ``role`` in a cell: on the link ``links`` names, else its first."""
    host, link = hosts[name], spec.link_of(role, levels)
    table = host.entry.addresses or {}
    if link is None:
        return host.address
    if link in table:
        return table[link]
    raise RunnerError(f"{spec.source}: links.{role}: host {name} has no address on link {link!r} (its links: "
                      f"{', '.join(table) or 'none: not a lab host of a lab file with links'}); use a lab "
                      "file that puts it on that link (docs/lab.md)")


def addresses(spec: Campaign, hosts: Mapping[str, Host], levels: Mapping[str, Any]) -> dict[str, str]:
    """Role -> the address its host is reached at in a cell (see :func:`address_of`)."""
    return {role: address_of(spec, hosts, role, name, levels) for role, name in spec.hosts.items()}


def cell_values(spec: Campaign, hosts: Mapping[str, Host], levels: Mapping[str, Any]) -> dict[str, Any]:
    """Placeholder values of a cell, with ``<role>_address`` on the cell's path and every ``<role>_address_<link>``."""
    tables = {role: hosts[name].entry.addresses or {} for role, name in spec.hosts.items() if name in hosts}
    return spec.values(levels, addresses(spec, hosts, levels), tables)


class Cells:
    """Runs the setup steps when the schedule enters a cell and the teardown steps when it leaves it.

    A step's ``verify`` check runs right after it; the checks of one cell entry (or exit) are
    stored as one ``verify/`` record, whose path :attr:`verified` keeps for the cell's samples.
    """

    def __init__(self, spec: Campaign, hosts: Mapping[str, Host], store: RawStore) -> None:
        self.spec, self.hosts, self.store = spec, hosts, store
        self.current: Cell | None = None
        #: The ``verify/`` record of the current cell's setup checks (None: it has none).
        self.verified: str | None = None
        #: False while the current cell's setup has not completed (a lost host interrupted it).
        self.ready = False

    def _steps(self, steps: tuple[Step, ...], cell: Cell, kind: str) -> str | None:
        """Run ``steps`` and their checks; return the path of the stored checks (None without checks)."""
        values = cell_values(self.spec, self.hosts, cell.levels)
        now, group = time.time(), "" if self.spec.group is None else f"-g{self.spec.group}"
        path = (f"verify/{time.strftime('%Y%m%dT%H%M%S', time.gmtime(now))}.{int(now % 1 * 1e6):06d}Z"
                f"-c{cell.index}{group}.json")
        checks: list[dict[str, Any]] = []
        try:
            for i, step in enumerate(steps):
                host = self.hosts[self.spec.host_of(step.on)]
                res = host.run(fill(step.run, values), timeout=step.timeout)
                if not res.ok:
                    raise RunnerError(f"{self.spec.source}: {kind}[{i}] `{fill(step.run, values)}` on host {host.name} "
                                      f"(cell {cell.slug}) exited {res.exit_code}"
                                      f"{' (timed out)' if res.timed_out else ''}: {_snippet(res.stderr)}; "
                                      f"fix the step or the host, then rerun to resume")
                if step.verify:
                    check = host.run(fill(step.verify, values), timeout=step.timeout)
                    checks.append(_check_entry(i, step, values, check))
                    if not check.ok:
                        raise RunnerError(
                            f"{self.spec.source}: {kind}[{i}] did not take effect on host {host.name} (cell "
                            f"{cell.slug}): its verify `{fill(step.verify, values)}` exited {check.exit_code}"
                            f"{' (timed out)' if check.timed_out else ''}: {_snippet(check.stderr or check.stdout, 'no output')} "
                            f"(recorded in {self.store.dir / path}); fix the step or the host, then rerun to resume")
        finally:
            if checks:
                self.store.put_file(path, records.VerifyRecord(
                    campaign=self.spec.name, kind=kind, cell=cell.slug, cell_index=cell.index,
                    levels=dict(cell.levels), group=self.spec.group, checks=checks).to_json())
        return path if checks else None

    def enter(self, cell: Cell) -> None:
        """Leave the current cell (teardown) unless it is ``cell``, then set ``cell`` up.

        A setup that a lost host interrupted runs again, whole, when the cell is entered again.
        """
        if self.current is not None and self.current.index == cell.index:
            if self.ready:
                return
        else:
            self.leave()
        self.current, self.ready, self.verified = cell, False, None
        self.verified = self._steps(self.spec.setup, cell, "setup")
        self.ready = True

    def leave(self) -> None:
        """Run the current cell's teardown steps (if a cell is entered)."""
        cell, self.current = self.current, None
        if cell is not None:
            self._steps(self.spec.teardown, cell, "teardown")


def _snippet(text: str, empty: str = "no error output") -> str:
    """The start of a command's output on one line, for an error message (``empty`` when it has none)."""
    return " ".join(text.split())[:300] or empty


def _check_entry(index: int, step: Step, values: Mapping[str, Any], res: Result) -> dict[str, Any]:
    """A verify check as its record lists it (outputs decoded losslessly: UTF-8 with surrogateescape)."""
    return {"step": index, "host": res.host, "run": fill(step.run, values), "verify": res.command,
            "exit_code": res.exit_code, "started_utc": utc(res.started),
            "stdout": res.out.decode("utf-8", "surrogateescape"), "stderr": res.err.decode("utf-8", "surrogateescape")}


def utc(t: float) -> str:
    """A time as ISO 8601 UTC with milliseconds, as the raw records write it."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


class Blocks:
    """Before each block the quiet-machine gate, fingerprints of every involved host before and after it,
    and their differences; the hosts' sysstat recordings, made sure of before every sample.

    Without a gate, a block entered right after the previous block's after-fingerprints were
    completed (:meth:`finish`, nothing run on the hosts since) is not probed again: each host's
    fingerprint before it is that host's fingerprint after the previous block, stored as its own
    file naming the probe (``probe_from``, see :mod:`perflab.hosts.fingerprint`). With a gate, the gate
    stops the neighbour loads and waits in between, so the hosts are probed again.
    """

    def __init__(self, spec: Campaign, hosts: Mapping[str, Host], store: RawStore, progress: Progress,
                 quieten: Callable[[], None] = lambda: None) -> None:
        self.spec, self.hosts, self.store, self.progress = spec, hosts, store, progress
        self.current: int | None = None
        self.reported: set[str] = set()
        #: Groups fingerprint (and compare) their own hosts, each into its own files.
        self.suffix = "" if spec.group is None else f"-g{spec.group}"
        #: The quiet gate before each block and the contention record of each sample (:mod:`perflab.hosts.contention`).
        self.gate = contention.Gate(contention.quiet_of(spec.doc, spec.source), note=progress.note,
                                    put=store.put_file, suffix=self.suffix)
        #: Stops the campaign's own loads (neighbours) before the gate, so it sees the rest of the machine.
        self.quieten = quieten
        #: Versions probed: the campaign's tool, and sysstat when monitors run.
        self.tools = (spec.tool, "sadf") if spec.monitors else (spec.tool,)
        #: The hosts' sysstat recordings (monitors on), read per sample, renewed before a sample once RENEW_SECONDS old.
        self.recordings = monitors.Recordings(list(hosts.values()) if spec.monitors else [],
                                              lambda path, text: store.put_file(path, text), renew=RENEW_SECONDS,
                                              suffix=self.suffix)
        #: Host -> (stored path, fingerprint) of its last full probe in this run, whose digest later
        #: fingerprints compare with before probing again.
        self.full: dict[str, tuple[str, dict]] = {}
        #: The block whose after-fingerprints the last completed :meth:`finish` took, with host -> (stored path,
        #: fingerprint) of those it probed itself; None from the start of a finish until it completes, and
        #: once :meth:`enter` took it.
        self.boundary: tuple[int, dict[str, tuple[str, dict]]] | None = None

    def _path(self, block: int, when: str, host: str) -> str:
        return f"blocks/{block}/fingerprint-{when}-{host}{self.suffix}.json"

    def _load(self, block: int, when: str) -> dict[str, dict]:
        out = {}
        for host in self.hosts:
            path = self.store.dir / self._path(block, when, host)
            if path.exists():
                out[host] = fp_format.read(path)
        return out

    def _collect(self, block: int, when: str,
                 same: Mapping[str, tuple[str, dict]] | None = None) -> dict[str, tuple[str, dict]]:
        """Fingerprint every host not yet fingerprinted ``when`` ``block``: a full probe the first time in this
        run, then the digest first (:func:`perflab.hosts.fingerprint.collect` with ``known``); a host in ``same``
        (host -> (stored path, fingerprint)) is not probed: its fingerprint is that probe, naming its file
        (``probe_from``). Return host -> (stored path, fingerprint) of the hosts probed here."""
        probed = {}
        for name, host in self.hosts.items():
            path = self._path(block, when, name)
            if (self.store.dir / path).exists():
                continue
            if same is not None and name in same:
                self.store.put_file(path, fp_format.dumps(same[name][1] | {"probe_from": same[name][0]}))
                continue
            links = len(host.entry.addresses or {}) or 1
            fp = fingerprint.collect(host, tuple(f"eth{i}" for i in range(links)), self.tools,
                                     phase=f"{when} block {block}", known=self.full.get(name))
            self.store.put_file(path, fp_format.dumps(fp))
            probed[name] = (path, fp)
            if "facts_from" not in fp:
                self.full[name] = (path, fp)
        return probed

    def enter(self, block: int) -> None:
        """Finish the current block, wait for a quiet machine, then fingerprint the hosts before ``block``.

        A host fingerprinted before ``block`` by an interrupted earlier session (or before a lost
        host interrupted this one) keeps that fingerprint, and the block keeps its gate's outcome.
        Without a gate, the hosts that the completed :meth:`finish` of block ``block - 1`` (the one this
        call makes, or the last call before this one) probed after it are not probed again (see the class).
        """
        if block == self.current:
            self.recordings.ensure(block)  # renewed when old, started again after a lost host's reconnection
            return
        self.finish()
        boundary, self.boundary = self.boundary, None  # once: a call made again follows a lost host's recovery
        if self.gate.quiet is not None:
            boundary = None  # the neighbours stop and the gate waits: the hosts are probed again
            self.quieten()
            stored = self.store.dir / f"blocks/{block}/quiet{self.suffix}.json"
            self.gate.before_block(block, stored=quiet.read_gate(stored) if stored.exists() else None)
        if self.spec.fingerprints:
            self._collect(block, "before", boundary[1] if boundary is not None and boundary[0] == block - 1 else None)
        self.recordings.ensure(block)
        self.current = block

    def finish(self) -> None:
        """Fingerprint the hosts after the current block and store and print the differences.

        Only a call that completes (with a block to finish) leaves :attr:`boundary` set, as its last step.
        """
        block = self.current
        if block is None or not self.spec.fingerprints:
            self.current = None
            return
        self.boundary = None
        probed = self._collect(block, "after")
        self.current = None
        before, after = self._load(block, "before"), self._load(block, "after")
        found: dict[str, Any] = {"block": block,
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
            self.store.put_file(path, fp_format.differences_text(record))
        self.boundary = (block, probed)


#: A TCP port a readiness check tests with ss (``sport = :N``).
_PORT = re.compile(r"sport\s*=\s*:(\d+)")

T = TypeVar("T")


class Reconnector:
    """Runs session steps so that a lost host is reconnected under the campaign's ``reconnect`` policy.

    When a step raises :class:`HostLost`, the host is reconnected with exponential backoff
    (its key checked as at first), every background process of the session (services,
    neighbour loads, fixtures) is stopped and what is left of the campaign's process registry
    on that host is killed (the lost command, its monitors), the gap is stored under
    ``gaps/``, and the step runs again: it starts what it needs anew and checks it, and a
    sample runs as a new attempt (the lost one stays under ``failed/``). A step that loses
    hosts more often than ``reconnect.attempts``, a host that stays away for the whole policy
    and a refused host key raise :class:`HostError` in one line (the run stops; a rerun resumes).
    """

    def __init__(self, spec: Campaign, hosts: Mapping[str, Host], store: RawStore, progress: Progress,
                 backgrounds: Sequence[Background | monitors.Recordings]) -> None:
        self.spec, self.hosts, self.store, self.progress = spec, hosts, store, progress
        self.backgrounds = backgrounds

    def retrying(self, step: Callable[[], T]) -> T:
        """Run ``step`` and return what it returns, reconnecting and running it again when a host is lost."""
        outages = 0
        while True:
            try:
                return step()
            except HostLost as exc:
                lost: HostLost | None = exc
            while lost is not None:  # a host lost again while recovering is one more outage
                if lost.stalled:  # this process was stopped or suspended meanwhile: not the host's outage
                    self.progress.note(f"host {lost.host}: lost while this process was not running for "
                                       f"{lost.stalled:.0f} s (stopped or suspended); not counted against the host")
                else:
                    outages += 1
                try:
                    self._recover(lost, outages)
                    lost = None
                except HostLost as again:
                    lost = again

    def _recover(self, lost: HostLost, outages: int) -> None:
        """Reconnect ``lost.host``, restart the session's background processes and record the gap; or raise."""
        policy, host = self.spec.reconnect, self.hosts[lost.host]
        gap: dict[str, Any] = {"attempts": [], "back_at": None, "outcome": "gave up", "stopped": []}
        tried = f"reconnect: attempts {policy.attempts}, backoff {policy.backoff:g} s, max_backoff " \
                f"{policy.max_backoff:g} s, max_wait {policy.max_wait:g} s"
        try:
            if outages > policy.attempts:
                why = ("not reconnecting (reconnect.attempts is 0)" if policy.attempts == 0 else
                       f"lost {outages} times in one step, more than reconnect.attempts ({policy.attempts})")
                host.give_up(why)
                raise HostError(f"{lost}; {why}")
            self.progress.note(f"{lost}; reconnecting ({tried})")
            self._reconnect(lost, host, gap, tried)
            self.progress.note(f"host {host.name}: back after {gap['back_at'] - lost.at:.1f} s "
                               f"({len(gap['attempts'])} attempt(s)); restarting the services and loads, "
                               "then running the step again")
            for background in self.backgrounds:
                for note in background.stop_all():
                    self.progress.note(note)
            # other groups' processes run in other namespaces of the same kernel on the lab: spare them
            gap["stopped"] = host.reap(self.store.owner, own_netns=True)
        finally:
            self._record(lost, host, gap)

    def _reconnect(self, lost: HostLost, host: Host, gap: dict[str, Any], tried: str) -> None:
        """Try to reconnect within the policy, noting each attempt in ``gap``; raise :class:`HostError` if it fails."""
        policy = self.spec.reconnect
        for k in range(1, policy.attempts + 1):
            wait, left = policy.wait(k), policy.max_wait - (time.time() - lost.at)
            if wait >= left:
                break
            time.sleep(wait)  # the backoff itself
            attempt: dict[str, Any] = {"waited": wait, "at": round(time.time(), 3), "error": None}
            gap["attempts"].append(attempt)
            try:
                host.reconnect(min(CONNECT_TIMEOUT, left - wait))
            except HostLost as exc:
                attempt["error"] = exc.reason
                self.progress.note(f"host {host.name}: reconnect attempt {k} of {policy.attempts} failed: {exc.reason}")
                continue
            except HostError as exc:  # a refused host key: never retried, never accepted
                attempt["error"], gap["outcome"] = str(exc), "refused"
                host.give_up("its host key was refused on reconnecting")
                raise HostError(f"{lost}; on reconnecting: {exc}") from None
            gap["back_at"], gap["outcome"] = round(time.time(), 3), "reconnected"
            return
        errors = [a["error"] for a in gap["attempts"]]
        host.give_up(f"given up after {len(errors)} reconnect attempt(s)")
        raise HostError(f"{lost}; reconnecting failed: {len(errors)} attempt(s) in {time.time() - lost.at:.1f} s "
                        f"({tried}){', last error: ' + errors[-1] if errors else ''}")

    def _record(self, lost: HostLost, host: Host, gap: dict[str, Any]) -> None:
        """Store the gap as ``gaps/<host>-<time>.json`` (a checksummed raw file; ``-2``, ``-3``... after the time
        when the host was lost more than once within its millisecond)."""
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(lost.at)) + f".{int(lost.at % 1 * 1000):03d}Z"
        policy = self.spec.reconnect
        record = records.HostGap(
            campaign=self.spec.name, host=host.name, address=host.address, group=self.spec.group,
            lost_at=round(lost.at, 3), lost_utc=stamp, lost=str(lost), attempts=gap["attempts"],
            back_at=gap["back_at"], outcome=gap["outcome"],
            policy={"attempts": policy.attempts, "backoff": policy.backoff, "max_backoff": policy.max_backoff,
                    "max_wait": policy.max_wait},
            stopped=gap["stopped"], perflab=__version__)
        name, n = f"gaps/{host.name}-{stamp}", 1
        while (self.store.dir / f"{name}{f'-{n}' if n > 1 else ''}.json").exists():
            n += 1
        self.store.put_file(f"{name}{f'-{n}' if n > 1 else ''}.json", record.to_json())
