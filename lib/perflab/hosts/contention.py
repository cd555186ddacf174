"""The machine's contention: a quiet-machine gate before each block and a contention record per sample.

A campaign measures the machine it runs on, and on one machine the lab's hosts share its
CPUs, memory and disks with everything else that runs there. This module reads, on the
machine that runs the campaign (the controller; for the embedded lab the same machine as
its hosts):

- pressure stall information, ``/proc/pressure/{cpu,io,memory}`` (the ``total`` stall
  time of "some" and "full" tasks, in µs; a kernel without PSI gives none, and the record
  says so with nulls);
- the load average (``/proc/loadavg``) and the CPU time counters of ``/proc/stat``
  (busy time and the time stolen by a hypervisor, ``steal``);
- the CPU time of the lab's hosts (their cgroups under ``perflab/``) and of perflab's own
  process (the runner and the ssh clients it starts, in a cgroup of their own,
  ``perflab-own/<pid>``, see :func:`own_cgroup`), so that the rest, ``other_cpus``, is
  the CPU that processes outside the lab and outside perflab used;
- the processes outside the lab using CPU, by name, telling the kernel's own threads
  (``kworker``, ``ksoftirqd``, a loop device's worker: flag ``PF_KTHREAD``) from user
  processes: when the gate waits, to say what is busy; during a sample, to say what the CPU
  counted outside the lab was (``kernel_cpus``, ``busiest``).

:class:`Quiet` is a campaign's ``quiet:`` section (docs/campaigns.md): bounds on these
values. Before each block, :class:`Gate` waits (at most ``max_wait`` seconds, saying what
is busy) until one observation window of ``window`` seconds is within every bound, and
stores the outcome as ``blocks/<b>/quiet[-g<group>].json``. Around each sample's
measured commands it takes two readings (a few small files: cheap) and returns the
sample's contention record (:func:`delta`), which goes into ``meta.json`` with whether its
block's gate gave up waiting. A sample is ``contended`` when during the sample the steal or the
CPU used outside the lab that is not the lab's kernel work exceeded their bounds (below); pressure
during a sample is recorded but not judged, because the measured commands cause pressure themselves.
Contended samples are kept and counted (:mod:`perflab.evidence`), never dropped.

What a sample's record tells apart (:func:`classify`, for every format): (a) ``steal``, the
time the hypervisor took from this machine; (b) ``outside_cpus``, the CPU of processes outside
the lab that are not the lab's own kernel work; (c) ``lab_kernel_cpus``, the kernel's work done
for the lab outside its cgroups (interrupt and softirq time, and the kernel threads of
:data:`LAB_KERNEL_THREADS`: softirq threads, loop and block workers, kblockd, writeback), which
belongs to the workload. A sample is ``contended`` when (a) or (b) exceeds the campaign's
bounds (``max_steal``, ``max_other_cpus``); (c) never makes a sample contended, so the flag does
not follow a treatment that keeps the kernel busy.

Format history of the contention record (``meta.json``'s ``contention``) and of the gate
record: format 1 (perflab 0.1), the fields of :func:`delta` and :meth:`Gate.before_block`;
format 2 adds to a sample's record ``kernel_cpus`` (the CPUs the kernel's threads outside
every cgroup of the lab used during the sample) and ``busiest`` (the commands outside the lab
that used the most CPU, each with ``kernel``), and to the gate's names ``kernel``. Format 3
adds to a sample's record ``irq_cpus`` (interrupt and softirq time), ``lab_kernel_cpus``,
``outside_cpus``, ``steal_exceeded``, ``outside_exceeded`` and ``gate_gave_up``, and judges
``contended`` on (a) and (b) only; to the gate's record ``steal`` (the share of the last window
the hypervisor took) beside ``waited``. Format 1 and 2 records are read as without them:
:func:`classify` derives (b) and (c) from a format 2 record's ``kernel_cpus`` and ``busiest``
(no interrupt time: it was not recorded), and from a format 1 record only (a).
"""

from __future__ import annotations

import logging
import os
import re
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, NamedTuple

from ..study import declaring_study

from ..formats import quiet as quiet_format

log = logging.getLogger(__name__)

#: The contention record's and the gate record's format (:mod:`perflab.formats.quiet`).
FORMAT = quiet_format.FORMAT
#: Pressure resources read from ``/proc/pressure/``.
PRESSURE = ("cpu", "io", "memory")
#: Where the lab keeps its hosts' cgroups under a hierarchy's root (as :data:`perflab.hosts.lab.CGROUP_PARENT`).
LAB_CGROUP = "perflab"
#: perflab's own cgroup parent (the runner's process and the ssh clients it starts), beside the lab's.
OWN_CGROUP = "perflab-own"
#: The kernel's USER_HZ: ticks per second of ``/proc/stat`` and ``/proc/<pid>/stat``.
USER_HZ = 100
#: Seconds between two "still waiting" lines of the gate.
ANNOUNCE_SECONDS = 30.0
#: Processes named when the gate waits, and in a sample's record.
BUSIEST = 3
#: ``/proc/<pid>/stat``'s flag of a kernel thread (``PF_KTHREAD``, include/linux/sched.h).
PF_KTHREAD = 0x00200000
#: Kernel threads whose work is the lab's own (counted with the workload, :func:`classify`): softirq threads,
#: workqueue workers (loop and block I/O, kblockd, writeback run there), loop devices, the journal, flush,
#: NAPI and threaded interrupts.
LAB_KERNEL_THREADS = re.compile(r"^(?:ksoftirqd/|kworker/|loop\d|kblockd|jbd2/|flush-|writeback|napi/|irq/)")


class Proc(NamedTuple):
    """A process as :func:`processes` sees it: its command name, CPU ticks so far, and whether it is a kernel thread."""

    name: str
    ticks: int
    kernel: bool = False


@dataclass(frozen=True)
class Quiet:
    """What quiet means for a campaign: upper bounds (None: not bounded), the observation window and the wait.

    ``max_other_cpus`` in CPUs (1 = one CPU kept busy); pressures and steal in percent of
    the window; ``max_load1`` the 1-minute load average.
    """

    max_other_cpus: float | None = None
    max_cpu_pressure: float | None = None
    max_io_pressure: float | None = None
    max_memory_pressure: float | None = None
    max_steal: float | None = None
    max_load1: float | None = None
    window: float = 5.0
    max_wait: float = 300.0

    def breaches(self, record: Mapping[str, Any], *, during: bool = False) -> list[tuple[str, str]]:
        """The bounds ``record`` (see :func:`delta`) exceeds, each as its record key and ``what value > bound``.

        ``during`` judges a sample: only the CPU used outside the lab that is not the lab's kernel work
        (``outside_cpus``, format 3) and the steal.
        """
        checks = [("outside_cpus", self.max_other_cpus, "CPU used outside the lab (not its kernel work)", 1.0,
                   " CPUs") if during else ("other_cpus", self.max_other_cpus, "CPU used outside the lab", 1.0,
                                           " CPUs"),
                  ("steal", self.max_steal, "steal", 100.0, " %")]
        if not during:
            checks += [(f"{r}_pressure", getattr(self, f"max_{r}_pressure"), f"{r} pressure", 100.0, " %")
                       for r in PRESSURE]
            checks += [("load1", self.max_load1, "1-min load", 1.0, "")]
        out = []
        for key, bound, label, scale, unit in checks:
            value = record.get(key)
            if bound is not None and value is not None and value * scale > bound:
                out.append((key, f"{label} {value * scale:.2f}{unit} > {bound:g}{unit}"))
        return out

    def exceeded(self, record: Mapping[str, Any], *, during: bool = False) -> list[str]:
        """The bounds ``record`` exceeds, each as ``what value > bound`` (:meth:`breaches`' text)."""
        return [text for _, text in self.breaches(record, during=during)]


#: The default of a study's campaign, stated in docs/campaigns.md: the rest of the machine
#: idle (at most a tenth of a CPU outside the lab and perflab), no task stalled on CPU, I/O or
#: memory for more than 1-5 % of the time, no steal, observed over 5 s, waiting up to 10 min.
STUDY_DEFAULT = Quiet(max_other_cpus=0.1, max_cpu_pressure=5.0, max_io_pressure=5.0, max_memory_pressure=1.0,
                      max_steal=1.0, max_load1=None, window=5.0, max_wait=600.0)


def quiet_of(doc: Mapping[str, Any], source: str | Path) -> Quiet | None:
    """The campaign's quiet bounds: its ``quiet:`` section over the defaults; None when it has no gate.

    A study's campaign (:func:`declaring_study`; a demonstration study's excepted) gets
    :data:`STUDY_DEFAULT` for what it leaves out; elsewhere a campaign without ``quiet:`` has
    no gate, ``quiet: true`` means the study default and a mapping bounds only what it names.
    ``quiet: false`` turns the gate off.
    """
    given = doc.get("quiet")
    if given is False:
        return None
    declared = declaring_study(source)
    study = declared is not None and not declared.demo
    if given is None:
        return STUDY_DEFAULT if study else None
    if given is True:
        return STUDY_DEFAULT
    base = STUDY_DEFAULT if study else Quiet()
    return replace(base, **{f.name: given[f.name] for f in fields(Quiet) if f.name in given})


# --- readings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reading:
    """One reading of the machine's counters (see the module docstring)."""

    t: float
    pressure: dict[str, dict[str, float]]
    load1: float | None
    #: ``/proc/stat``'s aggregate ``cpu`` line in ticks: busy (user .. softirq, guest excluded), steal, total.
    busy: int
    steal: int
    total: int
    cpus: int
    #: CPU seconds (cumulative) of the lab's cgroups and of perflab's own; None when unknown.
    lab: float | None
    own: float | None
    #: ``/proc/stat``'s interrupt and softirq ticks (part of ``busy``).
    irq: int = 0


def _read(path: str | Path) -> str | None:
    """A small kernel file's text, None when it cannot be read (os-level reads: a scan reads hundreds per sample)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks).decode("ascii", "replace")


def parse_pressure(text: str | None) -> dict[str, float]:
    """``some``/``full`` -> total stall time in µs from a ``/proc/pressure/*`` file (empty when absent)."""
    out = {}
    for line in (text or "").splitlines():
        words = line.split()
        total = next((w[6:] for w in words[1:] if w.startswith("total=")), None)
        if words and total is not None and total.isdigit():
            out[words[0]] = float(total)
    return out


def parse_stat(text: str) -> tuple[int, int, int]:
    """(busy, steal, total) ticks from ``/proc/stat``'s first line (guest time is already in user time)."""
    values = [int(v) for v in text.split("\n", 1)[0].split()[1:]]
    values += [0] * (8 - len(values))
    user, nice, system, idle, iowait, irq, softirq, steal = values[:8]
    busy = user + nice + system + irq + softirq
    return busy, steal, busy + idle + iowait + steal


def parse_irq(text: str) -> int:
    """Interrupt and softirq ticks from ``/proc/stat``'s first line."""
    values = [int(v) for v in text.split("\n", 1)[0].split()[1:]] + [0] * 8
    return values[5] + values[6]


def _cgroup_roots() -> dict[str, Path]:
    """The mount points of the cgroup hierarchies that account CPU: ``cpuacct`` (v1) and ``unified`` (v2)."""
    roots: dict[str, Path] = {}
    text = _read("/proc/self/mounts") or ""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        if parts[2] == "cgroup" and "cpuacct" in parts[3].split(","):
            roots.setdefault("cpuacct", Path(parts[1]))
        elif parts[2] == "cgroup2":
            roots.setdefault("unified", Path(parts[1]))
    return roots


def cgroup_cpu_seconds(directory: Path) -> float | None:
    """Cumulative CPU seconds of a cgroup (v1 ``cpuacct.usage``, else v2 ``cpu.stat`` ``usage_usec``), or None."""
    text = _read(directory / "cpuacct.usage")
    if text and text.strip().isdigit():
        return int(text) / 1e9
    for line in (_read(directory / "cpu.stat") or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "usage_usec" and value.strip().isdigit():
            return int(value) / 1e6
    return None


def _accounting() -> tuple[str, Path] | None:
    """(kind, mount point) of the hierarchy whose cgroups account CPU: the lab's, else v1 cpuacct, else v2."""
    roots = _cgroup_roots()
    for key in ("cpuacct", "unified"):
        root = roots.get(key)
        if root is not None and cgroup_cpu_seconds(root / LAB_CGROUP) is not None:
            return key, root
    return next(((k, roots[k]) for k in ("cpuacct", "unified") if k in roots), None)


def read(root: Path | None = None) -> Reading:
    """Read the machine's counters now (``root``: the mount point of the CPU-accounting cgroup hierarchy)."""
    stat = _read("/proc/stat") or "cpu 0"
    busy, steal, total = parse_stat(stat)
    load = (_read("/proc/loadavg") or "").split()
    own = None if root is None else cgroup_cpu_seconds(root / OWN_CGROUP)
    return Reading(t=time.monotonic(), pressure={r: parse_pressure(_read(f"/proc/pressure/{r}")) for r in PRESSURE},
                   load1=float(load[0]) if load else None, busy=busy, steal=steal, total=total,
                   cpus=os.cpu_count() or 1, lab=cgroup_cpu_seconds(root / LAB_CGROUP) if root else None, own=own,
                   irq=parse_irq(stat))


def delta(before: Reading, after: Reading) -> dict[str, Any]:
    """The contention record between two readings.

    ``seconds`` elapsed; ``{cpu,io,memory}_pressure`` (and ``*_pressure_full``): share of the
    time some (all) tasks stalled on that resource, 0..1, null without PSI; ``load1`` at the
    end; ``steal``: share of CPU time stolen; ``busy_cpus``, ``lab_cpus``, ``own_cpus``,
    ``other_cpus``: CPUs kept busy on average by the whole machine, by the lab's hosts, by
    perflab itself and by everything else (null when the cgroups are not known).
    """
    seconds = max(after.t - before.t, 1e-9)
    record: dict[str, Any] = {"format": FORMAT, "seconds": round(seconds, 4), "cpus": after.cpus}
    for r in PRESSURE:
        for kind, suffix in (("some", ""), ("full", "_full")):
            a, b = before.pressure[r].get(kind), after.pressure[r].get(kind)
            record[f"{r}_pressure{suffix}"] = None if a is None or b is None else round((b - a) / 1e6 / seconds, 5)
    ticks = max(after.total - before.total, 1)
    record["load1"] = after.load1
    record["steal"] = round((after.steal - before.steal) / ticks, 5)
    busy = (after.busy - before.busy) / USER_HZ / seconds
    record["busy_cpus"] = round(busy, 4)
    lab = None if before.lab is None or after.lab is None else (after.lab - before.lab) / seconds
    own = None if before.own is None or after.own is None else (after.own - before.own) / seconds
    record["lab_cpus"] = None if lab is None else round(lab, 4)
    record["own_cpus"] = None if own is None else round(own, 4)
    record["other_cpus"] = round(max(0.0, busy - (lab or 0.0) - (own or 0.0)), 4)
    record["irq_cpus"] = round((after.irq - before.irq) / USER_HZ / seconds, 4)
    return record


def _used(before: Mapping[int, Proc], after: Mapping[int, Proc], seconds: float) -> list[tuple[Proc, int, float]]:
    """(process, pid, CPUs) of every process of both scans that used CPU in between."""
    return [(p, pid, (p.ticks - before[pid].ticks) / USER_HZ / max(seconds, 1e-9)) for pid, p in after.items()
            if pid in before and p.ticks > before[pid].ticks]


def busiest(before: Mapping[int, Proc], after: Mapping[int, Proc], seconds: float,
            n: int = BUSIEST) -> list[dict[str, Any]]:
    """The ``n`` commands outside the lab that used the most CPU between two :func:`processes` scans.

    Processes of one command name count together (``pids``: up to three of them, busiest first;
    ``kernel``: the command is a kernel thread).
    """
    by_name: dict[str, list[tuple[float, int]]] = {}
    kernel: dict[str, bool] = {}
    for p, pid, cpus in _used(before, after, seconds):
        by_name.setdefault(p.name, []).append((cpus, pid))
        kernel[p.name] = kernel.get(p.name, False) or p.kernel
    ranked = sorted(by_name.items(), key=lambda kv: -sum(c for c, _ in kv[1]))[:n]
    return [{"name": name, "cpus": round(sum(c for c, _ in used), 3), "processes": len(used),
             "pids": [pid for _, pid in sorted(used, reverse=True)[:3]], "kernel": kernel[name]}
            for name, used in ranked]


def kernel_cpus(before: Mapping[int, Proc], after: Mapping[int, Proc], seconds: float) -> float:
    """CPUs the kernel's threads outside the lab kept busy on average between two :func:`processes` scans."""
    return round(sum(cpus for p, _, cpus in _used(before, after, seconds) if p.kernel), 4)


def labs_kernel_thread(name: str, kernel: bool) -> bool:
    """Whether a process outside the lab named ``name`` is a kernel thread doing the lab's kind of work."""
    return kernel and LAB_KERNEL_THREADS.match(name) is not None


def split_outside(before: Mapping[int, Proc], after: Mapping[int, Proc], seconds: float) -> tuple[float, float]:
    """(CPUs of the kernel's threads doing the lab's work, CPUs of every other process outside the lab) between two
    :func:`processes` scans."""
    lab = other = 0.0
    for p, _, cpus in _used(before, after, seconds):
        if labs_kernel_thread(p.name, p.kernel):
            lab += cpus
        else:
            other += cpus
    return round(lab, 4), round(other, 4)


def attribute(record: dict[str, Any], lab_threads: float, others: float) -> None:
    """Fill a format 3 record's ``lab_kernel_cpus`` and ``outside_cpus`` from its ``other_cpus`` and ``irq_cpus``.

    The lab's kernel work is its kernel threads' CPU and the interrupt time, at most ``other_cpus``;
    the CPU outside is the larger of what the scan saw outside processes use (``others``: user
    processes and other kernel threads) and what is left of ``other_cpus`` after the lab's kernel
    work (processes that ended during the sample are seen only there).
    """
    other = float(record.get("other_cpus") or 0.0)
    lab_kernel = min(other, lab_threads + float(record.get("irq_cpus") or 0.0))
    record["lab_kernel_cpus"] = round(lab_kernel, 4)
    record["outside_cpus"] = round(max(others, other - lab_kernel), 4)


def classify(record: Mapping[str, Any]) -> dict[str, Any]:
    """A sample's contention record of any format read the same way (see the module docstring).

    Returns ``steal``; ``outside_cpus`` and ``lab_kernel_cpus`` (None for format 1, which
    cannot tell them apart); ``steal_exceeded`` and ``outside_exceeded`` against the record's
    bounds (None without bounds or without the value); ``gate_gave_up``; and ``contended``
    (None without bounds): steal or the CPU outside beyond its bound.
    """
    fmt = int(record.get("format") or 1)
    outside = lab_kernel = None
    if fmt >= 3:
        outside, lab_kernel = record.get("outside_cpus"), record.get("lab_kernel_cpus")
    elif fmt == 2 and record.get("kernel_cpus") is not None:
        other = float(record.get("other_cpus") or 0.0)
        seen = [b for b in record.get("busiest") or [] if not labs_kernel_thread(b["name"], bool(b.get("kernel")))]
        foreign_kernel = sum(float(b["cpus"]) for b in seen if b.get("kernel"))
        lab_threads = max(0.0, float(record["kernel_cpus"]) - foreign_kernel)
        lab_kernel = round(min(other, lab_threads), 4)
        outside = round(max(sum(float(b["cpus"]) for b in seen), other - lab_kernel), 4)
    bounds = record.get("bounds")
    q = Quiet(**{f.name: bounds[f.name] for f in fields(Quiet) if f.name in bounds}) if bounds else None
    steal = record.get("steal")

    def over(value: Any, bound: float | None, scale: float) -> bool | None:
        return None if q is None or value is None or bound is None else float(value) * scale > bound

    steal_over = over(steal, q.max_steal if q else None, 100.0)
    outside_over = over(outside, q.max_other_cpus if q else None, 1.0)
    gave_up = bool(record.get("gate_gave_up")) if fmt >= 3 else any(
        str(e).startswith("the gate before block") for e in record.get("exceeded") or [])
    return {"steal": steal, "outside_cpus": outside, "lab_kernel_cpus": lab_kernel, "steal_exceeded": steal_over,
            "outside_exceeded": outside_over, "gate_gave_up": gave_up,
            "contended": None if q is None else bool(steal_over or outside_over)}


def processes() -> dict[int, Proc]:
    """pid -> :class:`Proc` of every process outside the lab's and perflab's cgroups but this one."""
    out = {}
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        stat = _read(f"/proc/{entry.name}/stat")
        if not stat:
            continue
        name, rest = stat[stat.find("(") + 1:stat.rfind(")")], stat[stat.rfind(")") + 2:].split()
        if len(rest) <= 12:
            continue
        kernel = bool(int(rest[6]) & PF_KTHREAD)
        if not kernel:  # a kernel thread is in no lab's cgroup: its cgroup file is not read
            groups = _read(f"/proc/{entry.name}/cgroup")
            if groups is None or _OURS.search(groups):
                continue
        out[int(entry.name)] = Proc(name, int(rest[11]) + int(rest[12]), kernel)
    return out


#: A ``/proc/<pid>/cgroup`` line of a process in the lab's or perflab's own cgroups.
_OURS = re.compile(rf"^[^:\n]*:[^:\n]*:/(?:{re.escape(LAB_CGROUP)}|{re.escape(OWN_CGROUP)})/", re.MULTILINE)


# --- perflab's own cgroup ---------------------------------------------------------------------


@contextmanager
def own_cgroup() -> Iterator[Path | None]:
    """Run the block with this process (and what it starts) in ``perflab-own/<pid>``; yield its directory.

    So the contention record tells perflab's own CPU from the rest of the machine. Needs a
    writable CPU-accounting cgroup hierarchy (root); without one it yields None and changes
    nothing. The process goes back to its cgroup afterwards and the directory is removed.
    """
    found = _accounting()
    mine = back = None
    if found is not None and os.access(found[1], os.W_OK):
        kind, root = found
        here = _own_path(kind)
        mine = root / OWN_CGROUP / str(os.getpid())
        try:
            mine.mkdir(parents=True, exist_ok=True)
            (mine / "cgroup.procs").write_text(str(os.getpid()))
            back = root / here.lstrip("/") if here is not None else root
        except OSError as exc:
            log.info("perflab's own cgroup %s not used: %s", mine, exc)
            _rmdir(mine)
            mine = None
    try:
        yield mine
    finally:
        if mine is not None and back is not None:
            try:
                (back / "cgroup.procs").write_text(str(os.getpid()))
            except OSError as exc:
                log.info("could not move back to %s: %s", back, exc)
            _rmdir(mine)


def _own_path(kind: str) -> str | None:
    """This process's cgroup path in the ``cpuacct`` (v1) or ``unified`` (v2) hierarchy, from ``/proc/self/cgroup``."""
    for line in (_read("/proc/self/cgroup") or "").splitlines():
        hid, controllers, where = line.split(":", 2)
        if (kind == "unified" and hid == "0") or (kind == "cpuacct" and "cpuacct" in controllers.split(",")):
            return where
    return None


def _rmdir(d: Path) -> None:
    try:
        d.rmdir()
    except OSError as exc:
        log.info("cgroup %s not removed: %s", d, exc)


# --- the gate and the per-sample record --------------------------------------------------------


class Gate:
    """The quiet gate before each block and the contention record of each sample of one session.

    ``note`` prints a line (the runner's progress notes); ``put`` stores a raw file (name, text).
    """

    def __init__(self, quiet: Quiet | None, *, note: Callable[[str], None], put: Callable[[str, str], object],
                 suffix: str = "") -> None:
        self.quiet, self.note, self.put, self.suffix = quiet, note, put, suffix
        found = _accounting()
        self.root = found[1] if found else None
        #: The current block's gate outcome (None before the first block or without a gate).
        self.current: dict[str, Any] | None = None

    def before_block(self, block: int, *, stored: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """Wait until the machine is quiet (or ``max_wait`` passed) before ``block``; store and return the outcome.

        ``stored`` is the outcome an interrupted earlier session stored for this block: kept, not waited again.
        """
        if self.quiet is None:
            self.current = None
            return None
        if stored is not None:
            self.current = dict(stored)
            return self.current
        q = self.quiet
        start, last_note, polls = time.monotonic(), None, 0
        while True:
            before, procs = read(self.root), processes()
            time.sleep(q.window)  # the observation window itself
            after = read(self.root)
            polls += 1
            record = delta(before, after)
            busy = q.exceeded(record)
            waited = time.monotonic() - start
            if not busy:
                break
            named = busiest(procs, processes(), record["seconds"])
            if waited >= q.max_wait:
                self.note(f"quiet: before block {block} the machine is still busy after {waited:.0f} s "
                          f"({'; '.join(busy)}{_names(named)}); measuring the block anyway, its samples "
                          "record that the gate gave up")
                break
            if last_note is None or time.monotonic() - last_note >= ANNOUNCE_SECONDS:
                self.note(f"quiet: before block {block} the machine is busy: {'; '.join(busy)}{_names(named)}; "
                          f"waiting ({waited:.0f} s of at most {q.max_wait:g} s)")
                last_note = time.monotonic()
        if polls > 1 and not busy:
            self.note(f"quiet: the machine is quiet after {waited:.0f} s; measuring block {block}")
        self.current = {"format": FORMAT, "block": block, "quiet": not busy, "waited": round(waited, 3),
                        "steal": record["steal"], "polls": polls, "exceeded": busy, "bounds": asdict(q), "last": record,
                        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self.put(f"blocks/{block}/quiet{self.suffix}.json", quiet_format.gate_text(self.current))
        return self.current

    @contextmanager
    def sample(self, record: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Read the counters around the block's body; ``record`` (yielded) is filled with the contention record.

        The processes outside the lab are scanned before and after (outside the measured commands), so
        the record says which of them used CPU during the sample and how much of it was the kernel's threads.
        """
        record = {} if record is None else record
        procs = processes()
        before = read(self.root)
        try:
            yield record
        finally:
            after = read(self.root)
            now = processes()
            record.update(delta(before, after))
            record["kernel_cpus"] = kernel_cpus(procs, now, record["seconds"])
            attribute(record, *split_outside(procs, now, record["seconds"]))
            record["busiest"] = busiest(procs, now, record["seconds"])
            q = self.quiet
            record["bounds"] = None if q is None else asdict(q)
            record["gate_gave_up"] = bool(self.current and not self.current["quiet"])
            record["exceeded"] = q.exceeded(record, during=True) if q else []
            judged = classify(record)
            record["steal_exceeded"], record["outside_exceeded"] = judged["steal_exceeded"], judged["outside_exceeded"]
            record["contended"] = judged["contended"]


def _names(named: list[dict[str, Any]]) -> str:
    return "" if not named else "; busiest outside the lab: " + ", ".join(
        f"{p['name']} ({'kernel thread, ' if p.get('kernel') else ''}{p['cpus']:.2f} CPUs, {p['processes']} "
        f"process{'es' if p['processes'] > 1 else ''}: pid {', '.join(map(str, p['pids']))})" for p in named)
