"""Monitors: a sysstat recording on each host through a campaign run, read per sample as verbatim text.

A recording (:func:`start`, one round trip) runs ``sadc -S DISK,SNMP 1 <count> <file>`` under
:meth:`Host.start` (setsid, pidfile) on the host until :func:`stop`: one record per second of per-CPU
utilisation, load and run queue, memory and paging, network devices and their errors, softnet, IP/TCP/UDP
counters and block devices (``-S INT`` is left out: per-CPU interrupt tables grow with the CPU count).
:class:`Recordings` starts one per host of a campaign run before its first sample and renews it before the
first sample after ``renew`` seconds (the runner's :data:`perflab.runner.plan.RENEW_SECONDS`; the run's end, a
lost host and an unreadable recording stop it too).
Each sample reads it around its measured commands, on the host's own clock: :func:`before` right before them (one
round trip, no process started on the host), :func:`after` right after them (the counters first, without a process,
then sadf's cut); :meth:`Recordings.sample` wraps a sample. Files a sample gets (names relative to the sample's
``monitors/<host>/`` directory; the store keeps each host's files as one archive, ``monitors/<host>.tar.xz``,
whose members are those files verbatim (:func:`perflab.store.pack_monitors`: ``tar xJf`` unpacks it, tidy
reads it itself; campaigns measured before kept the files themselves, some gzipped one by one, and tidy
reads those too):

- ``sar.json``: ``sadf -j -s <start> -e <end> <file> -- -A``, every activity sadc collected, one statistics
  record per second whose middle lies in the sample, up to the last record written at :func:`after` (parsed by
  :mod:`perflab.tools.sysstat`): the host's clock at :func:`before` and the recording's last write (its
  file's modification time) place every record to within the few ms sadc takes to write one, and ``<start>``
  and ``<end>`` (whole seconds of UTC) select those records (see :func:`_window`). A sample of n seconds gets
  n-1 to n records, each overlapping it by at least half a second (a campaign measured before 2026-11-27 ran
  sadc per sample, from right before its commands: n records inside it). Because ``-A`` exports all that the
  binary file holds, the binary file (readable only by a sadf of a compatible sysstat version) is not kept.
- ``sadf-command.txt``: the sadf command line that made ``sar.json``, with its times and the recording's file.
- ``proc-before.txt`` and ``proc-after.txt``: ``/proc/uptime``, ``loadavg``, ``stat``,
  ``net/dev``, ``net/snmp`` and ``diskstats`` in ``tail -n +1`` form (``==> file <==``
  headers; read by perflab's agent on the host, :meth:`perflab.hosts.remote.Host.observe`, or by ``tail`` on a host
  without ``python3``), taken by :func:`before` and :func:`after`, for exact per-sample deltas and
  for samples shorter than sadc's one-second interval.
- ``cgroup-before.txt`` and ``cgroup-after.txt`` (lab hosts, whose inventory entry names
  their ``cgroups``): ``/proc/uptime`` and the host cgroup's CPU counters (``cpuacct.usage``,
  ``cpuacct.stat``, ``cpu.stat``) in the same ``tail -n +1`` form, read by
  :func:`cgroup_snapshot` on the controller right before and after the measured commands,
  so that the host's own CPU time is known although lab hosts share ``/proc/stat``.
- ``sadf.log`` (sadf's warnings) when not empty, and ``sadc.log`` (the recording's stderr) when sadf
  failed or the recording had ended.

A recording's own log, when not empty at its stop, is stored by :class:`Recordings` as
``blocks/<b>/sadc-<host>-<time>.log`` (the block of the sample it was last read for).

Cost, measured on a lab host of a 2-core VM over SSH (2026-11-27, medians of 40 and 20): per sample and host
:func:`before` 1 ms and :func:`after` 9 ms of wall clock (5 and 11 ms while they ran ``tail`` and ``stat``; sadf's
cut of the recording is most of the second, 0.05 ms more per second recorded); a recording's start 14 ms and its
stop 15 ms. sadc uses
1.2 ms of CPU per second (0.12 % of one CPU); ``sar.json`` grows by about 5 KB per second on 2 CPUs with two interfaces and one
disk (more with more CPUs, interfaces and disks); the recording's file on the host about 3 KB per second,
removed at its stop.
"""

from __future__ import annotations

import math
import re
import secrets
import shlex
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence, TypeVar

from ..errors import UserError
from .fingerprint import sectioned, split_sections
from .remote import Host, HostError, Service
from ..study import declaring_study

#: Optional sadc activities collected besides the defaults (see ``man sadc``, option -S).
ACTIVITIES = "DISK,SNMP"
#: Seconds between two sadc records.
INTERVAL = 1
#: Where distributions install sadc (Debian, RHEL/Fedora, SUSE/Arch).
SADC_PATHS = ("/usr/lib/sysstat/sadc", "/usr/lib64/sa/sadc", "/usr/libexec/sysstat/sadc", "/usr/lib/sa/sadc")
#: Kernel counters snapshotted at start and stop.
PROC_FILES = ("/proc/uptime", "/proc/loadavg", "/proc/stat", "/proc/net/dev", "/proc/net/snmp", "/proc/diskstats")

_SAFE_RE = re.compile(r"[^A-Za-z0-9._-]+")
#: A host cgroup's CPU counters (cgroup v1 cpuacct, cgroup v2), read by :func:`cgroup_snapshot`.
CGROUP_FILES = ("cpuacct.usage", "cpuacct.stat", "cpu.stat")


class MonitorError(UserError, RuntimeError):
    """A monitor produced no usable data; ``files`` holds what it did return."""

    def __init__(self, message: str, files: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.files = files or {}


@dataclass
class Recording:
    """A running recording: its host, the block's name, its service and where its file is."""

    host: Host
    name: str
    service: Service
    #: Path prefix, on the host, of the recording's files (``.sa``, ``.mark``, ``.err``).
    base: str
    #: Whether :func:`stop` ran.
    stopped: bool = False
    #: When it started (the controller's monotonic clock).
    started: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class Mark:
    """What :func:`before` read: the host's counters (its clock is the modification time of ``<base>.mark``)."""

    proc: str


def start(host: Host, name: str, *, limit: float = 4 * 3600) -> Recording:
    """Start sadc on ``host`` for the block called ``name``: one round trip, returning once its pidfile exists.

    sadc ends by itself after ``limit`` seconds, so that a controller that dies without calling :func:`stop`
    leaves nothing running for long (the next run's reap and the end of a run kill it too); a sample read
    after that gets a :class:`MonitorError`, and :class:`Recordings` starts a new recording.
    """
    tag = f"monitor-{_SAFE_RE.sub('_', name)[:40]}-{secrets.token_hex(4)}"
    base = f"{host.workdir}/{tag}"
    count = max(1, math.ceil(limit / INTERVAL))
    inner = (f"for p in {' '.join(SADC_PATHS)}; do if [ -x \"$p\" ]; then "
             f"exec \"$p\" -S {ACTIVITIES} {INTERVAL} {count} {base}.sa; fi; done; "
             f"echo 'sadc not found (looked in {' '.join(SADC_PATHS)}): install sysstat on host {host.name}' >&2; "
             f"exit 127")
    return Recording(host, name, host.start(tag, f"sh -c {shlex.quote(inner)}"), base)


def before(rec: Recording) -> Mark:
    """The host's counters right before a sample's measured commands, and its clock as the modification time of
    the recording's ``.mark`` file (emptied first): one round trip, no process started on the host
    (:meth:`perflab.hosts.remote.Host.observe`)."""
    _check_running(rec)
    seen = rec.host.observe(truncate=[f"{rec.base}.mark"], read=PROC_FILES)
    return Mark(seen.text.rstrip("\n") + "\n")


def _time_of_day(seconds: int) -> str:
    """The UTC time of day (hh:mm:ss) of the Unix time ``seconds``."""
    return f"{seconds // 3600 % 24:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def window(mark_ns: int | None, last_ns: int | None) -> tuple[str, str] | None:
    """sadf's ``-s`` and ``-e`` for the records whose middle is at or after ``mark_ns`` (the ``.mark`` file's
    modification time, :func:`before`), up to the last one written (``last_ns``: the recording's modification
    time); None when either time is unknown.

    Both times are in ns of the kernel's file-time clock. Record j before the last is at ``last_ns`` - j s, its
    middle half a second earlier. sadf keeps a record when the one before it is at or after ``-s`` and it is at
    or before ``-e``, in whole seconds; ``-s`` equal to ``-e`` keeps none.
    """
    if mark_ns is None or last_ns is None:
        return None
    g = 1_000_000_000
    end = last_ns // g
    j = last_ns - g // 2 - mark_ns
    start = (last_ns - j // g * g) // g - 1 if j >= 0 else end
    return _time_of_day(start), _time_of_day(end)


def after(rec: Recording, mark: Mark) -> dict[str, str]:
    """The sample's files (name -> verbatim text; see the module docstring) right after its measured commands,
    ``mark`` being what :func:`before` read.

    Two round trips: the counters and the times of the ``.mark`` file and the recording (no process started,
    :meth:`perflab.hosts.remote.Host.observe`), then sadf's cut of the recording to the records whose middle is in the
    sample (:func:`window`). Raises :class:`MonitorError` (with the files that exist) when sadf could not read the
    recording or the recording had ended, and :class:`perflab.hosts.remote.HostError` when the host is gone.
    """
    _check_running(rec)
    service, base = rec.service, rec.base
    seen = rec.host.observe(read=PROC_FILES, stat=[f"{base}.mark", f"{base}.sa"])
    times = window(seen.mtime_ns.get(f"{base}.mark"), seen.mtime_ns.get(f"{base}.sa"))
    start, end = times or ("", "")
    command = f"sadf -j -s {start} -e {end} {base}.sa -- -A"
    commands = {
        "sar": (f"{command} 2>{base}.err; r=$?" if times else
                f"r=1; echo 'cannot read the modification times of {base}.mark and {base}.sa' > {base}.err"),
        "sadf-log": f"[ -s {base}.err ] && cat {base}.err",
        "sadf-status": "echo $r",
        # sadc is the group's leader (exec'd): alive while its /proc entry is there and not a zombie, read by builtins
        "alive": (f"a=; read -r p < {service.pidfile} && read -r _ _ st _ < /proc/\"$p\"/stat && [ \"$st\" != Z ] "
                  f"&& a=yes; echo $a"),
        "log": f"[ \"$r$a\" = 0yes ] || cat {service.logfile}",
    }
    res = rec.host.run(sectioned(commands), timeout=120)
    sections = split_sections(res.stdout)
    files = {"proc-before.txt": mark.proc, "proc-after.txt": seen.text.strip("\n") + "\n",
             "sadf-command.txt": command + "\n"}
    if sections.get("sadf-log", "").strip():
        files["sadf.log"] = sections["sadf-log"] + "\n"
    log = sections.get("log", "").strip()
    if log:
        files["sadc.log"] = log + "\n"
    status = sections.get("sadf-status", "").strip()
    if status != "0" or "sar" not in sections or sections.get("alive", "").strip() != "yes":
        ended = "" if sections.get("alive", "").strip() == "yes" else "the recording had ended; "
        raise MonitorError(f"host {rec.host.name}: recording of {rec.name!r}: {ended}expected sadc data that "
                           f"`sadf -j` converts (exit status 0); found status {status or 'none'}: "
                           f"{sections.get('sadf-log', '').strip()[:300] or res.stderr.strip()[:300] or 'no message'}; "
                           f"recording log: {log[:300] or 'empty'}. Check sysstat on the host", files)
    files["sar.json"] = sections["sar"] + "\n"
    return files


def stop(rec: Recording) -> str:
    """Stop the recording, remove its files and return its log: one round trip.

    sadc is killed outright (KILL to its process group, and its cgroup's ``cgroup.kill`` where the host has a
    registry): every sample has read what it needed, and the file goes with it.
    """
    _check_running(rec)
    service, base = rec.service, rec.base
    script = (f"read -r p < {service.pidfile} && kill -KILL -\"$p\" 2>/dev/null\n" + rec.host.forget(service)
              + f"cat {service.logfile} 2>/dev/null; rm -f {base}.sa {base}.err {base}.mark {service.pidfile} {service.logfile}; true")
    out = rec.host.run(script, timeout=60).stdout
    rec.stopped = service.stopped = True
    return out


def _check_running(rec: Recording) -> None:
    if rec.stopped:
        raise MonitorError(f"host {rec.host.name}: the recording of {rec.name!r} was already stopped")


class Recordings:
    """The recordings of a campaign run's hosts, read per sample: one per host, started before the first sample and
    renewed before the first sample after ``renew`` seconds, so that a block of one sample (RMIT with one cell)
    costs no start and stop of its own, and sadf's cut for a sample, which reads the recording from its start
    (about 0.05 ms per second recorded on a lab host), stays short.

    ``put(path, text)`` stores a recording's log (a raw file beside the fingerprints of the block it ended in).
    """

    def __init__(self, hosts: Sequence[Host], put: Callable[[str, str], object], *, renew: float,
                 suffix: str = "") -> None:
        self.hosts, self.put, self.renew, self.suffix = list(hosts), put, renew, suffix
        self.running: dict[str, Recording] = {}
        self.block: int | None = None

    def ensure(self, block: int) -> None:
        """Make every host record for the next sample, of ``block`` (the hosts together, one thread each): recordings
        older than ``renew`` seconds are stopped; hosts without a recording (or whose recording ended) start
        one."""
        if any(time.monotonic() - r.started >= self.renew for r in self.running.values()):
            self.stop_all()
        self.block = block
        missing = [h for h in self.hosts if h.name not in self.running]
        if not missing:
            return
        started = _each(missing, lambda host: start(host, f"block-{block}{self.suffix}"))
        for host, (rec, _) in zip(missing, started):
            if rec is not None:
                self.running[host.name] = rec
        problem = next((exc for _, exc in started if exc is not None), None)
        if problem is not None:
            self.stop_all()
            raise problem

    def stop_all(self) -> list[str]:
        """Stop every recording, storing each non-empty log; return a note per recording that could not be stopped."""
        notes: list[str] = []
        running, self.running = list(self.running.values()), {}
        stopped = _each(running, stop)
        for rec, (log, exc) in zip(running, stopped):
            if exc is not None:
                notes.append(f"could not stop the recording on {rec.host.name}: {exc}")
            elif log and log.strip() and self.block is not None:
                stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
                self.put(f"blocks/{self.block}/sadc-{rec.host.name}{self.suffix}-{stamp}.log", log)
        return notes

    @contextmanager
    def sample(self) -> Iterator[dict[str, dict[str, str]]]:
        """Read every recording around the ``with`` body; the yielded dict is filled with host -> files after it.

        :func:`before` runs on every host before the body and :func:`after` after it, the hosts together. When the
        body raises, nothing is read after it. After reading every host, the first error is raised; a host whose
        recording could not be read (it had ended, or sadf failed) has it stopped, and a new one at the next
        :meth:`ensure`.
        """
        recs = list(self.running.values())
        marks = _each(recs, before)
        problem = next((exc for _, exc in marks if exc is not None), None)
        if problem is not None:
            raise problem
        outputs: dict[str, dict[str, str]] = {}
        yield outputs
        pairs = [(rec, mark) for rec, (mark, _) in zip(recs, marks) if mark is not None]
        read = _each(pairs, lambda pair: after(*pair))
        errors: list[Exception] = []
        for (rec, _), (files, exc) in zip(pairs, read):
            if files is not None:
                outputs[rec.host.name] = files
            elif exc is not None:
                outputs[rec.host.name] = getattr(exc, "files", {})
                errors.append(exc)
                if isinstance(exc, MonitorError):  # a recording that ended or broke is replaced at the next ensure
                    self.running.pop(rec.host.name, None)
                    _each([rec], stop)
        if errors:
            raise errors[0]


T = TypeVar("T")
R = TypeVar("R")


def _each(items: Sequence[T], func: Callable[[T], R]) -> list[tuple[R | None, Exception | None]]:
    """``func`` of every item, one thread each when there are several: (result, None) or (None, the error)."""
    def one(item: T) -> tuple[R | None, Exception | None]:
        try:
            return func(item), None
        except (MonitorError, HostError) as exc:
            return None, exc

    if len(items) <= 1:
        return [one(item) for item in items]
    with ThreadPoolExecutor(max_workers=len(items)) as pool:
        return list(pool.map(one, items))


def study_policy(monitored: bool, source: str) -> str | None:
    """Why a campaign may not run as it is: a study's campaign with its monitors off (None: it may run).

    A study's numbers come with what the hosts did meanwhile; the monitors' cost is measured
    (``benchmarks/``), never a reason to switch them off. Elsewhere ``monitors: false`` stays allowed.
    """
    declared = None if monitored else declaring_study(source)
    if declared is None:
        return None
    return (f"{source}: monitors: false: campaigns of study {declared.study} run with their monitors on, so that "
            "every sample says what its hosts did meanwhile; remove `monitors: false` (or run a copy outside "
            "studies/ for a trial)")


def cgroup_snapshot(cgroups: dict[str, str]) -> str:
    """``/proc/uptime`` and the CPU counters of a host's cgroups (role -> directory), verbatim.

    Read on the controller, where the lab's cgroup directories are (a lab host's own
    ``/sys/fs/cgroup`` is not mounted); the text has ``tail -n +1``'s ``==> file <==`` headers.
    """
    paths = ["/proc/uptime"] + [f"{d}/{name}" for d in cgroups.values() for name in CGROUP_FILES]
    parts = []
    for path in paths:
        try:
            with open(path, "rb") as fh:
                parts.append(f"==> {path} <==\n" + fh.read().decode("ascii", "replace"))
        except FileNotFoundError:
            continue
    return "\n".join(parts)
