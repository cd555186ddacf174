"""A real Ceph cluster on the lab: study 001's lab file up to HEALTH_OK, a rados bench and a fio rbd sample
through perflab, and nothing left behind by ``down`` (processes, mounts, block files, keys, cgroups, namespaces)."""

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT_ONLY, leftovers
from perflab import inventory, labspec, tools
from perflab.hosts import lab as lab_mod, remote
from perflab.hosts.lab import ceph as cephlab

pytestmark = [ROOT_ONLY, pytest.mark.lab, pytest.mark.slow,
              pytest.mark.skipif(not all(map(shutil.which, ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph"))),
                                 reason="Ceph's packages are not installed (make deps)")]

ROOT = Path(__file__).resolve().parent.parent
#: The shipped Ceph lab (tests/test_lab_spec.py leaves it to this test: one cluster brought up, not two).
SHIPPED = ROOT / "labs" / "001-ceph.yaml"
NAME = f"c{os.getpid() % 100000}"
# The smallest cluster that shows every part, for the failure half way: monitor and manager, one
# HDD-like OSD (throttled), a client.
LAB = f"""\
format: 1
lab: {NAME}
links: {{lan: }}
hosts:
  mon: {{links: [lan], memory: 1G}}
  osd1: {{links: [lan], memory: 2G}}
  client: {{links: [lan], memory: 1G}}
ceph:
  mon: mon
  clients: [client]
  osd_memory_target: 768M
  osds:
    osd1: {{hdd: 2G}}
"""
SETUP = """\
setup:
  - on: client
    run: ceph osd pool create perflab-t 8 8 --size 1
    verify: 'test "$(ceph osd pool get perflab-t size)" = "size: 1"'
teardown:
  - on: client
    run: ceph osd pool rm perflab-t perflab-t --yes-i-really-really-mean-it
    verify: "! ceph osd pool ls | grep -qx perflab-t"
"""
RADOS = """\
campaign: t-rados
benchmark: {tool: rados_bench, params: {pool: perflab-t, seconds: 1, concurrent: 4, object_size: 64K}}
hosts: {client: client}
factors: {mode: [write]}
repetitions: 1
warmups: 0
monitors: false
"""
FIO = """\
campaign: t-fio
benchmark:
  tool: fio
  params: {ioengine: rbd, runtime: 1, rw: randwrite, bs: 4k,
           options: {clientname: admin, pool: perflab-t, rbdname: img}}
hosts: {client: client}
factors: {iodepth: [4]}
repetitions: 1
warmups: 0
monitors: false
"""
FIO_SETUP = SETUP.replace("--size 1\n", "--size 1 && rbd pool init perflab-t && rbd create perflab-t/img --size 64M\n")


def _run(campaign: Path, inv: Path, raw: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "perflab.cli", "run", str(campaign), "--inventory", str(inv),
                           "--raw", str(raw)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [sample] = (raw / campaign.stem.replace("_", "-")).glob("samples/*/stdout")
    return sample.read_text()


def test_ceph_lab_up_bench_down_leaves_nothing(tmp_path):
    spec = dataclasses.replace(labspec.load(SHIPPED), name=NAME)
    lab = lab_mod.bring_up(spec)
    try:
        assert cephlab.health(lab)["status"] == "HEALTH_OK"
        fsid = cephlab.conf_path(lab).read_text().split("fsid = ")[1].split()[0]
        lab_mod.bring_up(spec)  # idempotent: the same cluster, not a second set of OSDs
        assert cephlab.conf_path(lab).read_text().split("fsid = ")[1].split()[0] == fsid
        assert cephlab._ceph_cmd(lab, "osd", "ls").split() == [str(i) for i in range(6)]
        drawn = lab_mod.draw(lab_mod.status(NAME))
        assert "ceph: HEALTH_OK" in drawn and "osd.5" in drawn and "EMULATED HDD" in drawn
        entries = inventory.load(lab.inventory_path)
        with remote.connect(entries) as hosts:  # each host answers SSH under its name; the client finds the
            assert {n: h.check("hostname").strip() for n, h in hosts.items()} == {n: n for n in entries}
            classes = [hosts["client"].check(f"ceph osd crush get-device-class osd.{i}").split()[-1]  # /etc/ceph
                       for i in (0, 1)]
            assert classes == ["hdd", "ssd"], "the lab file's order: osd1's hdd, then its ssd"
        (tmp_path / "t-rados.yaml").write_text(RADOS + SETUP)
        (tmp_path / "t-fio.yaml").write_text(FIO + FIO_SETUP)
        rados = {m.metric: m.value for m in tools.get("rados_bench").parse(
            _run(tmp_path / "t-rados.yaml", lab.inventory_path, tmp_path / "raw"), source="rados")
            if "interval_start" not in m.dims}
        assert rados["op_size"] == 65536 and rados["ops"] > 0
        fio = [m for m in tools.get("fio").parse(_run(tmp_path / "t-fio.yaml", lab.inventory_path, tmp_path / "raw"),
                                                 source="fio") if m.metric == "iops" and "job" not in m.dims]
        assert fio and fio[0].value > 0
        verified = sorted(p.name for p in (tmp_path / "raw" / "t-fio" / "verify").iterdir())
        assert len(verified) == 2, "the pool's setup and teardown were both checked"
        block = lab.state_dir / "ceph" / "osd.0" / "block"
        assert block.stat().st_size == 8 << 30 and block.stat().st_blocks * 512 < 8 << 30, "a sparse block file"
        assert any("ceph-osd" in t for t in leftovers(NAME))
    finally:
        removed = lab_mod.down(NAME)
    assert any("blkio" in r for r in removed), removed
    assert leftovers(NAME) == []
    assert not lab.state_dir.exists()


def test_ceph_lab_failing_half_way_is_removed_again(monkeypatch):
    """An OSD that cannot be made (after the monitor and manager started) fails ``up``, which removes it all."""
    def broken(lab, state, osd):
        raise cephlab.CephLabError(f"osd on {osd.host} cannot be made (a test)")

    monkeypatch.setattr(cephlab, "_osd_up", broken)
    name = f"f{os.getpid() % 100000}"
    with pytest.raises(lab_mod.LabError, match="cannot be made .a test.; what was made of the new lab was removed"):
        lab_mod.bring_up(labspec.load(f"{name}.yaml", text=LAB.replace(f"lab: {NAME}", f"lab: {name}")))
    assert leftovers(name) == []
