"""A user-space NFS server on a lab host: nfs-ganesha exporting scratch devices over VFS, with its rpcbind.

A lab file's ``nfs:`` section (:class:`~perflab.labspec.Nfs`) names the server host and the
devices of it to export (formatted ones: ext4, xfs, btrfs, or a zfs-fuse pool). Each device
is exported at the pseudo path ``/<device>`` for NFSv3 and NFSv4 (``Mount_Path_Pseudo``, so a
v3 client mounts the same path), read-write, without root squashing, AUTH_SYS, through
ganesha's VFS backend. NFSv3 needs rpcbind, whose socket and lock have fixed paths in
``/run``; so rpcbind and ganesha run in a mount namespace of their own under the host's, with
a private tmpfs on ``/run`` and the lab's state directory bound back in (ganesha's
configuration, logs, recovery directory and the exported mounts live there). Both run in
the server's network namespace and cgroups; ``Graceless`` and fixed ports (2049, mountd
20048) make a start deterministic and usable at once; NLM and RQUOTA are off. ``down`` stops
ganesha, then rpcbind, and their namespace goes with them, leaving nothing in ``/run``.
``docs/lab.md`` (NFS) says what this server is not (knfsd).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from ...labspec import Nfs
from . import model
from .cgroups import in_cgroups
from .model import Lab, LabError
from .sshd import sshd_pid

#: Debian packages of the server: nfs-ganesha with its VFS backend, and rpcbind for NFSv3.
DEBIAN_PACKAGES: tuple[str, ...] = ("nfs-ganesha", "nfs-ganesha-vfs", "rpcbind")
NFS_PORT, MOUNT_PORT = 2049, 20048
#: Seconds ganesha may take to say "NFS SERVER INITIALIZED" (about 1 s here with nothing else running), and to exit.
START_TIMEOUT, STOP_TIMEOUT = 30.0, 15.0
DAEMONS = ("ganesha", "rpcbind")
#: Started in the server's mount and network namespace: a child mount namespace with a private /run, the lab's
#: state directory (the working directory, $0) bound back in from before the tmpfs hid it, then rpcbind.
_RPCBIND = ('cd "$0" && exec unshare -m --propagation private sh -c \'mount -t tmpfs -o mode=0755,size=4m '
            'perflab-nfs /run && mkdir -p "$0" && mount -c --rbind . "$0" && mkdir /run/rpcbind && '
            '{ chown _rpc /run/rpcbind 2>/dev/null || true; } && '
            '{ rpcbind -f -w </dev/null >>"$1/rpcbind.log" 2>&1 & echo $! > "$1/rpcbind.pid"; }\' "$0" "$1"')


def spec(lab: Lab) -> Nfs:
    """The lab's ``nfs`` section; :class:`LabError` for a lab without one."""
    if lab.spec.nfs is None:
        raise LabError(f"lab {lab.name} has no NFS server; add an nfs section to its lab file")
    return lab.spec.nfs


def nfs_dir(lab: Lab) -> Path:
    """Where the server keeps its configuration, logs, pid files and NFSv4 recovery directory."""
    return lab.state_dir / spec(lab).server / "nfs"


def export_path(device: str) -> str:
    """The path a client mounts (NFSv3 and NFSv4) to reach the export of ``device``."""
    return f"/{device}"


def config(lab: Lab) -> str:
    """ganesha's configuration: fixed ports, no NLM/RQUOTA, graceless, one VFS export per device."""
    d = nfs_dir(lab)
    lines = ["NFS_CORE_PARAM {", "    Protocols = 3, 4;", f"    NFS_Port = {NFS_PORT};", f"    MNT_Port = {MOUNT_PORT};",
             "    Enable_NLM = false;", "    Enable_RQUOTA = false;", "    Mount_Path_Pseudo = true;", "}",
             "NFSV4 {", "    RecoveryBackend = fs;", f'    RecoveryRoot = "{d / "recovery"}";', "    Graceless = true;",
             "}", "LOG {", "    Default_Log_Level = EVENT;", "}"]
    for i, device in enumerate(spec(lab).exports, 1):
        lines += ["EXPORT {", f"    Export_Id = {i};", f'    Path = "{lab.mount_point(spec(lab).server, device)}";',
                  f'    Pseudo = "{export_path(device)}";', "    Protocols = 3, 4;", "    Access_Type = RW;",
                  "    Squash = No_Root_Squash;", "    SecType = sys;", "    FSAL {", "        Name = VFS;", "    }", "}"]
    return "\n".join(lines) + "\n"


def daemon_pid(lab: Lab, daemon: str) -> int | None:
    """The pid of the server's ``ganesha`` or ``rpcbind`` when it runs."""
    try:
        pid = int((nfs_dir(lab) / f"{daemon}.pid").read_text().split()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    return pid


def _wait(lab: Lab, what: str, daemon: str, test) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not test():
        if daemon_pid(lab, daemon) is None or time.monotonic() > deadline:
            raise LabError(f"lab {lab.name}: NFS server on {spec(lab).server}: {what} did not happen within "
                           f"{START_TIMEOUT:.0f} s; its logs: {nfs_dir(lab)}")
        time.sleep(0.05)


def up(lab: Lab, state: dict) -> None:
    """Start the lab's rpcbind and ganesha (those not running) and wait until ganesha serves."""
    server, d = spec(lab).server, nfs_dir(lab)
    sshd = sshd_pid(lab, server)
    if sshd is None:
        raise LabError(f"lab {lab.name}: host {server}: its sshd is not running; bring the lab up again")
    (d / "recovery").mkdir(parents=True, exist_ok=True)
    (d / "ganesha.conf").write_text(config(lab))
    procs = [Path(p) / "cgroup.procs" for p in state["cgroups"].get(server, {}).values()]
    if daemon_pid(lab, "ganesha") is not None:
        return
    rpcbind = daemon_pid(lab, "rpcbind")
    if rpcbind is None:
        in_cgroups(procs, "nsenter", "-t", str(sshd), "-m", "-n", "--", "sh", "-c", _RPCBIND, str(lab.state_dir), str(d))
        rpcbind = daemon_pid(lab, "rpcbind")
        if rpcbind is None:
            raise LabError(f"lab {lab.name}: NFS server on {server}: rpcbind exited at once; its log: "
                           f"{d / 'rpcbind.log'}")
        _wait(lab, "rpcbind opening its socket", "rpcbind",
              lambda: Path("/proc", str(rpcbind), "root", "run", "rpcbind.sock").exists())
    log = d / "ganesha.log"
    log.unlink(missing_ok=True)
    in_cgroups(procs, "nsenter", "-t", str(rpcbind), "-m", "-n", "--", "sh", "-c",
               'p=$1; shift; "$@" </dev/null >>"$0" 2>&1 & echo $! > "$p"', str(d / "ganesha.out"),
               str(d / "ganesha.pid"), "ganesha.nfsd", "-F", "-f", str(d / "ganesha.conf"), "-L", str(log),
               "-p", str(d / "ganesha.pid"))
    _wait(lab, "ganesha saying NFS SERVER INITIALIZED", "ganesha",
          lambda: log.exists() and "NFS SERVER INITIALIZED" in log.read_text(errors="replace"))


def down(lab: Lab) -> list[str]:
    """Stop ganesha, then rpcbind (SIGTERM, then SIGKILL after :data:`STOP_TIMEOUT`); what was stopped."""
    removed: list[str] = []
    if lab.spec.nfs is None:
        return removed
    for daemon in DAEMONS:
        pid = daemon_pid(lab, daemon)
        if pid is None:
            continue
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        while daemon_pid(lab, daemon) == pid:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + STOP_TIMEOUT
            time.sleep(0.05)
        removed.append(f"{daemon} {pid} on {spec(lab).server}")
    return removed


def traces(name: str) -> list[str]:
    """ganesha and rpcbind processes of lab ``name`` still running (their mount table holds the lab's directory)."""
    where = f" {model.STATE_ROOT / name} "
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            if comm in ("ganesha.nfsd", "rpcbind") and where in Path(f"/proc/{pid}/mountinfo").read_text():
                found.append(f"process {pid} {comm}")
        except OSError:
            continue
    return found


def draw(lab: Lab) -> list[str]:
    """Text lines for ``perflab lab status``: the daemons and the exports."""
    nfs = spec(lab)
    alive = ", ".join(f"{d} {daemon_pid(lab, d) or 'NOT running'}" for d in DAEMONS)
    exports = ", ".join(f"{export_path(dev)} ({next(x.fs for x in lab.described(nfs.server).devices if x.name == dev)})"
                        for dev in nfs.exports)
    return [f"  nfs: server {nfs.server} ({alive}), NFSv3 and v4 on port {NFS_PORT}; exports {exports}"]
