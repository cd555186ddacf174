"""hpcc (HPL, STREAM), sysbench and stress-ng parsers, checked against the tools' own
detailed sections and derived fields."""

from __future__ import annotations

import re

import pytest
import yaml

from perflab import tools
from perflab.tools.base import ParseError

HPCC, SYSBENCH, STRESS = tools.get("hpcc"), tools.get("sysbench"), tools.get("stress-ng")


def by_key(rows, *dims):
    return {(r.metric, *(r.dims.get(d) for d in dims)): r.value for r in rows}


def test_hpcc_summary_matches_the_detailed_hpl_and_stream_sections(read_fixture):
    text = read_fixture("hpcc/hpccoutf_n400_nb40.txt")
    rows = by_key(HPCC.parse(text, source="hpccoutf.txt"), "kernel", "scope")
    wr = re.search(r"^WR\S+\s+(\d+)\s+(\d+)\s+\d+\s+\d+\s+([\d.]+)\s+([\d.e+-]+)$", text, re.MULTILINE)
    assert rows[("hpl_n", None, None)] == int(wr[1]) == 400
    assert rows[("hpl_rate", None, None)] == pytest.approx(float(wr[4]), rel=1e-3)  # detailed: 4 digits
    single = text[text.index("Begin of SingleSTREAM section."):text.index("End of SingleSTREAM section.")]
    star = text[text.index("Begin of StarSTREAM section."):text.index("End of StarSTREAM section.")]
    for kernel in ("Copy", "Scale", "Add", "Triad"):
        detailed = float(re.search(rf"^{kernel}:\s+([\d.]+)", single, re.MULTILINE)[1])
        assert rows[("stream_bandwidth", kernel.lower(), "single")] == pytest.approx(detailed * 1e9, rel=1e-5)
        average = float(re.search(rf"^Average {kernel} GB/s ([\d.]+)", star, re.MULTILINE)[1])
        assert rows[("stream_bandwidth", kernel.lower(), "star")] == pytest.approx(average * 1e9, rel=1e-5)
    dgemm = float(re.search(r"Single DGEMM Gflop/s ([\d.]+)", text)[1])
    assert rows[("dgemm_rate", None, "single")] == pytest.approx(dgemm, rel=1e-5)
    assert ("pingpong_latency", None, None) not in rows  # -1: not measured with one process


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t[: t.index("Begin of Summary section.")], "Summary section"),
    (lambda t: t.replace("Success=1", "Success=0"), "Success=1"),
    (lambda t: t.replace("0 tests completed and failed", "1 tests completed and failed"), "residual checks"),
])
def test_hpcc_broken_outputs_are_refused(read_fixture, edit, message):
    # Each broken input is the captured file edited here: cut before the summary, a failed
    # run, a failed HPL residual check.
    with pytest.raises(ParseError, match=message):
        HPCC.parse(edit(read_fixture("hpcc/hpccoutf_n400_nb40.txt")), source="edited.txt")


def test_hpcc_command_writes_the_input_file_and_prints_the_output():
    (command,) = HPCC.commands({"n": 6000, "nb": 80, "p": 1, "q": 2}, {})
    script = command.argv[2]
    assert command.argv[:2] == ("sh", "-c")
    assert "6000         Ns" in script and "cat hpccoutf.txt" in script
    assert "mpirun --allow-run-as-root -np 2 hpcc" in script


def test_sysbench_cpu_rate_matches_events_over_time(read_fixture):
    rows = by_key(SYSBENCH.parse(read_fixture("sysbench/cpu_threads2.txt"), source="cpu.txt"))
    assert rows[("events_per_second",)] == pytest.approx(rows[("events",)] / rows[("total_time",)], rel=0.01)
    # threads x time is the latency sum (2 threads busy for the whole run)
    assert rows[("latency_sum",)] == pytest.approx(2 * rows[("total_time",)], rel=0.01)
    assert rows[("latency_min",)] <= rows[("latency_avg",)] <= rows[("latency_max",)]


def test_sysbench_memory_bandwidth_matches_operations_and_block_size(read_fixture):
    text = read_fixture("sysbench/memory_1g.txt")
    block = int(re.search(r"block size: (\d+)KiB", text)[1]) * 1024
    rows = by_key(SYSBENCH.parse(text, source="memory.txt"))
    assert rows[("bytes",)] == rows[("operations",)] * block == 2**30
    assert rows[("memory_bandwidth",)] == pytest.approx(rows[("operations_per_second",)] * block, rel=0.001)


def test_sysbench_without_general_statistics_is_refused(read_fixture):
    text = read_fixture("sysbench/cpu_threads2.txt")
    with pytest.raises(ParseError, match="General statistics"):
        SYSBENCH.parse(text[: text.index("General statistics")], source="cut.txt")


def test_stressng_yaml_and_metrics_lines_agree(read_fixture):
    stdout = read_fixture("stress-ng/cpu_io_vm.stdout.yaml")
    stderr = read_fixture("stress-ng/cpu_io_vm.stderr.txt")
    from_yaml = by_key(STRESS.parse(stdout, stderr, source="yaml"), "stressor")
    from_text = by_key(STRESS.parse("", stderr, source="text"), "stressor")
    metrics = yaml.safe_load(stdout)["metrics"]
    assert {m["stressor"] for m in metrics} == {"cpu", "io", "vm"}
    for entry in metrics:
        name = entry["stressor"]
        assert from_yaml[("bogo_ops", name)] == from_text[("bogo_ops", name)] == entry["bogo-ops"]
        assert from_yaml[("bogo_ops_per_second", name)] == pytest.approx(
            entry["bogo-ops"] / entry["wall-clock-time"], rel=1e-6)
        assert from_text[("bogo_ops_per_second", name)] == pytest.approx(
            from_yaml[("bogo_ops_per_second", name)], abs=0.01)


def test_stressng_failure_is_refused(read_fixture):
    with pytest.raises(ParseError, match="neither"):
        STRESS.parse(read_fixture("stress-ng/bad_option.txt"), source="bad_option.txt")


def test_stressng_command_matches_seed_002_stress_line():
    (command,) = STRESS.commands({"stressors": {"cpu": 1, "io": 1, "vm": 1}, "vm_bytes": "1G", "duration": 600}, {})
    assert command.line() == ("stress-ng --cpu 1 --io 1 --vm 1 --vm-bytes 1G --timeout 600s --metrics-brief "
                              "--yaml /dev/stdout")
