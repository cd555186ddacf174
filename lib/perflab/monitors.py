"""Monitors: sysstat collection on a host during one sample, returned as verbatim text.

:func:`start` launches, under :meth:`Host.start` (setsid, pidfile), a small shell that
snapshots the kernel counters and runs ``sadc -S DISK,SNMP 1 <count> <file>``: one record
per second of per-CPU utilisation, load and run queue, memory and paging, network
devices and their errors, softnet, IP/TCP/UDP counters and block devices (``-S INT``
is left out: per-CPU interrupt tables grow with the CPU count). :func:`stop` ends the
process group with SIGTERM, on which the shell snapshots the counters again, converts
the data file and removes every file, all in one round trip; it does so itself rather
than through :meth:`Host.stop` because the after-snapshot must be complete before the
conversion. :func:`monitoring` wraps a sample so that its monitors are stopped
whatever happens to the sample. Files returned by :func:`stop` (names relative to the
sample's ``monitors/<host>/`` directory; the store keeps each host's files as one archive,
``monitors/<host>.tar.xz``, whose members are those files verbatim (:func:`perflab.store.pack_monitors`:
``tar xJf`` unpacks it, tidy reads it itself; campaigns measured before kept the files
themselves, some gzipped one by one, and tidy reads those too):

- ``sar.json``: ``sadf -j <file> -- -A``, every activity sadc collected, one statistics
  record per completed second (parsed by :mod:`perflab.tools.sysstat`). Because ``-A``
  exports all that the binary file holds, the binary file (readable only by a sadf of a
  compatible sysstat version) is not kept.
- ``proc-before.txt`` and ``proc-after.txt``: ``/proc/uptime``, ``loadavg``, ``stat``,
  ``net/dev``, ``net/snmp`` and ``diskstats`` in ``tail -n +1`` form (``==> file <==``
  headers), taken when the monitor starts and stops, for exact per-sample deltas and
  for samples shorter than sadc's one-second interval.
- ``cgroup-before.txt`` and ``cgroup-after.txt`` (lab hosts, whose inventory entry names
  their ``cgroups``): ``/proc/uptime`` and the host cgroup's CPU counters (``cpuacct.usage``,
  ``cpuacct.stat``, ``cpu.stat``) in the same ``tail -n +1`` form, read by
  :func:`cgroup_snapshot` on the controller right before and after the measured commands,
  so that the host's own CPU time is known although lab hosts share ``/proc/stat``.
- ``sadc.log`` (the monitor's stderr) and ``sadf.log`` (sadf's warnings, e.g. "End of
  system activity file unexpected" when SIGTERM cut the last record), only when not empty.

Cost per sample and host, measured on a lab host of a 2-core VM over SSH (2026-11-27, medians of
10 samples): start 18 ms of wall clock (one round trip: the cgroup made, the monitor started, its
pidfile awaited every 5 ms), stop 33 ms (one round trip: TERM, the after-snapshot awaited every
5 ms, the conversion and the cleanup); sadc uses 1.2 ms of CPU per second of sample (0.12 % of
one CPU) plus about 2 ms for the two snapshots; ``sar.json`` grows by about 5 KB per second on 2
CPUs with two interfaces and one disk (more with more CPUs, interfaces and disks).
"""

from __future__ import annotations

import math
import re
import secrets
import shlex
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from .contention import declaring_study
from .errors import UserError
from .fingerprint import sectioned, split_sections
from .remote import POLL, Host, HostError, Service

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
class MonitorHandle:
    """A running monitor: its host, the sample name, its service and where its files are."""

    host: Host
    name: str
    service: Service
    #: Path prefix, on the host, of the monitor's files (``.sa``, ``.before``, ``.after``).
    base: str
    #: What :func:`stop` returned (kept for an error raised by a second stop).
    files: dict[str, str] = field(default_factory=dict)


def start(host: Host, name: str, *, limit: float = 3600) -> MonitorHandle:
    """Snapshot the counters on ``host`` and start sadc there for the sample called ``name``.

    sadc ends by itself after ``limit`` seconds (and the after-snapshot is then taken),
    so that a controller that dies without calling :func:`stop` leaves nothing running
    for long; give samples longer than an hour a larger ``limit``.
    """
    tag = f"monitor-{_SAFE_RE.sub('_', name)[:40]}-{secrets.token_hex(4)}"
    base = f"{host.workdir}/{tag}"
    snap = f"tail -n +1 {' '.join(PROC_FILES)}"
    count = max(1, math.ceil(limit / INTERVAL))
    after = f"{snap} > {base}.after.tmp 2>&1; mv {base}.after.tmp {base}.after"  # appears whole, sadc done
    inner = (f"{snap} > {base}.before 2>&1; trap 'wait; {after}; exit 0' TERM; "
             f"for p in {' '.join(SADC_PATHS)}; do if [ -x \"$p\" ]; then "
             f"\"$p\" -S {ACTIVITIES} {INTERVAL} {count} {base}.sa & wait $! 2>/dev/null; s=$?; "
             f"{after}; exit $s; fi; done; "
             f"echo 'sadc not found (looked in {' '.join(SADC_PATHS)}): install sysstat on host {host.name}' >&2; "
             f"{after}; exit 127")
    return MonitorHandle(host, name, host.start(tag, f"sh -c {shlex.quote(inner)}"), base)


def stop(handle: MonitorHandle) -> dict[str, str]:
    """Stop the monitor and return its files (name -> verbatim text); see the module docstring.

    One round trip: end the monitor's process group (TERM, which makes it wait for sadc and
    take the after-snapshot; KILL once that is written, or after 5 s), convert the data,
    remove every file. Raises
    :class:`MonitorError` (with the files that exist) when sadc left no readable data,
    and :class:`perflab.remote.HostError` when the host is gone.
    """
    service, base = handle.service, handle.base
    if service.stopped:
        raise MonitorError(f"host {handle.host.name}: monitor for {handle.name!r} was already stopped; "
                           "its files were returned by the first stop()", handle.files)
    # TERM makes the monitor's shell wait for sadc and write the after-snapshot; its file appearing (renamed
    # into place whole), or the group gone, is the end, checked with builtins; KILL then ends what is left.
    polls = int(5 / POLL)
    halt = (f"p=$(cat {service.pidfile} 2>/dev/null); if [ -n \"$p\" ]; then kill -TERM -\"$p\" 2>/dev/null; i=0; "
            f"until [ -e {base}.after ] || ! kill -0 -\"$p\" 2>/dev/null || [ $i -ge {polls} ]; do sleep {POLL}; "
            f"i=$((i+1)); done; "
            f"kill -KILL -\"$p\" 2>/dev/null; fi\n")
    commands = {"before": f"cat {base}.before 2>&1", "after": f"cat {base}.after 2>&1", "log": f"cat {service.logfile}",
                "sar": f"sadf -j {base}.sa -- -A 2>{base}.err; echo $? > {base}.rc",
                "sadf-log": f"cat {base}.err", "sadf-status": f"cat {base}.rc"}
    cleanup = (f"rm -f {base}.before {base}.after {base}.after.tmp {base}.sa {base}.err {base}.rc {service.pidfile} "
               f"{service.logfile}\n"
               + handle.host.forget(service))
    res = handle.host.run(halt + sectioned(commands) + cleanup, timeout=120)
    service.stopped = True
    sections = split_sections(res.stdout)
    files = {"proc-before.txt": sections.get("before", "") + "\n", "proc-after.txt": sections.get("after", "") + "\n"}
    for key, fname in (("log", "sadc.log"), ("sadf-log", "sadf.log")):
        if sections.get(key, "").strip():
            files[fname] = sections[key] + "\n"
    handle.files = files
    status = sections.get("sadf-status", "").strip()
    if status != "0" or "sar" not in sections:
        raise MonitorError(f"host {handle.host.name}: monitor for {handle.name!r}: expected sadc data that "
                           f"`sadf -j` converts (exit status 0); found status {status or 'none'}: "
                           f"{sections.get('sadf-log', '').strip()[:300] or res.stderr.strip()[:300] or 'no message'}; "
                           f"monitor log: {sections.get('log', '').strip()[:300] or 'empty'}. Check sysstat on the host",
                           files)
    files["sar.json"] = sections["sar"] + "\n"
    return files


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


@contextmanager
def monitoring(hosts: Sequence[Host], name: str) -> Iterator[dict[str, dict[str, str]]]:
    """Monitor ``hosts`` during the ``with`` body; the yielded dict is filled with host -> files on exit.

    The monitors of all hosts start together and stop together (one thread per host, each over
    its own connection), so the sample waits for the slowest host's round trips rather than
    their sum. Every monitor started is stopped, also when the body or another start raises; an
    error of the body wins over an error of stopping. After stopping every monitor the
    first stop error is raised again, when the body succeeded.
    """
    handles: list[MonitorHandle] = []
    outputs: dict[str, dict[str, str]] = {}
    failed = False
    try:
        with ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
            started = [pool.submit(start, host, name) for host in hosts]
            wait(started)
        problems = [f.exception() for f in started]
        handles = [f.result() for f, problem in zip(started, problems) if problem is None]
        first = next((problem for problem in problems if problem is not None), None)
        if first is not None:
            raise first
        yield outputs
    except BaseException:
        failed = True
        raise
    finally:
        errors: list[Exception] = []

        def stop_one(handle: MonitorHandle) -> None:
            try:
                outputs[handle.host.name] = stop(handle)
            except (MonitorError, HostError) as exc:
                outputs[handle.host.name] = getattr(exc, "files", {})
                errors.append(exc)

        if handles:
            with ThreadPoolExecutor(max_workers=len(handles)) as pool:
                list(pool.map(stop_one, handles))
        if errors and not failed:
            raise errors[0]
