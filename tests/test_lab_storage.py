"""Per-host scratch devices on a real lab: loop devices, mkfs, mounts private to the host, clean down."""

import os
import subprocess

import pytest

from helpers import ROOT_ONLY, leftovers
from perflab import inventory, labspec
from perflab.hosts import lab as lab_mod, remote

pytestmark = [ROOT_ONLY, pytest.mark.lab]

NAME = f"s{os.getpid() % 100000}"
TEXT = f"""\
format: 1
lab: {NAME}
links: {{lan: }}
hosts:
  h1:
    links: [lan]
    devices:
      data: {{size: 64M, fs: ext4, options: noatime}}
      raw: {{size: 16M, direct_io: true}}
  h2:
    links: [lan]
    devices:
      data: {{size: 300M, fs: xfs, options: "noatime,nodiscard"}}
"""


def _attached(path) -> list[str]:
    return subprocess.run(["losetup", "-n", "-O", "NAME", "-j", str(path)], capture_output=True, text=True).stdout.split()


def test_devices_are_made_mounted_inside_their_host_and_gone_after_down():
    lab = lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=TEXT))
    files = [lab.device_file(h, d) for h, d in (("h1", "data"), ("h1", "raw"), ("h2", "data"))]
    try:
        entries = inventory.load(lab.inventory_path)
        d1, d2 = entries["h1"].devices["data"], entries["h2"].devices["data"]
        assert d1["fs"] == "ext4" and d2["fs"] == "xfs" and "mount" not in entries["h1"].devices["raw"]
        assert all(len(_attached(f)) == 1 for f in files)
        assert os.stat(files[0]).st_blocks * 512 < 64 << 20, "the backing file is sparse"
        with remote.connect(entries) as hosts:
            seen = {h: hosts[h].check(f"findmnt -n -o SOURCE,FSTYPE,OPTIONS {entries[h].devices['data']['mount']}")
                    for h in ("h1", "h2")}
            assert seen["h1"].split()[:2] == [d1["device"], "ext4"] and "noatime" in seen["h1"]
            assert seen["h2"].split()[:2] == [d2["device"], "xfs"] and "noatime" in seen["h2"]
            for h in ("h1", "h2"):
                mount = entries[h].devices["data"]["mount"]
                hosts[h].check(f"echo written-on-{h} > {mount}/f && sync")
                assert hosts[h].check(f"cat {mount}/f").strip() == f"written-on-{h}"
            other = hosts["h2"].run(f"findmnt -n {d1['mount']}")
            assert other.exit_code != 0, "h1's mount is private to h1's mount namespace"
            assert hosts["h1"].check(f"blockdev --getsize64 {entries['h1'].devices['raw']['device']}").strip() \
                == str(16 << 20)
        assert subprocess.run(["findmnt", d1["mount"]], capture_output=True).returncode != 0, "not in the root namespace"
        sshd = (lab.state_dir / "h1" / "sshd.pid").read_text().split()[0]
        subprocess.run(["nsenter", "-t", sshd, "-m", "umount", d1["mount"]], check=True)
        subprocess.run(["losetup", "-d", d1["device"]], check=True)
        lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=TEXT))
        with remote.connect(inventory.load(lab.inventory_path), ["h1"]) as hosts:
            again = inventory.load(lab.inventory_path)["h1"].devices["data"]["mount"]
            assert hosts["h1"].check(f"cat {again}/f").strip() == "written-on-h1", "up reattached without mkfs"
        text = lab_mod.draw(lab_mod.status(NAME))
        assert f"disk data: {d2['device']} 300 MiB xfs -o noatime,nodiscard" in text and "raw, direct I/O" in text
    finally:
        removed = lab_mod.down(NAME)
    assert sum(r.startswith("loop ") for r in removed) == 3
    assert all(_attached(f) == [] and not f.exists() for f in files)
    assert leftovers(NAME) == []
