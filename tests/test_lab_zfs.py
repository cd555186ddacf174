"""ZFS in user space on a real lab host: a zfs-fuse pool on a scratch device, fio through it, a clean down."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT_ONLY, leftovers
from perflab import inventory, labspec, tools
from perflab.hosts import lab as lab_mod, remote
from perflab.hosts.lab import zfs
from perflab.hosts.lab.sshd import sshd_pid

pytestmark = [ROOT_ONLY, pytest.mark.lab,
              pytest.mark.skipif(not shutil.which("zfs-fuse"), reason="zfs-fuse is not installed (make deps)")]

NAME = f"z{os.getpid() % 100000}"
TEXT = f"""\
format: 1
lab: {NAME}
links: {{lan: }}
hosts:
  h1:
    links: [lan]
    devices:
      ext4: {{size: 64M, fs: ext4, options: noatime, direct_io: true}}
      pool: {{size: 128M, fs: zfs, options: "atime=off,compression=off", direct_io: true}}
"""


def test_a_zfs_device_is_a_zfs_fuse_pool_of_its_host_and_gone_after_down():
    dirs_before = [d.exists() for d in zfs.RUN_DIRS]
    lab = lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=TEXT))
    try:
        pool = inventory.load(lab.inventory_path)["h1"].devices["pool"]
        assert pool["fs"] == "zfs" and zfs.daemon_pid(lab, "h1") is not None
        fio = tools.get("fio")
        params = {"rw": "randwrite", "bs": "4k", "size": "8M", "runtime": 1, "ioengine": "psync",
                  "filename": f"{pool['mount']}/f", "options": {"sync": 1}}
        with remote.connect(inventory.load(lab.inventory_path)) as hosts:
            seen = hosts["h1"].check(f"findmnt -n -o SOURCE,FSTYPE {pool['mount']}").split()
            assert seen == [zfs.pool_name(lab, "pool"), "fuse.zfs"], "the pool is mounted in the host's namespace"
            assert hosts["h1"].check(f"zfs get -H -o value atime,compression {zfs.pool_name(lab, 'pool')}").split() \
                == ["off", "off"]
            out = hosts["h1"].check(fio.commands(params, {})[0].line())
        rows = fio.parse(out)
        assert next(r.value for r in rows if r.metric == "iops" and "job" not in r.dims) > 0
        assert subprocess.run(["findmnt", pool["mount"]], capture_output=True).returncode != 0, \
            "the FUSE mount is not in the root namespace"
        daemon = zfs.daemon_pid(lab, "h1")
        lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=TEXT))
        assert zfs.daemon_pid(lab, "h1") == daemon, "a second up keeps the running daemon and its pool"
        text = lab_mod.draw(lab_mod.status(NAME))
        assert "disk pool:" in text and "zfs -o atime=off,compression=off" in text
    finally:
        removed = lab_mod.down(NAME)
    assert any(r.startswith("zfs-fuse ") for r in removed)
    assert leftovers(NAME) == []
    assert [d.exists() for d in zfs.RUN_DIRS] == dirs_before, "the daemon's directories are removed again"
    assert not Path("/run/zfs/zfs_socket").exists()


def test_an_exported_pool_is_imported_again_when_another_host_has_a_pool_of_the_same_name():
    """Two hosts' devices named alike make two pools of one name: bringing the lab up again imports each
    host's own (a scan of all of /dev found both, and zpool refused: "more than one matching pool")."""
    two = TEXT + """\
  h2:
    links: [lan]
    devices:
      pool: {size: 128M, fs: zfs, direct_io: true}
"""
    lab = lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=two))
    try:
        name = zfs.pool_name(lab, "pool")
        sshd = sshd_pid(lab, "h1")
        subprocess.run(["nsenter", "-t", str(sshd), "-m", "--", "zpool", "export", name], check=True)
        listed = ["nsenter", "-t", str(sshd), "-m", "--", "zpool", "list", "-H", "-o", "name,health"]
        assert subprocess.run(listed, capture_output=True, text=True).stdout.split() == []
        lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=two))
        assert subprocess.run(listed, capture_output=True, text=True, check=True).stdout.split() == [name, "ONLINE"]
    finally:
        lab_mod.down(NAME)
    assert leftovers(NAME) == []
