"""Each lab host's scratch devices: sparse files on loop devices, formatted once and mounted inside the host."""

from __future__ import annotations

import time
from pathlib import Path

from ...labspec import HostSpec
from .model import Lab, LabError
from .shell import sh
from .state import write_state


def loops_of(path: Path) -> list[str]:
    """Loop devices attached to ``path`` (whatever the state file says)."""
    out = sh("losetup", "-n", "-O", "NAME", "-j", str(path), check=False).stdout
    return out.split()


def devices_up(lab: Lab, state: dict) -> None:
    """Attach (and once format) each host's scratch devices; record each loop device and file system at once."""
    for host in lab.spec.hosts:
        for dev in host.devices:
            path, key = lab.device_file(host.name, dev.name), f"{host.name}/{dev.name}"
            if not path.exists():
                with open(path, "wb") as f:
                    f.truncate(dev.size)
            if host.vm:  # QEMU opens the file itself: a virtio disk of the guest
                lab.mount_point(host.name, dev.name).mkdir(parents=True, exist_ok=True)
                target = str(path)
            else:
                loops = loops_of(path)
                if not loops:
                    loops = [sh("losetup", "--find", "--show", f"--direct-io={'on' if dev.direct_io else 'off'}",
                                 str(path)).stdout.strip()]
                    state["loops"][key] = loops[0]
                    write_state(lab.state_dir, state)
                target = loops[0]
            if dev.fs and dev.fs != "zfs" and key not in state["formatted"]:  # a pool is made by lab.zfs
                sh(f"mkfs.{dev.fs}", "-q", {"ext4": "-F", "xfs": "-f", "btrfs": "-f"}[dev.fs], *dev.mkfs, target)
                state["formatted"].append(key)
                write_state(lab.state_dir, state)


def mounts_up(lab: Lab, host: HostSpec, sshd_pid: int, loops: dict[str, str]) -> None:
    """Mount a host's formatted scratch devices inside its mount namespace (that of its sshd)."""
    mounted = Path(f"/proc/{sshd_pid}/mountinfo").read_text()
    for dev in host.devices:
        target = lab.mount_point(host.name, dev.name)
        target.mkdir(parents=True, exist_ok=True)
        if dev.fs and dev.fs != "zfs" and f" {target} " not in mounted:
            sh("nsenter", "-t", str(sshd_pid), "-m", "--", "mount", "-t", dev.fs,
                *(("-o", dev.options) if dev.options else ()), loops[f"{host.name}/{dev.name}"], str(target))


def detach(loop: str, timeout: float = 5.0) -> None:
    """Detach a loop device, waiting while the kernel finishes unmounting it (a namespace just died)."""
    deadline = time.monotonic() + timeout
    while sh("losetup", "-d", loop, check=False).returncode != 0:
        if time.monotonic() > deadline:
            raise LabError(f"loop device {loop} stays busy; find its user with `fuser -m {loop}`, then "
                           f"`losetup -d {loop}`")
        time.sleep(0.05)


def guest_device(index: int) -> str:
    """The device name of a virtual host's ``index``-th disk."""
    return f"/dev/vd{'abcdefghijklmnopqrstuvwxyz'[index]}"
