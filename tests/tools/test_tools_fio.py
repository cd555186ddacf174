"""fio JSON parser: values checked against fio's own fields (io_bytes / runtime, job sums)."""

from __future__ import annotations

import json

import pytest

from perflab import tools
from perflab.tools.base import ParseError, extract_json, littles_law_flags

FIO = tools.get("fio")


def rows_of(read_fixture, name, tool=FIO):
    return tool.parse(read_fixture(f"fio/{name}"), source=name)


def test_job_bandwidth_matches_io_bytes_over_runtime(read_fixture):
    doc = json.loads(read_fixture("fio/randrw_libaio_jsonplus.json"))
    rows = rows_of(read_fixture, "randrw_libaio_jsonplus.json")
    for index, job in enumerate(doc["jobs"]):
        for direction in ("read", "write"):
            raw = job[direction]
            parsed = next(r.value for r in rows if r.metric == "bandwidth" and r.dims.get("job") == index
                          and r.dims["direction"] == direction)
            assert parsed == pytest.approx(raw["io_bytes"] / (raw["runtime"] / 1000), rel=0.005)


def test_group_summary_sums_jobs_and_weights_latency_by_io_count(read_fixture):
    doc = json.loads(read_fixture("fio/randrw_libaio_jsonplus.json"))
    rows = rows_of(read_fixture, "randrw_libaio_jsonplus.json")
    summary = {(r.metric, r.dims["direction"]): r.value for r in rows if "job" not in r.dims and "direction" in r.dims
               and "percentile" not in r.dims}
    for direction in ("read", "write"):
        jobs = [j[direction] for j in doc["jobs"]]
        assert summary[("iops", direction)] == pytest.approx(sum(j["iops"] for j in jobs))
        assert summary[("io_bytes", direction)] == sum(j["io_bytes"] for j in jobs)
        weighted = sum(j["lat_ns"]["mean"] * j["lat_ns"]["N"] for j in jobs) / sum(j["lat_ns"]["N"] for j in jobs)
        assert summary[("lat_mean", direction)] == pytest.approx(weighted * 1e-9)
    assert not any("percentile" in r.dims and "job" not in r.dims for r in rows)  # two jobs: no merged percentiles


def test_percentiles_are_seconds_with_a_percentile_dim(read_fixture):
    doc = json.loads(read_fixture("fio/randrw_libaio_jsonplus.json"))
    rows = rows_of(read_fixture, "randrw_libaio_jsonplus.json")
    raw = doc["jobs"][0]["read"]["clat_ns"]["percentile"]
    p99 = next(r.value for r in rows if r.metric == "clat_percentile" and r.dims.get("job") == 0
               and r.dims["direction"] == "read" and r.dims["percentile"] == 99.0)
    assert p99 == pytest.approx(raw["99.000000"] * 1e-9)


def test_littles_law_holds_for_libaio_jobs_and_group_reporting(read_fixture):
    for name in ("randrw_libaio_jsonplus.json", "randread_group_reporting.json"):
        rows = rows_of(read_fixture, name)
        ratios = [r.value for r in rows if r.metric == "littles_law_ratio"]
        assert ratios and all(r == pytest.approx(1.0, abs=0.1) for r in ratios)
        assert littles_law_flags(rows) == []


def test_group_reporting_entry_counts_numjobs_times_iodepth(read_fixture):
    doc = json.loads(read_fixture("fio/randread_group_reporting.json"))
    read = doc["jobs"][0]["read"]
    expected = read["iops"] * read["lat_ns"]["mean"] * 1e-9 / (2 * 8)
    rows = rows_of(read_fixture, "randread_group_reporting.json")
    assert next(r.value for r in rows if r.metric == "littles_law_ratio" and not r.dims) == pytest.approx(expected)
    assert any(r.metric == "clat_percentile" and "job" not in r.dims for r in rows)


def test_text_before_json_is_skipped_and_sync_engines_count_depth_one(read_fixture):
    text = read_fixture("fio/psync_iodepth_note.txt")
    assert text.startswith("note: both iodepth")
    rows = FIO.parse(text, source="psync_iodepth_note.txt")
    read = extract_json(text)["jobs"][0]["read"]
    ratio = next(r.value for r in rows if r.metric == "littles_law_ratio" and not r.dims)
    assert ratio == pytest.approx(read["iops"] * read["lat_ns"]["mean"] * 1e-9)  # divided by 1, not iodepth=4


def test_failed_job_is_refused_with_fios_error_code(read_fixture):
    with pytest.raises(ParseError, match=r"failed_job.txt: expected error 0 in jobs\[0\] \('fails'\); found error 2"):
        rows_of(read_fixture, "failed_job.txt")


def test_schema_change_names_the_missing_key(read_fixture):
    doc = json.loads(read_fixture("fio/randread_group_reporting.json"))
    del doc["jobs"][0]["read"]["iops"]
    with pytest.raises(ParseError, match=r"key 'iops' in jobs\[0\] \('grouped'\)\.read"):
        FIO.parse(json.dumps(doc), source="edited.json")


def test_fio2_microsecond_fields_are_read():
    # fio 2.x wrote "lat"/"clat" in microseconds and "bw" in KiB/s, without "bw_bytes" (a minimal
    # document in that layout, built here).
    read = {"io_bytes": 4096000, "bw": 4000, "iops": 1000.0, "runtime": 1000, "total_ios": 1000,
            "lat": {"min": 10, "max": 2000, "mean": 1000.0, "stddev": 5.0},
            "clat": {"min": 9, "max": 1999, "mean": 990.0, "stddev": 5.0, "percentile": {"99.000000": 1800}}}
    doc = {"fio version": "fio-2.2.10", "jobs": [{"jobname": "old", "groupid": 0, "error": 0, "read": read,
                                                  "job options": {"ioengine": "libaio", "iodepth": "1"}}]}
    rows = FIO.parse(json.dumps(doc), source="fio2.json")
    values = {(r.metric, r.dims.get("percentile")): r.value for r in rows if "job" in r.dims}
    assert values[("bandwidth", None)] == 4000 * 1024
    assert values[("lat_mean", None)] == pytest.approx(1e-3)
    assert values[("clat_percentile", 99.0)] == pytest.approx(1.8e-3)
    assert values[("littles_law_ratio", None)] == pytest.approx(1.0)


def test_a_null_fio2_bandwidth_is_a_parse_error_not_a_crash():
    # fio 2.x's KiB fields are converted to bytes: a null there is malformed output, quarantined by tidy
    read = {"io_bytes": 4096000, "bw": None, "iops": 1000.0, "runtime": 1000, "total_ios": 1000}
    doc = {"fio version": "fio-2.2.10", "jobs": [{"jobname": "old", "groupid": 0, "error": 0, "read": read,
                                                  "job options": {"ioengine": "libaio", "iodepth": "1"}}]}
    with pytest.raises(ParseError, match=r"fio2.json: expected a number for jobs\[0\].*read.bw; found null"):
        FIO.parse(json.dumps(doc), source="fio2.json")


def test_iozone_style_phases_carry_a_phase_dim(read_fixture):
    doc = json.loads(read_fixture("fio/iozone_phases.json"))
    rows = rows_of(read_fixture, "iozone_phases.json", tools.get("fio_iozone"))
    bandwidth = {r.dims["phase"]: (r.dims["direction"], r.value) for r in rows
                 if r.metric == "bandwidth" and "job" not in r.dims}
    assert set(bandwidth) == {"write", "rewrite", "read", "reread"}
    assert bandwidth["rewrite"][0] == "write" and bandwidth["reread"][0] == "read"
    assert bandwidth["reread"][1] == doc["jobs"][3]["read"]["bw_bytes"]


def test_commands_carry_every_campaign_parameter():
    (command,) = FIO.commands({"rw": "randrw", "bs": "4k", "iodepth": 16, "numjobs": 4, "rwmixread": 75,
                               "direct": 1, "size": "1G", "runtime": 60, "ioengine": "libaio",
                               "filename": "/dev/sdb", "group_reporting": True}, {})
    line = command.line()
    for option in ("--rw=randrw", "--bs=4k", "--iodepth=16", "--numjobs=4", "--rwmixread=75", "--direct=1",
                   "--size=1G", "--runtime=60", "--time_based", "--ioengine=libaio", "--filename=/dev/sdb",
                   "--group_reporting", "--output-format=json"):
        assert option in line
    (phases,) = tools.get("fio_iozone").commands({"size": "100M"}, {})
    assert [a for a in phases.argv if a.startswith("--name=")] == [
        "--name=write", "--name=rewrite", "--name=read", "--name=reread"]
    assert phases.argv.count("--stonewall") == 3
