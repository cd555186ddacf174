"""ZFS in user space on a lab host: a zfs-fuse daemon, one pool per ``fs: zfs`` scratch device, down again.

The kernel here has no ZFS module, so a device with ``fs: zfs`` is a pool of Debian's
zfs-fuse (ZFS pool version 23 through FUSE): the host's daemon runs in the host's network and
mount namespace (that of its sshd, so the host's commands see the FUSE mounts) and cgroups;
the pool sits on the device's loop device and its root dataset is mounted at the device's
usual mount point. The daemon's socket and lock (``/run/zfs``, ``/run/lock/zfs``, fixed
paths) are private tmpfs mounts of the host's mount namespace, so hosts and labs do not share
a daemon; the two directories are made on the machine when missing and removed again when
the last lab using them is down. Pools are made with ``cachefile=none`` and exported by
``down`` before the daemon is stopped. ``docs/lab.md`` (ZFS) says what pool v23 lacks.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from ...labspec import Device, HostSpec
from . import model
from .cgroups import in_cgroups
from .model import Lab, LabError
from .shell import sh
from .sshd import sshd_pid
from .state import write_state

#: Debian packages of ZFS in user space (the daemon and its zpool/zfs commands).
DEBIAN_PACKAGES: tuple[str, ...] = ("zfs-fuse",)
#: The daemon's fixed directories: its socket, and its lock.
RUN_DIRS = (Path("/run/zfs"), Path("/run/lock/zfs"))
#: Inside a host (on its private /run/zfs): a directory per device with a link to that device alone, to import from.
IMPORT_DIR = Path("/run/zfs/import")
#: Seconds the daemon may take to open its socket, and to unmount and exit after SIGTERM (5-7 s seen).
START_TIMEOUT, STOP_TIMEOUT = 15.0, 20.0


def devices(host: HostSpec) -> tuple[Device, ...]:
    """The host's scratch devices that are ZFS pools."""
    return tuple(d for d in host.devices if d.fs == "zfs")


def pool_name(lab: Lab, device: str) -> str:
    """The pool of a host's ``fs: zfs`` device (pools are per daemon, so per host)."""
    return f"{lab.name}-{device}"


def pid_file(lab: Lab, host: str) -> Path:
    """Where the lab records the pid of a host's zfs-fuse daemon."""
    return lab.state_dir / host / "zfs-fuse.pid"


def daemon_pid(lab: Lab, host: str) -> int | None:
    """The pid of the host's zfs-fuse daemon when it runs."""
    try:
        pid = int(pid_file(lab, host).read_text().split()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    return pid


def _in_host(pid: int, *argv: str, check: bool = True):
    """Run ``argv`` in the mount namespace of the host whose sshd is ``pid`` (where its pools are mounted)."""
    return sh("nsenter", "-t", str(pid), "-m", "--", *argv, check=check)


def up(lab: Lab, host: HostSpec, sshd: int, state: dict) -> None:
    """Start the host's zfs-fuse daemon (unless running) and make or import the pool of each ``fs: zfs`` device.

    ``sshd`` is the pid of the host's sshd (its mount namespace); ``state`` is the lab's state,
    whose ``formatted`` list records each pool once it is made.
    """
    if not devices(host):
        return
    made = state.setdefault("zfs_run_dirs", [])
    for d in RUN_DIRS:
        if not d.exists():
            d.mkdir(parents=True)
            made.append(str(d))
            write_state(lab.state_dir, state)
    mounted = Path(f"/proc/{sshd}/mountinfo").read_text()
    for d in RUN_DIRS:
        if f" {d} " not in mounted:
            _in_host(sshd, "mount", "-t", "tmpfs", "-o", "mode=0755,size=1m", "perflab-zfs", str(d))
    if daemon_pid(lab, host.name) is None:
        procs = [Path(d) / "cgroup.procs" for d in state["cgroups"].get(host.name, {}).values()]
        log = lab.state_dir / host.name / "zfs-fuse.log"
        # --pidfile names the lab in the daemon's command line (traces); the daemon writes none in the foreground
        in_cgroups(procs, "nsenter", "-t", str(sshd), "-m", "-n", "--", "sh", "-c",
                   'p=$1; shift; "$@" </dev/null >>"$0" 2>&1 & echo $! > "$p"', str(log), str(pid_file(lab, host.name)),
                   "zfs-fuse", "--pidfile", str(pid_file(lab, host.name)), "--no-daemon", "--no-kstat-mount")
        socket = Path("/proc", str(sshd), "root", "run", "zfs", "zfs_socket")
        deadline = time.monotonic() + START_TIMEOUT
        while not socket.exists():
            if daemon_pid(lab, host.name) is None or time.monotonic() > deadline:
                raise LabError(f"lab {lab.name}: host {host.name}: zfs-fuse did not open its socket within "
                               f"{START_TIMEOUT:.0f} s; its output: {log} (its errors go to syslog)")
            time.sleep(0.05)
    imported = _in_host(sshd, "zpool", "list", "-H", "-o", "name").stdout.split()
    for dev in devices(host):
        key, pool = f"{host.name}/{dev.name}", pool_name(lab, dev.name)
        loop = state["loops"][key]
        if pool in imported:
            continue
        if key in state["formatted"]:
            # import from a directory holding only this device: a scan of /dev also finds the other hosts'
            # pools, which have the same name, and zpool then refuses ("more than one matching pool")
            only = IMPORT_DIR / dev.name
            _in_host(sshd, "mkdir", "-p", str(only))
            _in_host(sshd, "ln", "-sfn", loop, str(only / dev.name))
            _in_host(sshd, "zpool", "import", "-d", str(only), "-o", "cachefile=none", pool)
            continue
        props = [a for p in (dev.options.split(",") if dev.options else ()) for a in ("-O", p)]
        _in_host(sshd, "zpool", "create", "-f", "-o", "cachefile=none", *props, "-m",
                 str(lab.mount_point(host.name, dev.name)), pool, loop)
        state["formatted"].append(key)
        write_state(lab.state_dir, state)


def down(lab: Lab, state: dict) -> list[str]:
    """Export every pool and stop every zfs-fuse daemon of the lab (before its namespaces go); what was stopped.

    The daemons are sent SIGTERM together and then waited for (each takes 5-7 s to unmount and exit)."""
    stopping = {}
    for host in lab.spec.hosts:
        pid = daemon_pid(lab, host.name)
        if pid is None:
            continue
        sshd = sshd_pid(lab, host.name)
        for dev in devices(host):
            if sshd:
                _in_host(sshd, "zpool", "export", "-f", pool_name(lab, dev.name), check=False)
        os.kill(pid, signal.SIGTERM)
        stopping[host] = pid
    deadline = time.monotonic() + STOP_TIMEOUT
    while any(daemon_pid(lab, h.name) == pid for h, pid in stopping.items()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [f"zfs-fuse {pid} on {h.name} ({', '.join(pool_name(lab, d.name) for d in devices(h))})"
            for h, pid in stopping.items()]


def release_run_dirs(state: dict) -> list[str]:
    """Remove the daemon directories this lab made on the machine, unless another lab still has ZFS devices."""
    others = [p for p in model.STATE_ROOT.glob("*/state.json") if p.parent.name != state["name"]
              and '"fs": "zfs"' in p.read_text()]
    if others:
        return []
    removed = []
    for d in map(Path, reversed(state.get("zfs_run_dirs", []))):
        if d.is_dir():
            d.rmdir()  # empty: the daemon's socket and lock were in the host's tmpfs over it
            removed.append(f"directory {d}")
    return removed


def traces(name: str) -> list[str]:
    """zfs-fuse daemons of lab ``name`` still running (found by the pid file path in their command line)."""
    procs = sh("pgrep", "-af", f"^zfs-fuse .*{model.STATE_ROOT}/{name}/", check=False).stdout.splitlines()
    return [f"process {line}" for line in procs]

