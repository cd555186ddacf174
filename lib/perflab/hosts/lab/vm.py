"""Virtual hosts: QEMU guests on taps of their links, booted from this machine's kernel and root file system."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
from pathlib import Path

from ...files import atomic_write
from ...labspec import Vm
from .cgroups import in_cgroups
from .model import Lab, LabError, LabHost
from .net import offloads_argv, shaper
from .shell import sh
from .sshd import SSHD, keygen, sshd_config, sshd_pid
from .storage import guest_device

QEMU = "qemu-system-x86_64"
#: Modules the guest's initramfs loads to mount the machine's root file system over virtio 9p.
VM_ROOT_MODULES = ("kernel/fs/9p/9p.ko", "kernel/net/9p/9pnet_virtio.ko", "kernel/drivers/virtio/virtio_pci.ko")
#: How long a virtual host may take to boot to its sshd (TCG emulation on a busy machine is slow).
VM_BOOT_TIMEOUT = 300.0
#: The initramfs's /init: mount the machine's root over 9p read-only and run the guest's init from it.
VM_INITRAMFS_INIT = """#!/bin/busybox sh
/bin/busybox mkdir -p /proc /dev /newroot
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs dev /dev
for m in $(/bin/busybox cat /modules); do /bin/busybox insmod "/lib/$m"; done
/bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000 rootfs /newroot || /bin/busybox poweroff -f
/bin/busybox umount /proc
exec /bin/busybox switch_root /newroot /bin/sh "$@"
"""


def vm_accel(vm: Vm) -> str:
    """The accelerator a guest runs with: its ``accel``, or for ``auto`` KVM when the CPU has
    hardware virtualization (vmx/svm flags and /dev/kvm), else TCG (emulation)."""
    if vm.accel != "auto":
        return vm.accel
    hardware = re.search(r"^flags\b.*\b(vmx|svm)\b", Path("/proc/cpuinfo").read_text(), re.M)
    return "kvm" if hardware and os.path.exists("/dev/kvm") else "tcg"


def vm_kernel(vm: Vm) -> tuple[Path, str]:
    """The kernel image a guest boots and its release, whose modules must be installed."""
    if vm.kernel:
        images = [Path(vm.kernel)]
    else:
        images = sorted(Path("/boot").glob("vmlinuz-*"),
                        key=lambda p: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", p.name)], reverse=True)
    for image in images:
        release = image.name.removeprefix("vmlinuz-")
        if image.exists() and (Path("/lib/modules") / release / "modules.dep").exists():
            return image, release
    raise LabError(f"no kernel for virtual hosts: {vm.kernel or '/boot/vmlinuz-*'} with its modules in /lib/modules "
                   "is needed; install linux-image-amd64 (`make deps`) or set vm.kernel")


def _initramfs(lab: Lab, release: str) -> Path:
    """A small initramfs (static busybox and the 9p and virtio modules of ``release``), made once per lab."""
    out = lab.state_dir / f"initramfs-{release}.gz"
    if out.exists():
        return out
    busybox = shutil.which("busybox")
    linked = busybox and sh("ldd", busybox, check=False)
    if not linked or "not a dynamic executable" not in linked.stdout + linked.stderr:
        raise LabError("virtual hosts need a static busybox; install busybox-static (`make deps`)")
    moddir = Path("/lib/modules") / release
    deps = {k: v.split() for k, _, v in (line.partition(":") for line in (moddir / "modules.dep").read_text().splitlines())}
    order: list[str] = []

    def visit(module: str) -> None:
        for dep in reversed(deps.get(module, [])):
            visit(dep)
        if module in deps and module not in order:
            order.append(module)

    for module in VM_ROOT_MODULES:
        visit(module)
    tree = lab.state_dir / "initramfs"
    (tree / "bin").mkdir(parents=True, exist_ok=True)
    (tree / "lib").mkdir(exist_ok=True)
    shutil.copy(str(busybox), tree / "bin" / "busybox")
    for module in order:
        shutil.copy(moddir / module, tree / "lib")
    (tree / "modules").write_text("".join(f"{Path(m).name}\n" for m in order))
    (tree / "init").write_text(VM_INITRAMFS_INIT)
    (tree / "init").chmod(0o755)
    atomic_write(out, lambda tmp: sh("sh", "-c", 'cd "$1" && find . | cpio -o -H newc --quiet | gzip -1 > "$2"',
                                     "sh", str(tree), str(tmp)))
    shutil.rmtree(tree)
    return out


def _guest_init(lab: Lab, host: LabHost, routes: list[tuple[str, str, str]]) -> str:
    """The guest's init (run by the machine's /bin/sh from the read-only root): mounts, network, disks, sshd."""
    described, q = lab.described(host.name), shlex.quote
    assert described.vm is not None, f"{host.name} is not a virtual host"
    fs_modules = sorted({d.fs for d in described.devices if d.fs})
    lines = ["#!/bin/sh", "# init of a perflab virtual host, written by `perflab lab up`",
             "mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev 2>/dev/null",
             "mkdir -p /dev/pts; mount -t devpts devpts /dev/pts",
             "mount -t tmpfs -o mode=1777 tmpfs /tmp; mount -t tmpfs -o mode=755 tmpfs /run/sshd",
             f"hostname {q(host.name)}",
             f"modprobe -a {'virtio_net' if described.vm.nic == 'virtio' else 'e1000'} virtio_blk sch_tbf "
             f"{' '.join(fs_modules)}", "ip link set lo up"]
    for port in host.ports:
        link = lab.link(port.link)
        lines += [f"ip link set {port.ifname} mtu {link.mtu} up", f"ip addr add {port.address}/24 dev {port.ifname}"]
        if offloads_argv(link, port.ifname):
            lines.append(shlex.join(offloads_argv(link, port.ifname)))
        if link.rate:
            lines.append(shlex.join(("tc", "qdisc", "replace", "dev", port.ifname, "root", *shaper(link.rate))))
    lines += [f"ip route replace {network} via {via} dev {ifname}" for network, via, ifname in routes]
    for i, dev in enumerate(described.devices):
        if dev.fs:
            options = f" -o {q(dev.options)}" if dev.options else ""
            lines.append(f"mount -t {dev.fs}{options} {guest_device(i)} {q(str(lab.mount_point(host.name, dev.name)))}")
    lines.append(f"exec {SSHD} -D -e -f {q(str(lab.state_dir / host.name / 'sshd_config'))}")
    return "\n".join(lines) + "\n"


def vm_up(lab: Lab, host: LabHost, routes: list[tuple[str, str, str]], cgroup_procs: list[Path],
           vm_state: dict) -> int:
    """Boot the virtual host (unless its QEMU runs) in its cgroups; the QEMU pid."""
    vm, hdir = lab.described(host.name).vm, lab.state_dir / host.name
    assert vm is not None, f"{host.name} is not a virtual host"
    keygen(hdir / "ssh_host_ed25519_key", f"perflab-{lab.name}-{host.name}")
    (hdir / "sshd_config").write_text(sshd_config(lab, host))
    (hdir / "guest-init.sh").write_text(_guest_init(lab, host, routes))
    pid = sshd_pid(lab, host.name)
    if pid is not None:
        return pid
    if re.search(r"[\s,]", str(lab.state_dir)):
        raise LabError(f"{lab.state_dir}: virtual hosts need a state directory without spaces or commas "
                       "(set PERFLAB_LAB_DIR)")
    kernel = Path(vm_state["kernel"])
    argv = [QEMU, "-name", f"perflab-{lab.name}-{host.name}", "-machine", "pc", "-accel", vm_state["accel"],
            "-cpu", vm.cpu, "-smp", str(vm.vcpus), "-m", f"{vm.memory >> 20}M", "-nodefaults", "-no-reboot",
            "-display", "none", "-monitor", "none", "-serial", f"file:{hdir}/console.log",
            "-daemonize", "-pidfile", f"{hdir}/qemu.pid", "-kernel", str(kernel),
            "-initrd", str(_initramfs(lab, kernel.name.removeprefix("vmlinuz-"))),
            "-append", f"console=ttyS0 quiet net.ifnames=0 panic=-1 -- {hdir}/guest-init.sh",
            "-fsdev", "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap",
            "-device", "virtio-9p-pci,fsdev=root,mount_tag=rootfs"]
    for k, port in enumerate(host.ports):
        mac = "52:54:" + ":".join(f"{b:02x}" for b in hashlib.sha256(port.veth.encode()).digest()[:4])
        argv += ["-netdev", f"tap,id=n{k},ifname={port.veth},script=no,downscript=no",
                 "-device", f"{'virtio-net-pci' if vm.nic == 'virtio' else 'e1000'},netdev=n{k},mac={mac}"]
    for dev in lab.described(host.name).devices:
        argv += ["-drive", f"file={lab.device_file(host.name, dev.name)},format=raw,if=virtio,cache={vm.cache}"]
    in_cgroups(cgroup_procs, *argv)
    pid = sshd_pid(lab, host.name)
    if pid is None:
        raise LabError(f"lab {lab.name}: host {host.name}: QEMU wrote no pid file; see {hdir}/console.log")
    return pid
