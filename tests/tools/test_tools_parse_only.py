"""NPB, filebench and Ceph parsers (tools that cannot run here): good and broken inputs,
from seed 001 and from published outputs (origins in each fixture folder's ORIGIN.md)."""

from __future__ import annotations

import pytest

from perflab import tools
from perflab.tools.base import ParseError, littles_law_flags

NPB, FILEBENCH = tools.get("npb"), tools.get("filebench")
RADOS, RBD, OSD = tools.get("rados_bench"), tools.get("rbd_bench"), tools.get("ceph_osd_bench")


def values(rows):
    return {r.metric: r.value for r in rows if "interval_start" not in r.dims and "flowop" not in r.dims}


@pytest.mark.parametrize(("name", "benchmark", "time", "mops"), [
    ("gomguk_omp_2proc_mg.S.txt", "MG", 0.15, 49.17),
    ("gomguk_omp_2proc_is.S.txt", "IS", 0.07, 10.01),
])
def test_npb_results_block(read_fixture, name, benchmark, time, mops):
    rows = NPB.parse(read_fixture(f"npb/{name}"), source=name)
    assert {r.dims["benchmark"] for r in rows} == {benchmark} and {r.dims["class"] for r in rows} == {"S"}
    got = values(rows)
    assert (got["time"], got["mops"], got["workers"]) == (time, mops, 1)
    assert got["mops_per_worker"] == got["mops"] / got["workers"]


@pytest.mark.parametrize(("name", "message"), [
    ("derived_mg_unsuccessful.txt", "Verification = UNSUCCESSFUL"),
    ("derived_mg_truncated.txt", "'Time in seconds = ...'"),
])
def test_npb_broken_outputs(read_fixture, name, message):
    with pytest.raises(ParseError, match=message):
        NPB.parse(read_fixture(f"npb/{name}"), source=name)


def test_filebench_14_summary_has_cpu_per_op_and_matches_its_flowops(read_fixture):
    rows = FILEBENCH.parse(read_fixture("filebench/v1.4.9_filemicro_writefsync.txt"), source="fb14")
    got = values(rows)
    assert got["cpu_per_op"] == pytest.approx(745e-6)
    assert got["bandwidth"] == pytest.approx(14.6 * 2**20)
    flowops = {r.dims["flowop"]: r.value for r in rows if r.metric == "ops" and "flowop" in r.dims}
    # "finish" is a control flowop; the summary counts the I/O ones: 128 + 131073
    assert sum(v for k, v in flowops.items() if k != "finish") == got["ops"] == 131201


def test_filebench_15_summary_rates_match_ops_over_runtime(read_fixture):
    rows = FILEBENCH.parse(read_fixture("filebench/v1.5_varmail_ext4_run0.txt"), source="fb15")
    got = values(rows)
    assert "cpu_per_op" not in got
    assert got["ops"] / 600 == pytest.approx(got["ops_per_second"], rel=0.01)  # "Run took 600 seconds"
    flowops = [r.value for r in rows if r.metric == "ops" and "flowop" in r.dims]
    assert len(flowops) == 13 and sum(flowops) == got["ops"]


def test_filebench_refuses_several_runs_in_one_file(read_fixture):
    with pytest.raises(ParseError, match="found 2 summary lines"):
        FILEBENCH.parse(read_fixture("filebench/v1.5_varmail_two_runs.txt"), source="two_runs")


def test_rados_bench_seed_001_figure_93(read_fixture):
    got = values(RADOS.parse(read_fixture("ceph/seed001_fig93_rados_write.txt"), source="fig93"))
    # rados bench's "MB/sec" is MiB/s: 5194 writes x 4 MiB / 60.1248 s = 345.55 MiB/s
    assert got["bandwidth"] == pytest.approx(5194 * 4 * 2**20 / 60.1248, rel=1e-5)
    assert int(got["iops"]) == got["iops_reported"] == 86
    assert got["mean_in_flight"] == pytest.approx(16, rel=0.01)  # rados bench's default 16 ops in flight


def test_rados_bench_published_run_satisfies_littles_law(read_fixture):
    rows = RADOS.parse(read_fixture("ceph/published_rados_write_10s.txt"), source="rados10")
    got = values(rows)
    assert got["littles_law_ratio"] == pytest.approx(1.0, abs=0.01)
    assert littles_law_flags(rows) == []
    ticks = [r for r in rows if r.metric == "bandwidth" and "interval_start" in r.dims]
    assert [r.dims["interval_end"] for r in ticks] == [float(s) for s in range(1, 11)]


def test_rados_bench_with_values_split_from_labels_is_refused(read_fixture):
    with pytest.raises(ParseError, match=r"no value after \['Max IOPS'"):
        RADOS.parse(read_fixture("ceph/seed001_fig84_rados_write_ocr_split.txt"), source="fig84")


def test_rbd_bench_seed_001_uses_ops_per_second_not_whole_seconds(read_fixture):
    got = values(RBD.parse(read_fixture("ceph/seed001_fig102_rbd_write_seq.txt"), source="fig102"))
    assert (got["elapsed"], got["ops"], got["iops"]) == (6, 512, 80.1475)
    assert got["bandwidth"] == 321 * 2**20
    assert got["iops"] * 4 * 2**20 == pytest.approx(got["bandwidth"], rel=0.005)  # 4 MiB I/O, 3 printed digits
    assert got["ops"] / got["elapsed"] != pytest.approx(got["iops"], rel=0.05)  # elapsed is rounded


def test_rbd_bench_published_table(read_fixture):
    rows = RBD.parse(read_fixture("ceph/published_rbd_bench_write_4k.txt"), source="rbd4k")
    got = values(rows)
    assert got["ops"] * got["io_size"] == 1073741824
    ticks = [r for r in rows if r.metric == "iops" and "interval_start" in r.dims]
    assert len(ticks) == 9 and ticks[0].value == 18312.7


def test_rbd_bench_refuses_several_runs(read_fixture):
    with pytest.raises(ParseError, match="found 4 such lines"):
        RBD.parse(read_fixture("ceph/seed001_fig102_rbd_four_runs.txt"), source="four")


@pytest.mark.parametrize("name", ["published_osd25_bench.json", "published_osd_bench_plain.txt"])
def test_osd_bench_rate_is_bytes_over_elapsed(read_fixture, name):
    got = values(OSD.parse(read_fixture(f"ceph/{name}"), source=name))
    assert got["bytes"] == 2**30 and got["block_size"] == 4 * 2**20
    assert got["bandwidth"] == pytest.approx(got["bytes"] / got["elapsed"], rel=1e-3)
    assert got["iops"] == pytest.approx(got["bandwidth"] / got["block_size"], rel=1e-3)


def test_osd_bench_ocr_copy_from_seed_001_is_refused(read_fixture):
    with pytest.raises(ParseError, match="truncated"):
        OSD.parse(read_fixture("ceph/seed001_fig79_osd_bench_ocr.txt"), source="fig79")
    with pytest.raises(ParseError, match="key 'bytes_written'"):
        OSD.parse(read_fixture("ceph/seed001_fig79_osd_bench_ocr.txt") + "}\n", source="fig79-closed")
