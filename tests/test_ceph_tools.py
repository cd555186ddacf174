"""Ceph's benchmarks as runnable tools, their parsers on outputs recorded from the lab's cluster, the lab
file's ``ceph:`` section and the cluster's configuration (no root, no cluster)."""

import json
import shlex
from pathlib import Path

import pytest

from perflab import labspec, tools
from perflab.hosts.lab import ceph as cephlab
from perflab.hosts.lab.model import layout
from perflab.tools.base import ParseError

RADOS, RBD, OSD, FIO = (tools.get(n) for n in ("rados_bench", "rbd_bench", "ceph_osd_bench", "fio"))
MIB = 1 << 20
FIXTURES = Path(__file__).parent / "fixtures"


def read_fixture(name: str) -> str:
    """The text of ``tests/fixtures/<name>``."""
    return (FIXTURES / name).read_text()


def rows(tool, text, **dims):
    """metric -> value of the rows whose dims include ``dims`` and carry no interval."""
    return {m.metric: m.value for m in tool.parse(text, source="t")
            if "interval_start" not in m.dims and all(m.dims.get(k) == v for k, v in dims.items())
            and ("direction" in dims or "direction" not in m.dims)}


def test_rados_bench_write_recorded_on_the_lab():
    got = rows(RADOS, read_fixture("ceph/lab_rados_write.txt"))
    # 124 writes of 4 MiB in 5.25864 s; rados's "MB/sec" is MiB/s
    assert got["iops"] == pytest.approx(124 / 5.25864)
    assert got["bandwidth"] == pytest.approx(94.321 * MIB)
    assert got["op_size"] == 4194304 and got["lat_mean"] == pytest.approx(0.666062)
    assert got["littles_law_ratio"] == pytest.approx(124 / 5.25864 * 0.666062 / 16)


@pytest.mark.parametrize("name, reads, seconds", [("lab_rados_seq.txt", 124, 1.51735),
                                                  ("lab_rados_rand.txt", None, None)])
def test_rados_bench_reads_recorded_on_the_lab(name, reads, seconds):
    got = rows(RADOS, read_fixture(f"ceph/{name}"))
    assert got["op_size"] == 4194304 and got["bandwidth"] > 0
    if reads:  # seq read back the 124 objects the write left, and stopped when none were left
        assert got["ops"] == reads and got["runtime"] == pytest.approx(seconds)
    # reads print no "Maintaining 16 concurrent" line, so no ratio; IOPS x latency still shows the 16 in flight
    assert "littles_law_ratio" not in got and 8 < got["mean_in_flight"] <= 16.5


def test_rbd_bench_recorded_on_the_lab_small_and_large_io():
    small = rows(RBD, read_fixture("ceph/lab_rbd_write_4k.txt"))
    assert small == {"io_size": 4096, "io_threads": 16, "elapsed": 8, "ops": 4096, "iops": 486.23,
                     "bandwidth": pytest.approx(1.9 * MIB)}
    large = rows(RBD, read_fixture("ceph/lab_rbd_read_4m.txt"))
    # a sub-second run: rbd prints "elapsed: 0", so the rate comes from ops/sec, never ops/elapsed
    assert large["elapsed"] == 0 and large["iops"] == pytest.approx(135.593)
    assert large["bandwidth"] == pytest.approx(542 * MIB)


def test_rbd_bench_readwrite_split_per_direction():
    text = read_fixture("ceph/lab_rbd_rw_4m.txt")
    total = rows(RBD, text)
    read, write = rows(RBD, text, direction="read"), rows(RBD, text, direction="write")
    assert total["ops"] == 64 and read["ops"] + write["ops"] == 64
    assert read["iops"] == pytest.approx(21.2264) and write["bandwidth"] == pytest.approx(116 * MIB)
    assert RBD.parser_version == 2


@pytest.mark.parametrize("name, rate", [("lab_osd0_hdd_bench.json", 11268547.867291361),
                                        ("lab_osd1_ssd_bench.json", 715250294.28864551)])
def test_osd_bench_recorded_on_the_lab(name, rate):
    got = rows(OSD, read_fixture(f"ceph/{name}"))
    assert got["bytes"] == 100 * MIB and got["block_size"] == 4 * MIB
    assert got["bandwidth"] == pytest.approx(rate) == pytest.approx(got["bytes"] / got["elapsed"])
    assert got["iops"] == pytest.approx(got["bandwidth"] / got["block_size"])


def test_fio_rbd_engine_output_recorded_on_the_lab():
    text = read_fixture("ceph/fio/lab_fio_rbd_randwrite_4k.json")
    assert json.loads(text)["jobs"][0]["job options"]["ioengine"] == "rbd"
    summary = {m.metric: m.value for m in FIO.parse(text, source="t") if "job" not in m.dims
               and m.dims.get("direction") == "write"}
    assert summary["iops"] == pytest.approx(385.762, rel=1e-4)


def test_recorded_rbd_output_cut_before_its_summary_is_refused():
    text = read_fixture("ceph/lab_rbd_write_4k.txt")
    with pytest.raises(ParseError, match="elapsed"):
        RBD.parse(text[:text.index("elapsed:")], source="cut")


def test_commands_are_whole_words_with_cluster_options():
    [c] = RADOS.commands({"pool": "p", "seconds": 3, "mode": "write", "object_size": "4M", "cleanup": False,
                          "client_id": "bench"}, {})
    assert c.argv == ("rados", "--id=bench", "-p", "p", "bench", "3", "write", "-t", "16", "-b", "4M", "--no-cleanup")
    [c] = RADOS.commands({"pool": "p", "mode": "seq", "object_size": "4M", "cleanup": False}, {})
    assert "-b" not in c.argv and "--no-cleanup" not in c.argv
    [c] = RBD.commands({"pool": "p", "image": "img", "io_type": "readwrite", "rw_mix_read": 50,
                        "config": {"rbd_cache": True, "rbd_cache_size": 67108864}}, {})
    assert c.argv[:3] == ("rbd", "--rbd_cache=true", "--rbd_cache_size=67108864")
    assert c.argv[-4:] == ("--pool", "p", "--image", "img")
    assert ("--rw-mix-read", "50") == c.argv[c.argv.index("--rw-mix-read"):][:2]
    [c] = OSD.commands({"osd": 3, "bytes": "64M", "block_size": "64K"}, {})
    assert c.argv == ("ceph", "tell", "osd.3", "bench", str(64 * MIB), "65536")
    assert shlex.split(c.line()) == list(c.argv)


@pytest.mark.parametrize("tool, params, message", [
    (RADOS, {}, "pool"), (RADOS, {"pool": "p", "mode": "read"}, "mode"), (RBD, {"pool": "p"}, "image"),
    (OSD, {"osd": "0; reboot"}, "OSD id"), (OSD, {"osd": 1, "bytes": "lots"}, "size"),
    (RBD, {"pool": "p", "image": "i", "config": {"rbd cache": "true"}}, "option name"),
])
def test_commands_refuse_what_they_cannot_pass(tool, params, message):
    with pytest.raises(ValueError, match=message):
        tool.commands(params, {})


LAB = """\
format: 1
lab: cx
links: {lan: }
hosts:
  mon: {links: [lan]}
  a: {links: [lan]}
  b: {links: [lan]}
  c: {links: [lan]}
ceph:
  mon: mon
  clients: [c]
  osd_memory_target: 512M
  osds:
    a: {hdd: 2G, ssd: 1G}
    b: {ssd: 1G}
"""


def test_lab_file_ceph_section_and_its_conf():
    spec = labspec.load("cx.yaml", text=LAB)
    assert spec.ceph.mon == "mon" and spec.ceph.clients == ("c",) and spec.ceph.osd_memory_target == 512 * MIB
    assert [(o.host, o.device_class, o.size) for o in spec.ceph.osds] == \
        [("a", "hdd", 2 << 30), ("a", "ssd", 1 << 30), ("b", "ssd", 1 << 30)]
    assert labspec.LabSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
    lab = layout(spec, {"lan": 7})
    conf = cephlab._conf(lab, "f-s-i-d", {"a/hdd": 0, "a/ssd": 1})
    assert f"mon host = [v2:{lab.host('mon').address}:3300,v1:{lab.host('mon').address}:6789]" in conf
    assert "osd pool default size = 2" in conf  # one copy per OSD host
    assert f"osd memory target = {512 * MIB}" in conf
    osd0 = conf[conf.index("[osd.0]"):conf.index("[osd.1]")]
    assert "bluestore block size = 2147483648" in osd0 and "host=a" in osd0 and "enforce settings = hdd" in osd0
    assert "[osd.2]" not in conf  # b's OSD has no id yet
    assert str(cephlab.conf_path(lab)).startswith(str(lab.state_dir))


@pytest.mark.parametrize("edit, message", [
    (("mon: mon", "mon: nobody"), "ceph.mon: 'nobody' is not a namespace host"),
    (("clients: [c]", "clients: [d]"), "ceph.clients.0: 'd'"),
    (("a: {hdd: 2G, ssd: 1G}", "a: {nvme: 2G}"), "nvme"),
    (("b: {ssd: 1G}", "b: {ssd: 512K}"), "512K"),
])
def test_lab_file_ceph_section_errors_name_the_field(edit, message):
    with pytest.raises(labspec.LabFileError, match=message):
        labspec.load("cx.yaml", text=LAB.replace(*edit))
