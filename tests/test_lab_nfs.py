"""Seed 000's storage lab for real: an NFS server (ganesha + rpcbind) exporting ext4 and a zfs-fuse pool, the
study's NFS and ext4-vs-ZFS campaigns cut to one short sample per backend through the runner, and a clean down."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT_ONLY, leftovers
from perflab import campaign as campaign_mod, inventory, labspec, runner, tidy
from perflab.hosts import lab as lab_mod
from perflab.hosts.lab import nfs, zfs

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGNS = ROOT / "studies/000-cedri/campaigns"
NAME = f"n{os.getpid() % 100000}"

pytestmark = [ROOT_ONLY, pytest.mark.lab,
              pytest.mark.skipif(not all(map(shutil.which, ("ganesha.nfsd", "rpcbind", "zfs-fuse"))),
                                 reason="nfs-ganesha, rpcbind or zfs-fuse is not installed (make deps)")]


@pytest.fixture(scope="module")
def storage_lab():
    """The study's storage lab under a name of this test process, with small devices."""
    # edited as text: a PyYAML round trip would turn the file's YAML 1.2 `offloads: off` into `false`
    text = (ROOT / "labs/000-cedri-storage.yaml").read_text()
    assert "lab: cedrist\n" in text and "size: 512M" in text
    text = text.replace("lab: cedrist\n", f"lab: {NAME}\n").replace("size: 512M", "size: 128M")
    lab = lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=text))
    try:
        yield lab
    finally:
        removed = lab_mod.down(NAME)
        assert {r.split()[0] for r in removed} >= {"ganesha", "rpcbind", "zfs-fuse"}
        assert leftovers(NAME) == [], f"lab {NAME} left things behind"
        assert not any(Path("/run").glob("rpcbind.*")) and not Path("/run/ganesha").exists(), "nothing in /run"


def _cut(campaign: Path, lab, tmp_path: Path, grid: str, edits: dict[str, str]) -> campaign_mod.Campaign:
    """The study campaign as text with ``grid`` for its factors, one 1-s sample per cell, this lab's paths."""
    text = campaign.read_text().replace("/run/perflab/cedrist/", f"{lab.state_dir}/")
    text = text[:text.index("factors:")] + grid + text[text.index("repetitions:"):]
    for old, new in {f"campaign: {campaign.stem}": f"campaign: t000-{campaign.stem}-{NAME}",
                     "fingerprints: true": "fingerprints: false", **edits}.items():
        assert text.count(old) == 1, f"the campaign changed: {old!r} is not there once"
        text = text.replace(old, new)
    for pattern, new in ((r"runtime: \d+", "runtime: 1"), (r"^repetitions: \d+$", "repetitions: 1"),
                         (r"^warmups: \d+$", "warmups: 0")):
        text, count = re.subn(pattern, new, text, flags=re.M)
        assert count == 1, f"the campaign changed: {pattern!r} is not there once"
    path = tmp_path / campaign.name
    path.write_text(text)
    return campaign_mod.load(path)


def _iops(raw_dir: Path, tool: str, factor: str) -> dict[str, float]:
    """The summary IOPS of ``tool`` per level of ``factor`` (one sample each)."""
    table, quarantined = tidy.frame(raw_dir)
    assert quarantined.empty
    rows = table[(table.metric == "iops") & (table.tool == tool)]
    rows = rows[rows["job"].isna()] if "job" in rows else rows
    return dict(zip(rows[factor], rows.value))


def test_nfs_grid_serves_ext4_and_zfs_exports_over_nfsv3(storage_lab, tmp_path):
    text = lab_mod.draw(lab_mod.status(NAME))
    assert "nfs: server h2 (ganesha " in text and "exports /ext4 (ext4), /zfs (zfs)" in text
    assert nfs.daemon_pid(storage_lab, "ganesha") and zfs.daemon_pid(storage_lab, "h2")
    c = _cut(CAMPAIGNS / "cedri-nfs-confirm.yaml", storage_lab, tmp_path,
             "factors:\n  backend:\n    - {label: ext4, set: {export: ext4}}\n    - {label: zfs, set: {export: zfs}}\n"
             "  rw: [randwrite]\n  link: [direct1500]\n", {"size: 16777216": "size: 1048576"})
    summary = runner.run(c, inventory.load(storage_lab.inventory_path), tmp_path / "raw", stream=open(os.devnull, "w"))
    assert summary.complete and not summary.failed
    iops = _iops(summary.raw_dir, "nfsbench", "backend")
    assert set(iops) == {"ext4", "zfs"} and min(iops.values()) > 0
    for backend in ("ext4", "zfs"):  # what the client wrote is on the server's file system, seen from the server
        mount = storage_lab.mount_point("h2", backend)
        sshd = (storage_lab.state_dir / "h2" / "sshd.pid").read_text().split()[0]
        listing = subprocess.run(["nsenter", "-t", sshd, "-m", "ls", str(mount)], capture_output=True, text=True)
        assert "perflab-nfsbench-15.dat" in listing.stdout.split()


def test_ext4_vs_zfs_campaign_writes_through_a_zfs_fuse_pool(storage_lab, tmp_path):
    c = _cut(CAMPAIGNS / "cedri-zfs-confirm.yaml", storage_lab, tmp_path,
             "factors:\n  fs:\n"
             f"    - {{label: ext4, set: {{filename: {storage_lab.state_dir}/h1/mnt/ext4/cedri-zfs.dat}}}}\n"
             f"    - {{label: zfs, set: {{filename: {storage_lab.state_dir}/h1/mnt/zfs/cedri-zfs.dat}}}}\n"
             "  mode:\n    - {label: write-sync, set: {rw: randwrite, direct: 0, options: {sync: 1}}}\n",
             {"size: 256M": "size: 8M", "ramp_time: 1": "ramp_time: 0"})
    summary = runner.run(c, inventory.load(storage_lab.inventory_path), tmp_path / "raw", stream=open(os.devnull, "w"))
    assert summary.complete and not summary.failed
    iops = _iops(summary.raw_dir, "fio", "fs")
    assert set(iops) == {"ext4", "zfs"} and min(iops.values()) > 0
