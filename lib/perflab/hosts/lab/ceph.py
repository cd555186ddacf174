"""A real Ceph cluster on the lab: monitor, manager, BlueStore OSDs and client keys, up and down.

A lab file's ``ceph:`` section (:class:`~perflab.labspec.Ceph`) names the host of the
monitor ``mon.a`` and the manager ``mgr.x``, the OSD hosts with one OSD per device class
(``hdd``/``ssd``, each its own CRUSH device class) and the client hosts. The cluster is
made as Ceph's own development clusters are (``src/vstart.sh``): cephx keys with
``ceph-authtool``, a monmap with the monitor's v2 and v1 addresses, ``ceph-mon --mkfs``,
then per OSD ``ceph osd new``, ``ceph-osd --mkfs --mkkey --no-mon-config`` and
``ceph auth add``. Every daemon runs in its host's network namespace and cgroups, like the
host's sshd; an HDD-like OSD is also in a blkio cgroup of its own whose throttle makes it an
EMULATED hard disk. Everything (configuration, keys, daemon data, BlueStore block files,
logs, sockets) lives under ``<lab state>/ceph/``, so the lab's ``down`` removes it with the
state directory; this module removes the blkio cgroups. ``docs/lab.md`` (Ceph) describes it.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
import uuid
from pathlib import Path

from ...labspec import Ceph, CephOsd
from . import model
from .cgroups import in_cgroups, rmdir_cgroup
from .model import Lab, LabError
from .sshd import sshd_pid
from .state import write_state

log = logging.getLogger(__name__)

#: Debian packages of the cluster's daemons and command-line clients (Ceph 16.2 in Debian 12).
DEBIAN_PACKAGES: tuple[str, ...] = ("ceph-mon", "ceph-osd", "ceph-mgr", "ceph-common")
#: The blkio (cgroup v1) throttle of an HDD-like OSD: the disk campaigns' emulated HDD.
HDD_THROTTLE = {"blkio.throttle.read_iops_device": 400, "blkio.throttle.write_iops_device": 200,
                "blkio.throttle.read_bps_device": 200 << 20, "blkio.throttle.write_bps_device": 100 << 20}
BLKIO_ROOT = Path("/sys/fs/cgroup/blkio")
#: The client.admin keyring's name in the configuration directory (where Ceph's clients look by default).
ADMIN_KEYRING = "ceph.client.admin.keyring"
#: Client options kept in the monitor's configuration database, so a campaign's setup step can change
#: them (``ceph config set client rbd_cache true``): librbd's cache off, to measure the OSDs.
CLIENT_CONFIG = {"rbd_cache": "false"}
#: Seconds the cluster may take from the first daemon to HEALTH_OK (a busy 2-vCPU machine).
HEALTH_TIMEOUT = 180.0


class CephLabError(LabError):
    """The lab's Ceph cluster could not be made or inspected; the message says what to do."""


def cluster_dir(lab: Lab) -> Path:
    """Where the lab's cluster keeps its configuration, keys, daemon data and logs."""
    return lab.state_dir / "ceph"


def conf_path(lab: Lab) -> Path:
    """The cluster's ``ceph.conf``, seen as ``/etc/ceph/ceph.conf`` on the cluster's lab hosts."""
    return cluster_dir(lab) / "etc" / "ceph.conf"


def _ceph_cmd(lab: Lab, *argv: str, timeout: float = 60.0) -> str:
    """Run the ``ceph`` CLI against the lab's cluster from the controller (on the lab's bridge); its stdout."""
    cmd = ["ceph", "-c", str(conf_path(lab)), "--connect-timeout", "20", *argv]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CephLabError(f"`{' '.join(cmd)}` did not finish within {timeout:.0f} s; see the logs in "
                           f"{cluster_dir(lab) / 'log'}") from None
    if proc.returncode != 0:
        raise CephLabError(f"`{' '.join(cmd)}` failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    return proc.stdout


def _run(*argv: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CephLabError(f"`{' '.join(argv)}` failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    return proc.stdout


def _spec(lab: Lab) -> Ceph:
    """The lab's ``ceph:`` section; this module's callers act only on a lab that has one."""
    if lab.spec.ceph is None:
        raise AssertionError(f"lab {lab.name} has no ceph section: the caller should not have come here (a bug)")
    return lab.spec.ceph


def _conf(lab: Lab, fsid: str, osd_ids: dict[str, int]) -> str:
    """The cluster's ceph.conf: paths under the lab's state, the monitor's address, bounded memory."""
    c, ceph = cluster_dir(lab), _spec(lab)
    mon = lab.host(ceph.mon)
    lines = ["[global]", f"fsid = {fsid}", f"mon host = [v2:{mon.address}:3300,v1:{mon.address}:6789]",
             f"public network = {lab.link(mon.ports[0].link).network}",
             "auth cluster required = cephx", "auth service required = cephx", "auth client required = cephx",
             "auth allow insecure global id reclaim = false",
             f"run dir = {c}/run", "admin socket = $run_dir/$cluster-$name.asok", "pid file = $run_dir/$name.pid",
             f"log file = {c}/log/$name.log", "crash dir = " + str(c / "crash"), f"keyring = {c}/etc/{ADMIN_KEYRING}",
             # one copy per OSD host (CRUSH's failure domain), at most the usual three
             f"osd pool default size = {min(3, len({o.host for o in ceph.osds}))}", "osd pool default min size = 1",
             "osd pool default pg autoscale mode = off",
             "osd crush chooseleaf type = 1", "mon allow pool size one = true", "mon allow pool delete = true",
             # the machine's disk is shared and often more than 70 % full: only warn when it is nearly full
             "mon data avail warn = 5", "mon data avail crit = 2",
             # campaigns make pools of size 1 on purpose (the per-class OSD baseline)
             "mon warn on pool no redundancy = false",
             "mgr initial modules = iostat", "ms bind ipv6 = false",
             "",
             "[mon]", f"mon data = {c}/mon.$id", "",
             "[mgr]", f"mgr data = {c}/mgr.$id", f"keyring = {c}/mgr.$id/keyring", "",
             "[osd]", f"osd data = {c}/osd.$id", f"keyring = {c}/osd.$id/keyring", "osd objectstore = bluestore",
             "bluestore block create = true",
             f"osd memory target = {ceph.osd_memory_target}", "osd class update on start = false",
             "bluestore fsck on mount = false", ""]
    for osd in ceph.osds:
        key = f"{osd.host}/{osd.device_class}"
        if key in osd_ids:
            lines += [f"[osd.{osd_ids[key]}]", f"bluestore block size = {osd.size}",
                      f"crush location = root=default host={osd.host}",
                      f"bluestore debug enforce settings = {osd.device_class}", ""]
    return "\n".join(lines)


def _netns_cmd(lab: Lab, state: dict, host: str, *argv: str, extra_procs: tuple[Path, ...] = ()) -> None:
    """Start a daemon (``argv``, which forks into the background) in ``host``'s namespace and cgroups."""
    procs = [Path(d) / "cgroup.procs" for d in state["cgroups"].get(host, {}).values()] + list(extra_procs)
    in_cgroups(procs, "ip", "netns", "exec", lab.host(host).netns, *argv)


def _pid(lab: Lab, name: str) -> int | None:
    """The pid of daemon ``name`` (``mon.a``, ``osd.3``) when it runs."""
    try:
        pid = int((cluster_dir(lab) / "run" / f"{name}.pid").read_text().split()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    return pid


def _wait(what: str, test, timeout: float) -> None:
    """Wait until ``test()`` is true, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            raise CephLabError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(0.2)


def _start(lab: Lab, state: dict, host: str, name: str, argv: tuple[str, ...], extra: tuple[Path, ...] = ()) -> None:
    if _pid(lab, name) is None:
        _netns_cmd(lab, state, host, *argv, "-c", str(conf_path(lab)), extra_procs=extra)
        _wait(f"{name} writing its pid file", lambda: _pid(lab, name) is not None, 30.0)


def _disk_device() -> str | None:
    """``major:minor`` of the whole disk holding the lab's state (where the block files live), or None."""
    st = os.stat(model.STATE_ROOT)
    dev = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if not dev.exists():
        return None
    if (dev / "partition").exists():
        dev = dev.resolve().parent
    return (dev / "dev").read_text().strip()


def _blkio_dir(lab: Lab, osd: CephOsd) -> Path:
    return BLKIO_ROOT / "perflab" / lab.name / f"{osd.host}-{osd.device_class}"


def _throttle(lab: Lab, osd: CephOsd, state: dict) -> tuple[Path, ...]:
    """The cgroup.procs of an HDD-like OSD's throttled blkio cgroup (made here), or () when none can be made."""
    device = state["ceph"].get("throttled_device")
    if osd.device_class != "hdd" or device is None or not BLKIO_ROOT.is_dir():
        return ()
    d = _blkio_dir(lab, osd)
    d.mkdir(parents=True, exist_ok=True)
    for name, value in HDD_THROTTLE.items():
        (d / name).write_text(f"{device} {value}")
    return (d / "cgroup.procs",)


def up(lab: Lab, state: dict) -> str:
    """Make (or complete) the cluster of ``lab`` and wait for HEALTH_OK; return the health line.

    ``state`` is the lab's state (its cgroups); what is made is recorded in ``state["ceph"]``
    through ``save`` as it is made, so a second ``up`` completes a cluster instead of remaking it.
    """
    ceph, c = _spec(lab), cluster_dir(lab)
    cs = state.setdefault("ceph", {})
    cs.setdefault("fsid", str(uuid.uuid4()))
    cs.setdefault("osds", {})
    cs.setdefault("throttled_device", _disk_device())
    write_state(lab.state_dir, state)
    for sub in ("run", "log", "crash", "etc"):
        (c / sub).mkdir(parents=True, exist_ok=True)
    conf_path(lab).write_text(_conf(lab, cs["fsid"], cs["osds"]))
    keyring = c / "etc" / ADMIN_KEYRING
    if not (c / "mon.a" / "done").exists():
        _run("ceph-authtool", "--create-keyring", str(keyring), "--gen-key", "-n", "mon.", "--cap", "mon", "allow *")
        _run("ceph-authtool", str(keyring), "--gen-key", "-n", "client.admin", "--cap", "mon", "allow *",
             "--cap", "osd", "allow *", "--cap", "mds", "allow *", "--cap", "mgr", "allow *")
        mon = lab.host(ceph.mon).address
        _run("monmaptool", "--create", "--clobber", "--fsid", cs["fsid"], "--addv", "a",
             f"[v2:{mon}:3300,v1:{mon}:6789]", str(c / "monmap"))
        _run("ceph-mon", "-c", str(conf_path(lab)), "--mkfs", "-i", "a", "--monmap", str(c / "monmap"),
             "--keyring", str(keyring))
        (c / "mon.a" / "done").write_text("")
    _start(lab, state, ceph.mon, "mon.a", ("ceph-mon", "-i", "a"))
    for option, value in CLIENT_CONFIG.items():
        _ceph_cmd(lab, "config", "set", "client", option, value)
    _etc_ceph(lab)
    (c / "mgr.x").mkdir(exist_ok=True)
    if not (c / "mgr.x" / "keyring").exists():
        _ceph_cmd(lab, "auth", "get-or-create", "mgr.x", "mon", "allow profile mgr", "osd", "allow *",
                  "mds", "allow *", "-o", str(c / "mgr.x" / "keyring"))
    _start(lab, state, ceph.mon, "mgr.x", ("ceph-mgr", "-i", "x"))
    for osd in ceph.osds:
        _osd_up(lab, state, osd)
    _wait("every OSD up and in", lambda: _osds_up(lab) == len(ceph.osds), HEALTH_TIMEOUT)
    for osd in ceph.osds:
        n = cs["osds"][f"{osd.host}/{osd.device_class}"]
        classes = json.loads(_ceph_cmd(lab, "osd", "crush", "get-device-class", f"osd.{n}", "-f", "json") or "[]")
        if classes != [osd.device_class]:
            if classes:
                _ceph_cmd(lab, "osd", "crush", "rm-device-class", f"osd.{n}")
            _ceph_cmd(lab, "osd", "crush", "set-device-class", osd.device_class, f"osd.{n}")
    return wait_healthy(lab)


def _etc_ceph(lab: Lab) -> None:
    """Show the cluster's configuration directory as ``/etc/ceph`` in the cluster hosts' mount namespaces.

    ``ceph``, ``rados``, ``rbd`` and fio's rbd engine on those hosts then find the cluster as a
    real client does (``/etc/ceph/ceph.conf`` and the admin keyring), and campaigns name no path.
    """
    ceph = _spec(lab)
    for host in dict.fromkeys((ceph.mon, *ceph.clients, *(o.host for o in ceph.osds))):
        pid = sshd_pid(lab, host)
        if pid is None:
            raise CephLabError(f"lab {lab.name}: host {host}: its sshd is not running; bring the lab up again")
        if " /etc/ceph " not in Path(f"/proc/{pid}/mountinfo").read_text():
            _run("nsenter", "-t", str(pid), "-m", "--", "mount", "--bind", str(conf_path(lab).parent), "/etc/ceph")


def _osd_up(lab: Lab, state: dict, osd: CephOsd) -> None:
    """Create (once) and start one OSD, recording its id in the state as soon as the monitor gives it."""
    cs, key = state["ceph"], f"{osd.host}/{osd.device_class}"
    c = cluster_dir(lab)
    if key not in cs["osds"]:
        osd_uuid = str(uuid.uuid4())
        cs["osds"][key] = int(_ceph_cmd(lab, "osd", "new", osd_uuid).strip())
        cs.setdefault("uuids", {})[key] = osd_uuid
        write_state(lab.state_dir, state)
    n = cs["osds"][key]
    conf_path(lab).write_text(_conf(lab, cs["fsid"], cs["osds"]))
    data = c / f"osd.{n}"
    if not (data / "done").exists():
        data.mkdir(exist_ok=True)
        # without --no-mon-config, --mkfs fails to fetch the mon config, exits 0 and creates nothing
        _run("ceph-osd", "-c", str(conf_path(lab)), "-i", str(n), "--mkfs", "--mkkey", "--osd-uuid",
             cs["uuids"][key], "--no-mon-config")
        _ceph_cmd(lab, "auth", "add", f"osd.{n}", "osd", "allow *", "mon", "allow profile osd", "mgr",
                  "allow profile osd", "-i", str(data / "keyring"))
        (data / "done").write_text("")
    _start(lab, state, osd.host, f"osd.{n}", ("ceph-osd", "-i", str(n)), _throttle(lab, osd, state))


def _osds_up(lab: Lab) -> int:
    stat = json.loads(_ceph_cmd(lab, "osd", "stat", "-f", "json"))
    return min(stat["num_up_osds"], stat["num_in_osds"])


def health(lab: Lab) -> dict:
    """``ceph health detail`` of the lab's cluster as JSON (``status`` and ``checks``)."""
    return json.loads(_ceph_cmd(lab, "health", "detail", "-f", "json", timeout=30.0))


def wait_healthy(lab: Lab, timeout: float = HEALTH_TIMEOUT) -> str:
    """Wait until the cluster says HEALTH_OK; its health line, or :class:`CephLabError` naming the checks."""
    deadline = time.monotonic() + timeout
    while True:
        h = health(lab)
        if h["status"] == "HEALTH_OK":
            return "HEALTH_OK"
        if time.monotonic() > deadline:
            checks = "; ".join(f"{k}: {v['summary']['message']}" for k, v in h.get("checks", {}).items())
            raise CephLabError(f"lab {lab.name}: Ceph is {h['status']} after {timeout:.0f} s ({checks}); its logs: "
                               f"{cluster_dir(lab) / 'log'}")
        time.sleep(1.0)


def summary(lab: Lab) -> str:
    """One line for ``perflab lab up``: the cluster's health, its OSDs per class and its ceph.conf."""
    classes = [o.device_class for o in _spec(lab).osds]
    per_class = ", ".join(f"{classes.count(k)} {k}" for k in sorted(set(classes)))
    return (f"ceph: {health(lab)['status']}, {_osds_up(lab)} of {len(classes)} OSDs up and in ({per_class}); "
            f"conf {conf_path(lab)}")


def down(lab: Lab, state: dict) -> list[str]:
    """Remove what the lab's ``down`` does not: the HDD-like OSDs' blkio cgroups (their processes are gone)."""
    removed: list[str] = []
    if lab.spec.ceph is None:
        return removed
    for osd in lab.spec.ceph.osds:
        d = _blkio_dir(lab, osd)
        if d.exists():
            for name in HDD_THROTTLE:
                device = state.get("ceph", {}).get("throttled_device")
                if device:
                    (d / name).write_text(f"{device} 0")
            rmdir_cgroup(d)
            removed.append(f"cgroup {d}")
    for d in (BLKIO_ROOT / "perflab" / lab.name, BLKIO_ROOT / "perflab"):
        if d.exists() and not any(p.is_dir() for p in d.iterdir()):
            rmdir_cgroup(d)
    return removed


def traces(name: str) -> list[str]:
    """Anything of lab ``name``'s cluster still on the machine: its directory (keys, block files, daemon
    data), blkio cgroups, Ceph processes and mounts of its configuration directory."""
    c = model.STATE_ROOT / name / "ceph"
    found = [f"Ceph directory {c}"] if c.exists() else []
    found += [f"cgroup {BLKIO_ROOT / 'perflab' / name}"] if (BLKIO_ROOT / "perflab" / name).exists() else []
    procs = subprocess.run(["pgrep", "-af", f"^ceph-.*{c}/"], capture_output=True, text=True).stdout.splitlines()
    found += [f"process {line}" for line in procs]
    mounts = {line.split()[4] for pid in os.listdir("/proc") if pid.isdigit()
              for line in _mountinfo(pid) if f"{c}/" in line + "/"}
    return found + [f"mount {m}" for m in sorted(mounts)]


def _mountinfo(pid: str) -> list[str]:
    """The mount table of process ``pid`` (empty when it has exited meanwhile)."""
    try:
        return Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
    except OSError:
        return []


def status(lab: Lab, state: dict) -> dict:
    """The cluster's daemons (pid or None) and, when the monitor answers, its health and OSD tree."""
    cs = state.get("ceph", {})
    daemons = {"mon.a": _pid(lab, "mon.a"), "mgr.x": _pid(lab, "mgr.x"),
               **{f"osd.{n}": _pid(lab, f"osd.{n}") for n in cs.get("osds", {}).values()}}
    out = {"conf": str(conf_path(lab)), "daemons": daemons, "osds": cs.get("osds", {}),
           "throttled_device": cs.get("throttled_device"), "health": None}
    if daemons["mon.a"]:
        try:
            out["health"] = health(lab)["status"]
        except CephLabError as exc:
            out["health"] = f"unknown ({exc})"
    return out


def draw(lab: Lab, ceph_status: dict) -> list[str]:
    """Text lines of :func:`status` for ``perflab lab status``."""
    ceph = _spec(lab)

    def alive(name: str) -> str:
        pid = ceph_status["daemons"].get(name)
        return f"{name} {pid}" if pid else f"{name} NOT running"

    out = [f"  ceph: {ceph_status['health'] or 'monitor not running'}; conf {ceph_status['conf']}",
           f"    {ceph.mon}: {alive('mon.a')}, {alive('mgr.x')}"]
    for osd in ceph.osds:
        n = ceph_status["osds"].get(f"{osd.host}/{osd.device_class}")
        throttle = ", EMULATED HDD (blkio throttle)" if osd.device_class == "hdd" and ceph_status["throttled_device"] \
            else ""
        out.append(f"    {osd.host}: {alive(f'osd.{n}') if n is not None else 'osd not created'} class "
                   f"{osd.device_class}, block file {osd.size >> 30} GiB{throttle}")
    if ceph.clients:
        out.append(f"    clients: {', '.join(ceph.clients)} (/etc/ceph there is {conf_path(lab).parent})")
    return out
