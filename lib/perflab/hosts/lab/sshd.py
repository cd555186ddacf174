"""Each lab host's sshd, in the host's namespaces and cgroups, with keys made for the lab."""

from __future__ import annotations

import os
import shutil
import socket
import time
from pathlib import Path

from .cgroups import in_cgroups
from .model import Lab, LabError, LabHost
from .shell import sh

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def sshd_pid(lab: Lab, host: str) -> int | None:
    """The pid of the host's sshd (a virtual host: of its QEMU) when it runs."""
    pidfile = "qemu.pid" if lab.described(host).vm else "sshd.pid"
    try:
        pid = int((lab.state_dir / host / pidfile).read_text().split()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    return pid


def sshd_config(lab: Lab, host: LabHost) -> str:
    """The sshd configuration of a lab host: its addresses, host key and the lab's authorized keys.

    ``SetEnv SHLVL=1``: the login shell that runs each command of a lab host starts one level up, so that bash,
    which sources ``~/.bashrc`` for a command sshd starts at level 1, does not: the lab's hosts share the machine's
    accounts, and a command there must not depend on (nor wait for) what that account's interactive start-up does
    (a version manager's set-up took 150 ms per command channel on one machine)."""
    hdir = lab.state_dir / host.name
    pidfile = "/tmp/sshd.pid" if lab.described(host.name).vm else f"{hdir}/sshd.pid"
    return "\n".join([
        *(f"ListenAddress {p.address}" for p in host.ports), "Port 22",
        f"HostKey {hdir}/ssh_host_ed25519_key", f"PidFile {pidfile}",
        f"AuthorizedKeysFile {lab.state_dir}/authorized_keys",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", "UseDNS no",
        "PrintMotd no", "MaxSessions 64", "MaxStartups 200:30:400", "LogLevel ERROR",
        "SetEnv SHLVL=1", "Subsystem sftp internal-sftp", "",
    ])


def keygen(path: Path, comment: str) -> None:
    """Make an ed25519 key pair at ``path`` unless it exists."""
    if not path.exists():
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path))


def wait_port(address: str, port: int = 22, timeout: float = 10.0, alive=lambda: True) -> None:
    """Wait until an sshd answers at ``address``; fail early once ``alive()`` says its process is gone."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((address, port), timeout=1.0) as sock:
                if sock.recv(4).startswith(b"SSH"):
                    return
        except OSError:
            pass
        if time.monotonic() > deadline or not alive():
            raise LabError(f"sshd at {address}:{port} did not answer within {timeout:.0f}s"
                           f"{'' if alive() else ': its process is gone'}")
        time.sleep(0.05)


def sshd_up(lab: Lab, host: LabHost, cgroup_procs: list[Path]) -> int:
    """Start the host's sshd (unless running) in its own UTS and mount namespace and cgroups; its pid."""
    hdir = lab.state_dir / host.name
    keygen(hdir / "ssh_host_ed25519_key", f"perflab-{lab.name}-{host.name}")
    (hdir / "sshd_config").write_text(sshd_config(lab, host))
    pid = sshd_pid(lab, host.name)
    if pid is None:
        sh(SSHD, "-t", "-f", str(hdir / "sshd_config"))
        # Join the cgroups first: `ip netns exec` hides /sys/fs/cgroup behind a fresh sysfs.
        in_cgroups(cgroup_procs, "ip", "netns", "exec", host.netns, "unshare", "--uts", "--mount", "--propagation",
                    "private", "sh", "-c", 'hostname "$0" && exec "$1" -f "$2"', host.name, SSHD,
                    str(hdir / "sshd_config"))
        deadline = time.monotonic() + 10
        while (pid := sshd_pid(lab, host.name)) is None:
            if time.monotonic() > deadline:
                raise LabError(f"lab {lab.name}: host {host.name}: sshd wrote no pid file within 10 s")
            time.sleep(0.01)
    return pid
