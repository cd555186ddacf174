"""Host fingerprints: the facts about a host that can change a measurement, and their diffs.

:func:`collect` costs one round trip per host: a single shell script whose sections
(each introduced by a line ``@@perflab <name>``) read ``/proc``, ``/sys``, ``lscpu``,
``ip``/``tc``/``ethtool`` for the interfaces in use, the version banners of the
campaign's tools (each adapter's ``version_command``, nothing for tools not asked for) and of the
daemons they talk to (:data:`DAEMONS`, e.g. vblade, tgt, libiscsi and nbdkit for ``blockproto``);
:func:`parse` turns that verbatim output into a fingerprint::

    {"format": 4, "host": "h1", "address": "198.18.7.11",
     "collected_at": "2025-01-01T12:00:00.123456+00:00", "collect_seconds": 0.15,
     "facts": {"cpu.model": "AMD EPYC", "net.eth0.mtu": 1500, "tool.iperf3": "3.12", ...},
     "state": {"uptime_s": 5021.3, "load": [0.1, 0.2, 0.3]},
     "versions": {"iperf3": "iperf 3.12 (cJSON 1.7.15)", ...}}

``facts`` are flat, dotted keys with JSON scalar values (``None`` when the host does
not expose the fact) and are stable while nothing is reconfigured, so :func:`diff`
reports every change between two fingerprints of one host (a reboot shows as a new
``kernel.boot_id``). ``state`` holds values that change by themselves and is never
diffed; ``versions`` keeps each tool's first banner line verbatim. Across hosts,
:func:`compare_hosts` checks only the short explicit list :data:`MATCH_KEYS`, as
pyperf does before merging runs. Interfaces are compared by name. :func:`describe` words
differences, an interface's offloads in one sentence (absent offload facts, as in fingerprints
taken without ethtool, are unknown).

A fingerprint after a host's first in a run need not probe everything again: ``collect(...,
known=...)`` first runs :func:`digest_script`, which reads the facts that can change without a
reboot from ``/proc`` and ``/sys`` with shell builtins and runs only ``ip``, ``tc`` and ``ethtool``
per interface and one ``ls`` of the tools' programs (no tool is started); when the digest of its
output equals the digest the earlier, full fingerprint took in the same round trip as its facts,
the new fingerprint says so (``facts_from``: the file of that full fingerprint; ``digest``) and
carries that fingerprint's facts and versions with its own ``state``. Only a changed digest costs
a full probe. What the digest leaves out changes with a reboot (a new ``kernel.boot_id``, which it
reads), a new program (the tools' version banners: it reads their programs' inode, size and time)
or a device replaced under the same interface name (the driver; a device of another kind shows in
``ip link``'s facts): the CPU's model and topology, the interfaces' drivers, the banners.

The format's versions, its history (formats 1 to 3 named it ``schema``), its reader and its
writer: :mod:`perflab.formats.fingerprints`. A ``probe_from`` fingerprint is the runner's fingerprint
before a block when nothing ran on the host since its fingerprint after the previous block.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import hashlib
import json
import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .. import tools as _tools
from ..errors import UserError
from ..formats import fingerprints as fp_format

if TYPE_CHECKING:
    from .remote import Host

#: Facts that must be equal across hosts compared in one analysis (fnmatch patterns).
#: Host identity, boot id, command line, memory size and CPU vulnerabilities may
#: legitimately differ between hosts and are left out; :func:`diff` checks every fact.
MATCH_KEYS: tuple[str, ...] = (
    "cpu.model", "cpu.count", "cpu.threads_per_core", "cpu.governor", "cpu.turbo", "cpu.smt",
    "kernel.release", "net.*.mtu", "net.*.speed", "net.*.qdisc", "net.*.offload.*", "tool.*",
)

#: Offload features taken from ``ethtool -k`` (when ethtool is installed; without it they are absent, which
#: :func:`describe` calls unknown), keyed ``net.<iface>.offload.<feature>``.
OFFLOADS: tuple[str, ...] = (
    "rx-checksumming", "tx-checksumming", "scatter-gather", "tcp-segmentation-offload",
    "generic-segmentation-offload", "generic-receive-offload", "large-receive-offload",
)
#: The short names of the offloads a wire-like lab link turns off (docs/lab.md), as ``ethtool -K`` calls them.
_SHORT = {"tcp-segmentation-offload": "tso", "generic-segmentation-offload": "gso",
          "generic-receive-offload": "gro", "large-receive-offload": "lro"}
_OFFLOAD_KEY = re.compile(r"^net\.([^.]+)\.offload\.(.+)$")
#: The daemons a tool's runs talk to, whose versions a fingerprint of a campaign with that tool records
#: (facts ``daemon.<name>``, banners in ``versions``): tool adapter -> daemon -> (its Debian package, its
#: program). The version is the package's (``dpkg-query``), else the program's ``--version`` banner.
DAEMONS: dict[str, dict[str, tuple[str, str]]] = {
    "blockproto": {"vblade": ("vblade", "vblade"), "tgt": ("tgt", "tgtd"), "libiscsi": ("libiscsi-bin", "iscsi-perf"),
                   "nbdkit": ("nbdkit", "nbdkit")},
    # the NFS server and its helpers (docs/lab.md, NFS) and the client library nfsbench loads (no program of its own)
    "nfsbench": {"nfs-ganesha": ("nfs-ganesha", "ganesha.nfsd"), "nfs-ganesha-vfs": ("nfs-ganesha-vfs", ""),
                 "rpcbind": ("rpcbind", "rpcbind"), "libnfs": ("libnfs13", "")},
    # a lab's ZFS device is served by zfs-fuse (docs/lab.md, ZFS), reached with fio
    "fio": {"zfs-fuse": ("zfs-fuse", "zfs-fuse")},
}
#: Debian packages the fingerprint reads with: ``ethtool`` for the interfaces' offloads.
DEBIAN_PACKAGES: tuple[str, ...] = ("ethtool",)

#: Host-wide sections of the fingerprint script: name -> shell command (stderr is dropped).
_HOST_SECTIONS: dict[str, str] = {
    "hostname": "cat /proc/sys/kernel/hostname",
    "uname": "uname -r; uname -v; uname -m",
    "cmdline": "cat /proc/cmdline",
    "boot_id": "cat /proc/sys/kernel/random/boot_id",
    "os": "grep -m1 '^PRETTY_NAME=' /etc/os-release",
    "lscpu": "LC_ALL=C lscpu",
    "nproc": "nproc",
    "microcode": "grep -m1 '^microcode' /proc/cpuinfo",
    "governor": "cat /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor | sort -u",
    "cpufreq_driver": "cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_driver",
    "boost": "cat /sys/devices/system/cpu/cpufreq/boost",
    "no_turbo": "cat /sys/devices/system/cpu/intel_pstate/no_turbo",
    "smt": "cat /sys/devices/system/cpu/smt/control",
    "isolated": "cat /sys/devices/system/cpu/isolated",
    "vulnerabilities": "grep -H . /sys/devices/system/cpu/vulnerabilities/*",
    "thp": "cat /sys/kernel/mm/transparent_hugepage/enabled",
    "clocksource": "cat /sys/devices/system/clocksource/clocksource0/current_clocksource",
    "meminfo": "grep -E '^(MemTotal|SwapTotal|HugePages_Total|Hugepagesize):' /proc/meminfo",
    "uptime": "cat /proc/uptime",
    "loadavg": "cat /proc/loadavg",
}

#: A shell function printing files with builtins only (no process per file): ``r FILE...``, unreadable ones skipped.
_READ_FUNCTION = ('r() { for f; do [ -r "$f" ] && while IFS= read -r l || [ -n "$l" ]; do printf \'%s\\n\' "$l"; '
                  'done < "$f"; done; }\n')

#: Sections of the digest (:func:`digest_script`): what can change without a reboot, read with builtins.
_DIGEST_SECTIONS: dict[str, str] = {
    "digest.kernel": "r /proc/sys/kernel/hostname /proc/sys/kernel/osrelease /proc/sys/kernel/version /proc/cmdline "
                     "/proc/sys/kernel/random/boot_id /etc/os-release",
    "digest.cpu": "r /sys/devices/system/cpu/online /sys/devices/system/cpu/isolated /sys/devices/system/cpu/smt/control "
                  "/sys/devices/system/cpu/cpufreq/boost /sys/devices/system/cpu/intel_pstate/no_turbo "
                  "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver /sys/devices/system/cpu/cpu0/microcode/version "
                  "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor "
                  "/sys/devices/system/cpu/vulnerabilities/*",
    "digest.affinity": "while IFS= read -r l; do case $l in Cpus_allowed_list:*) printf '%s\\n' \"$l\";; esac; "
                       "done < /proc/self/status",
    "digest.memory": "r /sys/kernel/mm/transparent_hugepage/enabled "
                     "/sys/devices/system/clocksource/clocksource0/current_clocksource; "
                     "while IFS= read -r l; do case $l in MemTotal:*|SwapTotal:*|HugePages_Total:*|Hugepagesize:*) "
                     "printf '%s\\n' \"$l\";; esac; done < /proc/meminfo",
}
#: The ``state`` a digest-only fingerprint records, read with builtins.
_DIGEST_STATE: dict[str, str] = {"uptime": "r /proc/uptime", "loadavg": "r /proc/loadavg"}

_MARKER = "@@perflab "
_SECTION_RE = re.compile(rf"^{_MARKER}(\S+)$", re.MULTILINE)
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+@:-]{0,63}$")
_VERSION_RE = re.compile(r"\d+(?:\.\d+)+(?:-[0-9][\w.+~]*)?|\d+")
_LSCPU_INTS = {"cpu.count", "cpu.threads_per_core", "cpu.cores_per_socket", "cpu.sockets", "cpu.numa_nodes"}
_LSCPU_KEYS = {"Model name": "cpu.model", "Vendor ID": "cpu.vendor", "Architecture": "cpu.arch",
               "CPU(s)": "cpu.count", "Thread(s) per core": "cpu.threads_per_core",
               "Core(s) per socket": "cpu.cores_per_socket", "Socket(s)": "cpu.sockets",
               "NUMA node(s)": "cpu.numa_nodes", "Hypervisor vendor": "cpu.hypervisor"}
_MEMINFO_KEYS = {"MemTotal": "memory.total", "SwapTotal": "memory.swap_total",
                 "HugePages_Total": "memory.hugepages", "Hugepagesize": "memory.hugepage_size"}


class FingerprintError(UserError, ValueError):
    """A fingerprint could not be collected, or a record is not a fingerprint of this schema."""


@dataclass(frozen=True)
class Difference:
    """One fact that differs: on one host before/after a block, or between two hosts.

    ``hosts`` has one name for a before/after change (``before`` and ``after`` are that
    host's values) and two for a mismatch between hosts (their values, in that order).
    ``None`` means the fact was absent.
    """

    key: str
    before: Any
    after: Any
    hosts: tuple[str, ...]

    def __str__(self) -> str:
        if len(self.hosts) == 1:
            return f"{self.hosts[0]}: {self.key} changed from {_show(self.before)} to {_show(self.after)}"
        first, second = self.hosts
        return f"{self.key} differs between hosts: {first}={_show(self.before)}, {second}={_show(self.after)}"


def _show(value: Any) -> str:
    return "absent" if value is None else repr(value)


def sectioned(commands: Mapping[str, str]) -> str:
    """One shell script running ``commands`` (section name -> command) in order, each after its marker line.

    Split the script's output with :func:`split_sections`. Names are letters, digits
    and ``._+@:-``; commands are inserted verbatim, so add redirections as needed.
    """
    parts = []
    for name, command in commands.items():
        _check_name(name, "section")
        parts.append(f"printf '\\n{_MARKER}%s\\n' {shlex.quote(name)}\n{command}")
    return "\n".join(parts) + "\ntrue\n"


def split_sections(output: str) -> dict[str, str]:
    """The text of each section of a :func:`sectioned` script's output, without surrounding blank lines."""
    pieces = _SECTION_RE.split(output)
    return {name: text.strip("\n") for name, text in zip(pieces[1::2], pieces[2::2])}


def script(interfaces: Sequence[str] = ("eth0",), tools: Sequence[str] = ()) -> str:
    """The fingerprint script for ``interfaces`` and the versions of ``tools`` (what :func:`collect` runs).

    ``tools`` are adapter names (see :mod:`perflab.tools`); each adds its adapter's
    ``version_command`` when that command's program exists on the host. A tool without a
    version command (parse-only tools, /proc readers) adds nothing. The script also prints
    the sections of :func:`digest_script`, so that a full fingerprint carries its digest.
    """
    commands = {name: f"{{ {cmd} ; }} 2>/dev/null" for name, cmd in _HOST_SECTIONS.items()}
    for iface in interfaces:
        commands |= _interface_sections(iface)
        commands[f"driver:{iface}"] = f"readlink /sys/class/net/{shlex.quote(iface)}/device/driver 2>/dev/null"
    for name in tools:
        _check_name(name, "tool")
        tool = _adapter(name)
        argv = tool.version_command
        if argv:
            commands[f"tool:{tool.name}"] = (f"if command -v {shlex.quote(argv[0])} >/dev/null 2>&1; then "
                                             f"{{ {shlex.join(argv)} ; }} </dev/null 2>&1 | head -n 5; fi")
        for daemon, (package, program) in DAEMONS.get(tool.name, {}).items():
            banner = f" || {shlex.quote(program)} --version </dev/null" if program else ""
            commands[f"daemon:{daemon}"] = (f"{{ dpkg-query -W -f '${{Version}}\\n' {shlex.quote(package)}{banner} ; }} "
                                            f"2>/dev/null | head -n 1")
    return _READ_FUNCTION + sectioned(commands | _digest_commands(tools))


def digest_script(interfaces: Sequence[str] = ("eth0",), tools: Sequence[str] = ()) -> str:
    """The cheap script whose output :func:`digest` reduces to one value (see the module docstring)."""
    commands: dict[str, str] = {}
    for iface in interfaces:
        commands |= _interface_sections(iface)
    state = {name: f"{{ {cmd} ; }} 2>/dev/null" for name, cmd in _DIGEST_STATE.items()}
    return _READ_FUNCTION + sectioned(commands | _digest_commands(tools) | state)


def _interface_sections(iface: str) -> dict[str, str]:
    """The sections reading one interface's settings (those the digest shares with the full script)."""
    _check_name(iface, "interface")
    q = shlex.quote(iface)
    sbin = 'PATH="$PATH:/usr/sbin:/sbin"'  # tc and ethtool, for an account whose PATH lacks them (Debian's users)
    return {f"link:{iface}": f"ip -j -d link show dev {q} 2>/dev/null",
            f"speed:{iface}": f"{{ r /sys/class/net/{q}/speed ; }} 2>/dev/null",
            f"qdisc:{iface}": f"{sbin} tc -j qdisc show dev {q} 2>/dev/null",
            f"offload:{iface}": f"{sbin} ethtool -k {q} 2>/dev/null"}


def _digest_commands(tools: Sequence[str]) -> dict[str, str]:
    """The host-wide digest sections, and the inode, size and time of the ``tools``' programs."""
    commands = {name: f"{{ {cmd} ; }} 2>/dev/null" for name, cmd in _DIGEST_SECTIONS.items()}
    programs = sorted({_adapter(t).version_command[0] for t in tools if _adapter(t).version_command}
                      | {program for t in tools for _, program in DAEMONS.get(_adapter(t).name, {}).values() if program})
    if programs:
        names = " ".join(shlex.quote(p) for p in programs)
        commands["digest.programs"] = (f"{{ set -- $(command -v {names}); [ $# -eq 0 ] || ls -lLi --full-time -- \"$@\" "
                                       f"|| ls -lLi -- \"$@\"; }} 2>/dev/null")
    return commands


def digest(output: str, interfaces: Sequence[str] = ("eth0",)) -> str:
    """The digest (SHA-256, hex) of a :func:`digest_script`'s or :func:`script`'s output: its ``digest.*``
    sections verbatim and each interface's facts but its driver (which only the full script reads)."""
    sec = split_sections(output)
    parts: dict[str, Any] = {k: v for k, v in sec.items() if k.startswith("digest.")}
    for iface in interfaces:
        facts = _interface(iface, sec, "digest")
        facts.pop(f"net.{iface}.driver", None)
        parts[f"net.{iface}"] = facts
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _adapter(name: str) -> _tools.Tool:
    try:
        return _tools.get(name)
    except KeyError as exc:
        raise FingerprintError(f"fingerprint: {exc.args[0]}; check the campaign's tool") from None


def _check_name(name: str, what: str) -> None:
    if not _NAME_RE.match(name):
        raise FingerprintError(f"{what} name {name!r}: expected letters, digits and ._+@:- only "
                               "(at most 64 characters, no spaces or shell syntax); check the campaign's "
                               "interfaces and tools")


def collect(host: Host, interfaces: Sequence[str] = ("eth0",), tools: Sequence[str] = (), *,
            phase: str = "", known: tuple[str, Mapping[str, Any]] | None = None) -> dict:
    """Fingerprint ``host`` in one round trip: host facts, ``interfaces`` and the versions of ``tools``.

    Pass the tools the campaign runs on that host (adapter names): probing others costs
    time per fingerprint and records facts no analysis compares. ``known`` is (where it is
    stored, fingerprint) of an earlier full fingerprint of this host with the same interfaces
    and tools: the digest is taken first, and while it is that fingerprint's, the result
    reuses its facts (``facts_from``; see the module docstring); else a full probe follows.

    Raises :class:`FingerprintError` when the script fails, :class:`perflab.hosts.remote.HostLost`
    with a one-line message naming the host and ``phase`` (e.g. ``"before block 3"``) when
    the host cannot be reached, and :class:`perflab.hosts.remote.HostError` for a refused host key.
    """
    if known is not None and known[1].get("digest"):
        res = _run(host, digest_script(interfaces, tools), phase)
        if res.ok:
            sec = split_sections(res.stdout)
            if digest(res.stdout, interfaces) == known[1]["digest"]:
                return {"format": fp_format.FORMAT, "host": host.name, "address": host.address,
                        "collected_at": dt.datetime.fromtimestamp(res.started, dt.timezone.utc).isoformat(),
                        "collect_seconds": round(res.ended - res.started, 6), "digest": known[1]["digest"],
                        "facts_from": known[1].get("facts_from") or known[0],
                        "facts": dict(known[1]["facts"]), "state": _state(sec),
                        "versions": dict(known[1].get("versions") or {})}
    res = _run(host, script(interfaces, tools), phase)
    if not res.ok:
        raise FingerprintError(f"host {host.name}: the fingerprint script exited {res.exit_code}: "
                               f"{res.stderr.strip()[:400] or 'no error output'}; check that /bin/sh works there")
    body = parse(res.stdout, source=f"host {host.name}")
    return {"format": fp_format.FORMAT, "host": host.name, "address": host.address,
            "collected_at": dt.datetime.fromtimestamp(res.started, dt.timezone.utc).isoformat(),
            "collect_seconds": round(res.ended - res.started, 6), "digest": digest(res.stdout, interfaces), **body}


def _run(host: Host, text: str, phase: str) -> Any:
    """Run a fingerprint script on ``host``; a lost host is named with ``phase`` in one line."""
    from .remote import HostLost

    try:
        return host.run(text, timeout=60)
    except HostLost as exc:
        raise HostLost(host.name, f"host {host.name} ({host.address}): lost while fingerprinting"
                       f"{' ' + phase if phase else ''}: {exc.reason}", exc.reason) from exc


def _state(sec: Mapping[str, str]) -> dict[str, Any]:
    """A fingerprint's ``state``: uptime and load averages."""
    load = sec.get("loadavg", "").split()
    return {"uptime_s": _float(sec.get("uptime", "").split()[:1]),
            "load": [float(x) for x in load[:3]] if len(load) >= 3 else None}


def parse(output: str, *, source: str = "") -> dict[str, Any]:
    """The ``facts``, ``state`` and ``versions`` of a fingerprint from the script's verbatim output."""
    sec = split_sections(output)
    if "hostname" not in sec or "uname" not in sec:
        raise FingerprintError(f"{source or '<output>'}: expected the fingerprint script's sections "
                               f"(hostname, uname, ...); found {sorted(sec) or 'none'}: {output[:120]!r}")
    facts: dict[str, Any] = {}
    uname = sec["uname"].splitlines() + [""] * 3
    facts |= {"hostname": _text(sec["hostname"]), "kernel.release": _text(uname[0]),
              "kernel.version": _text(uname[1]), "kernel.arch": _text(uname[2]),
              "kernel.cmdline": _text(sec.get("cmdline")), "kernel.boot_id": _text(sec.get("boot_id")),
              "kernel.clocksource": _text(sec.get("clocksource")),
              "os": _text(sec.get("os", "").partition("=")[2].strip().strip('"'))}
    facts |= _lscpu(sec.get("lscpu", ""))
    facts |= {"cpu.usable": _int(sec.get("nproc")),
              "cpu.microcode": _text(sec.get("microcode", "").partition(":")[2]),
              "cpu.governor": _text(",".join(sec.get("governor", "").split())),
              "cpu.freq_driver": _text(sec.get("cpufreq_driver")),
              "cpu.turbo": _turbo(sec.get("boost"), sec.get("no_turbo")),
              "cpu.smt": _text(sec.get("smt")),
              "cpu.isolated": _text(sec.get("isolated")),
              "memory.thp": _bracketed(sec.get("thp"))}
    for line in sec.get("vulnerabilities", "").splitlines():
        path, _, value = line.partition(":")
        facts[f"cpu.vulnerability.{path.rsplit('/', 1)[-1]}"] = _text(value)
    facts |= _meminfo(sec.get("meminfo", ""))
    versions: dict[str, str | None] = {}
    for name, text in sec.items():
        kind, _, item = name.partition(":")
        if kind == "link":
            facts |= _interface(item, sec, source)
        elif kind == "tool":
            first = _text(text.splitlines()[0] if text.strip() else "")
            versions[item] = first
            match = _VERSION_RE.search(first or "")
            facts[f"tool.{item}"] = match.group(0) if match else first
        elif kind == "daemon":
            versions[item] = facts[f"daemon.{item}"] = _text(text.splitlines()[0] if text.strip() else "")
    return {"facts": facts, "state": _state(sec), "versions": versions}


def _text(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


def _int(value: str | None) -> int | None:
    try:
        return int((value or "").strip())
    except ValueError:
        return None


def _float(words: list[str]) -> float | None:
    try:
        return float(words[0])
    except (IndexError, ValueError):
        return None


def _bracketed(value: str | None) -> str | None:
    match = re.search(r"\[(\w+)\]", value or "")
    return match.group(1) if match else _text(value)


def _turbo(boost: str | None, no_turbo: str | None) -> str | None:
    """``on``/``off`` from cpufreq's ``boost`` (1 = on) or intel_pstate's ``no_turbo`` (1 = off)."""
    states: dict[tuple[str, str | None], str] = {("boost", "1"): "on", ("boost", "0"): "off",
                                                 ("no_turbo", "0"): "on", ("no_turbo", "1"): "off"}
    return states.get(("boost", _text(boost))) or states.get(("no_turbo", _text(no_turbo)))


def _lscpu(text: str) -> dict[str, Any]:
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in found:
            found[key.strip()] = value.strip()
    return {key: (_int if key in _LSCPU_INTS else _text)(found.get(label)) for label, key in _LSCPU_KEYS.items()}


def _meminfo(text: str) -> dict[str, Any]:
    facts: dict[str, Any] = dict.fromkeys(_MEMINFO_KEYS.values())
    for line in text.splitlines():
        label, _, value = line.partition(":")
        words = value.split()
        if label in _MEMINFO_KEYS and words and words[0].isdigit():
            scale = 1024 if len(words) > 1 and words[1] == "kB" else 1
            facts[_MEMINFO_KEYS[label]] = int(words[0]) * scale
    return facts


def _interface(iface: str, sec: Mapping[str, str], source: str) -> dict[str, Any]:
    prefix = f"net.{iface}."
    facts: dict[str, Any] = {prefix + k: None for k in
                             ("mtu", "state", "kind", "driver", "txqlen", "tx_queues", "rx_queues", "speed", "qdisc")}
    text = sec.get(f"link:{iface}", "")
    if not text.strip():
        return facts
    try:
        link = json.loads(text)[0]
    except (ValueError, IndexError, KeyError) as exc:
        raise FingerprintError(f"{source or '<output>'}: section link:{iface}: expected `ip -j -d link` JSON; "
                               f"found {text[:120]!r} ({exc})") from None
    speed = _int(sec.get(f"speed:{iface}"))
    driver = _text(sec.get(f"driver:{iface}", "").rsplit("/", 1)[-1])
    facts |= {prefix + "mtu": link.get("mtu"), prefix + "state": link.get("operstate"),
              prefix + "kind": (link.get("linkinfo") or {}).get("info_kind"), prefix + "driver": driver,
              prefix + "txqlen": link.get("txqlen"), prefix + "tx_queues": link.get("num_tx_queues"),
              prefix + "rx_queues": link.get("num_rx_queues"),
              prefix + "speed": speed if speed is not None and speed > 0 else None,
              prefix + "qdisc": _qdisc(sec.get(f"qdisc:{iface}", ""), link.get("qdisc"))}
    for line in sec.get(f"offload:{iface}", "").splitlines():
        feature, _, value = line.strip().partition(":")
        if feature in OFFLOADS:
            facts[f"{prefix}offload.{feature}"] = value.split()[0] if value.split() else None
    return facts


def _qdisc(text: str, fallback: str | None) -> str | None:
    """The qdisc tree as one line: kind, place and options, without handles or reference counts."""
    try:
        qdiscs = json.loads(text)
    except ValueError:
        return fallback
    parts = []
    for q in qdiscs:
        place = "root" if q.get("root") else f"parent {q.get('parent')}"
        options = json.dumps(q.get("options") or {}, sort_keys=True, separators=(",", ":"))
        parts.append(f"{q.get('kind')} {place}" + ("" if options == "{}" else f" {options}"))
    return "; ".join(parts) or fallback


def _facts(fp: Any, where: str) -> dict[str, Any]:
    return dict(fp_format.check(fp, where)["facts"])


def diff(before: dict, after: dict) -> list[Difference]:
    """Every fact that differs between two fingerprints of one host, sorted by key."""
    old, new = _facts(before, "before"), _facts(after, "after")
    if before.get("host") != after.get("host"):
        raise FingerprintError(f"diff compares two fingerprints of one host; found host {before.get('host')!r} "
                               f"before and {after.get('host')!r} after. Use compare_hosts for different hosts")
    return [Difference(k, old.get(k), new.get(k), (str(before.get("host")),))
            for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)]


def compare_hosts(fps: Mapping[str, dict]) -> list[Difference]:
    """Facts in :data:`MATCH_KEYS` on which a host differs from the first host of ``fps`` (name -> fingerprint)."""
    facts = {name: _facts(fp, f"fingerprint of {name}") for name, fp in fps.items()}
    if len(facts) < 2:
        return []
    (ref, ref_facts), *others = facts.items()
    out = []
    for name, other in others:
        keys = sorted(k for k in ref_facts.keys() | other.keys() if any(fnmatch.fnmatchcase(k, p) for p in MATCH_KEYS))
        out += [Difference(k, ref_facts.get(k), other.get(k), (ref, name)) for k in keys
                if ref_facts.get(k) != other.get(k)]
    return out


def describe(differences: Sequence[Difference]) -> list[str]:
    """Each difference as a sentence, but one sentence per host and interface for its offloads, e.g.
    ``h1: eth1 offloads changed from unknown (not recorded) to tso off, gso off, gro off, lro off``.

    A fingerprint without an interface's offload facts (taken where ethtool was missing, as every
    fingerprint before the lab's links declared offloads) has them unknown, which differs from any
    recorded state: a comparison across it is refused like any other change of a matched fact."""
    entries: dict[tuple, list[Difference]] = {}
    for i, d in enumerate(differences):
        match = _OFFLOAD_KEY.match(d.key)
        entries.setdefault(("offloads", d.hosts, match.group(1)) if match else ("fact", i), []).append(d)
    out = []
    for key, diffs in entries.items():
        if key[0] == "fact":
            out.append(str(diffs[0]))
            continue
        hosts, iface = key[1:]
        before, after = _offloads_text(diffs, "before"), _offloads_text(diffs, "after")
        out.append(f"{hosts[0]}: {iface} offloads changed from {before} to {after}" if len(hosts) == 1 else
                   f"{iface} offloads differ between hosts: {hosts[0]} {before}; {hosts[1]} {after}")
    return out


def _offloads_text(diffs: Sequence[Difference], side: str) -> str:
    """The ``before`` or ``after`` offload states of one interface's differences, or unknown when none is recorded."""
    values = sorted(((d.key.rpartition(".offload.")[2], getattr(d, side)) for d in diffs),
                    key=lambda item: OFFLOADS.index(item[0]) if item[0] in OFFLOADS else len(OFFLOADS))
    if all(v is None for _, v in values):
        return "unknown (not recorded)"
    return ", ".join(f"{_SHORT.get(feature, feature)} {'unknown' if v is None else v}" for feature, v in values)


def summary(fp: Mapping[str, Any]) -> str:
    """One fingerprint's facts a reader needs to place a number, in a phrase: CPU, CPUs, SMT, hypervisor, kernel."""
    f = fp.get("facts", {})
    parts = [f.get("cpu.model") or "unknown CPU", f"{f['cpu.count']} CPUs" if f.get("cpu.count") else None,
             f"SMT {f['cpu.smt']}" if f.get("cpu.smt") else None,
             f"under {f['cpu.hypervisor']}" if f.get("cpu.hypervisor") else "no hypervisor",
             f"kernel {f['kernel.release']}" if f.get("kernel.release") else None]
    return f"{fp.get('host', '?')}: " + ", ".join(p for p in parts if p)
