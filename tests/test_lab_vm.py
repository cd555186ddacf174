"""A virtual lab host for real: a QEMU guest on a lab link, in its cgroup, with its disk, then gone after down."""

import os
import shutil
from pathlib import Path

import pytest

from helpers import ROOT_ONLY, leftovers
from perflab import inventory, labspec
from perflab.hosts import lab as lab_mod, remote

pytestmark = [ROOT_ONLY, pytest.mark.lab, pytest.mark.slow]

NAME = f"v{os.getpid() % 100000}"
TEXT = f"""\
format: 1
lab: {NAME}
links:
  lan: {{mtu: 9000, rate: 1gbit}}
hosts:
  h1: {{links: [lan]}}
  v1:
    links: [lan]
    cpuset: "0"
    vm: {{nic: e1000, cpu: qemu64, vcpus: 1, memory: 384M, cache: writeback}}
    devices:
      data: {{size: 64M, fs: ext4, options: noatime}}
"""


def test_a_virtual_host_boots_on_the_link_in_its_cgroup_and_goes_away():
    if not shutil.which(lab_mod.QEMU) or not list(Path("/boot").glob("vmlinuz-*")):
        pytest.skip("QEMU or a kernel image is missing (make deps)")
    lab = lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=TEXT))
    try:
        entries = inventory.load(lab.inventory_path)
        vm = entries["v1"].vm
        assert vm["nic"] == "e1000" and vm["cache"] == "writeback" and vm["memory"] == 384 << 20
        assert vm["emulated"] == (vm["accel"] == "tcg")
        guest = remote.Host(entries["v1"], connect_timeout=120)
        try:
            out = guest.check("hostname; readlink /sys/class/net/eth0/device/driver; grep -m1 'model name' /proc/cpuinfo;"
                              "ip -o link show dev eth0; tc qdisc show dev eth0; grep MemTotal /proc/meminfo", timeout=120)
            name, driver, model, link, qdisc, memory = out.splitlines()[:6]
            assert name == "v1" and driver.endswith("/e1000") and "QEMU Virtual CPU" in model
            assert "mtu 9000" in link and "tbf" in qdisc and "1Gbit" in qdisc
            assert 300 << 10 < int(memory.split()[1]) <= 384 << 10, "the guest sees its own memory size (kB)"
            assert "1 received" in guest.check(f"ping -M do -s 8972 -c 1 -W 10 {entries['h1'].address}", timeout=120)
            mount = entries["v1"].devices["data"]["mount"]
            assert guest.check(f"findmnt -n -o SOURCE,FSTYPE {mount}", timeout=120).split() == ["/dev/vda", "ext4"]
            guest.check(f"echo from-the-guest > {mount}/f && cat {mount}/f", timeout=120)
            assert guest.run("touch /usr/perflab-guest-write", timeout=120).exit_code != 0, "the shared root is read-only"
        finally:
            guest.close()
        use = lab_mod.usage(NAME, "v1")
        assert use.cpus == "0" and use.cpu_seconds > 1, "QEMU (the whole guest) runs in v1's cgroup"
        assert lab_mod.usage(NAME, "h1").cpu_seconds < use.cpu_seconds
        text = lab_mod.draw(lab_mod.status(NAME))
        assert "virtual host: " in text and "nic e1000, disk cache writeback" in text and "disk data: /dev/vda" in text
    finally:
        removed = lab_mod.down(NAME)
    assert any(r.startswith("virtual host v1") for r in removed)
    assert leftovers(NAME) == []
