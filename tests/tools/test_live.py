"""Live tests: each runnable tool runs for real (1-2 s) through ``bench_host`` with the
command its adapter builds, and the parsed rows are checked against the tool's own
summary fields. Servers are started through ``bench_host`` with a pidfile and killed in
a ``finally``; scratch files live in a directory made and removed on the bench host.
"""

from __future__ import annotations

import json
import os
import re
from contextlib import contextmanager

import pytest
import yaml

from perflab import tools
from perflab.tools.base import Command, extract_json, littles_law_flags

PORT = 20000 + os.getpid() % 10000


def needs(bench_host, *programs):
    missing = [p for p in programs if bench_host.run(f"command -v {p}", timeout=5).exit_code != 0]
    if missing:
        pytest.skip(f"not installed on the bench host: {', '.join(missing)}")


def run(bench_host, command: Command, timeout: float = 30):
    result = bench_host.run(command.line(), timeout=timeout)
    assert result.exit_code == 0, f"{command.line()} failed ({result.exit_code}): {result.stderr[-500:]}"
    return result


@contextmanager
def server(bench_host, command: Command, ready: str):
    """Start ``command`` in the background on the bench host; SIGKILL it on the way out.

    SIGKILL because iperf 2.1.8's UDP server ignores SIGTERM. ``ready`` is a command
    that succeeds once the server listens.
    """
    pidfile = bench_host.run("mktemp", timeout=5).stdout.strip()
    # no timeout: a command with one has what it leaves running killed when it ends (the process registry)
    started = bench_host.run(f"setsid {command.line()} >/dev/null 2>&1 < /dev/null & echo $! > {pidfile}", timeout=None)
    assert started.exit_code == 0, started.stderr
    try:
        waited = bench_host.run(f"for i in $(seq 50); do {ready} && exit 0; sleep 0.1; done; exit 1", timeout=10)
        assert waited.exit_code == 0, f"server did not start: {command.line()}"
        yield
    finally:
        bench_host.run(f"kill -9 $(cat {pidfile}) 2>/dev/null; rm -f {pidfile}", timeout=5)


@contextmanager
def scratch(bench_host):
    """A temporary directory on the bench host, removed afterwards."""
    path = bench_host.run("mktemp -d", timeout=5).stdout.strip()
    assert path.startswith("/")
    try:
        yield path
    finally:
        bench_host.run(f"rm -rf {path}", timeout=10)


def listening(port: int, udp: bool = False) -> str:
    return f"ss -H -{'u' if udp else 't'}ln 'sport = :{port}' | grep -q ."


def summary(rows):
    return {r.metric: r.value for r in rows if not r.dims}


def test_iperf3_tcp_parallel(bench_host, server_address):
    needs(bench_host, "iperf3", "ss")
    tool = tools.get("iperf3")
    srv, client = tool.commands({"duration": 1, "parallel": 2, "port": PORT, "interval": 0.5},
                                {"server": server_address})
    with server(bench_host, srv, listening(PORT)):
        result = run(bench_host, client)
    doc, rows = json.loads(result.stdout), tool.parse(result.stdout, result.stderr, source="live")
    assert summary(rows)["throughput"] == doc["end"]["sum_received"]["bits_per_second"] > 0
    streams = [r.value for r in rows if r.metric == "bytes" and set(r.dims) == {"stream"}]
    assert sum(streams) == doc["end"]["sum_received"]["bytes"]


def test_iperf3_udp_reverse_intervals(bench_host, server_address):
    needs(bench_host, "iperf3", "ss")
    tool = tools.get("iperf3")
    srv, client = tool.commands({"duration": 1, "protocol": "udp", "reverse": True, "bitrate": "20M",
                                 "interval": 0.5, "port": PORT + 1}, {"server": server_address})
    with server(bench_host, srv, listening(PORT + 1)):
        result = run(bench_host, client)
    rows = tool.parse(result.stdout, source="live")
    end = json.loads(result.stdout)["end"]["sum"]
    assert summary(rows)["packets"] == end["packets"] > 0
    assert len([r for r in rows if r.metric == "jitter" and "interval_start" in r.dims]) >= 2


def test_iperf2_tcp_parallel_sum(bench_host, server_address):
    needs(bench_host, "iperf", "ss")
    tool = tools.get("iperf2")
    srv, client = tool.commands({"duration": 1, "parallel": 2, "port": PORT + 2}, {"server": server_address})
    with server(bench_host, srv, listening(PORT + 2)):
        result = run(bench_host, client)
    rows = tool.parse(result.stdout, source="live")
    sum_line = re.findall(r"\[SUM\] 0\.0+-\S+ sec\s+(\d+) Bytes\s+(\d+) bits/sec", result.stdout)[-1]
    top = summary(rows)
    assert (top["bytes"], top["throughput"]) == (int(sum_line[0]), int(sum_line[1]))
    streams = [r.value for r in rows if r.metric == "bytes" and set(r.dims) == {"stream"}]
    assert sum(streams) == top["bytes"]


def test_iperf2_udp_server_report(bench_host, server_address):
    needs(bench_host, "iperf", "ss")
    tool = tools.get("iperf2")
    srv, client = tool.commands({"duration": 1, "protocol": "udp", "bitrate": "10M", "length": 466,
                                 "port": PORT + 3}, {"server": server_address})
    with server(bench_host, srv, listening(PORT + 3, udp=True)):
        result = run(bench_host, client)
    report = re.search(r"Server Report:.*?(\d+)/\s*(\d+) \(", result.stdout, re.DOTALL)
    top = summary(tool.parse(result.stdout, source="live"))
    assert (top["lost_packets"], top["packets"]) == (int(report[1]), int(report[2]))


def test_fio_libaio_bandwidth_and_littles_law(bench_host):
    needs(bench_host, "fio")
    tool = tools.get("fio")
    with scratch(bench_host) as path:
        (command,) = tool.commands({"filename": f"{path}/fio.dat", "size": "16M", "rw": "randrw", "bs": "4k",
                                    "iodepth": 4, "numjobs": 2, "direct": 1, "runtime": 1}, {})
        result = run(bench_host, command)
    rows = tool.parse(result.stdout, result.stderr, source="live")
    for index, job in enumerate(extract_json(result.stdout)["jobs"]):
        raw = job["read"]
        # both jobs are named "perflab" (numjobs=2): match by index, the parser's `job` dim
        parsed = next(r.value for r in rows if r.metric == "bandwidth" and r.dims.get("job") == index
                      and r.dims.get("direction") == "read")
        # fio derives bw from io_bytes and its own `runtime` (integer ms), never a wall clock, and prints it
        # in whole KiB/s: the two agree to one KiB/s plus one millisecond of runtime, however busy the machine
        # (a unit error would be 1000x or 1024x)
        exact = raw["io_bytes"] / (raw["runtime"] / 1000)
        assert parsed == pytest.approx(exact, abs=1024 + exact / raw["runtime"])
    assert littles_law_flags(rows) == []


def test_fio_iozone_phases(bench_host):
    needs(bench_host, "fio")
    tool = tools.get("fio_iozone")
    with scratch(bench_host) as path:
        (command,) = tool.commands({"filename": f"{path}/ioz.dat", "size": "8M", "bs": "64k"}, {})
        result = run(bench_host, command)
    rows = tool.parse(result.stdout, source="live")
    written = {r.dims["phase"]: r.value for r in rows if r.metric == "io_bytes" and "job" not in r.dims}
    assert written == {"write": 8 * 2**20, "rewrite": 8 * 2**20, "read": 8 * 2**20, "reread": 8 * 2**20}


def test_hpcc_summary_against_detailed_sections(bench_host):
    needs(bench_host, "hpcc")
    tool = tools.get("hpcc")
    (command,) = tool.commands({"n": 300, "nb": 40}, {})
    result = run(bench_host, command)
    rows = {(r.metric, r.dims.get("kernel"), r.dims.get("scope")): r.value for r in tool.parse(result.stdout)}
    triad = float(re.search(r"Single STREAM Triad GB/s ([\d.]+)", result.stdout)[1])
    assert rows[("stream_bandwidth", "triad", "single")] == pytest.approx(triad * 1e9, rel=1e-5)
    gflops = float(re.search(r"^WR\S+(?:\s+\S+){5}\s+(\S+)$", result.stdout, re.MULTILINE)[1])
    assert rows[("hpl_rate", None, None)] == pytest.approx(gflops, rel=1e-3)


def test_sysbench_cpu_and_memory(bench_host):
    needs(bench_host, "sysbench")
    tool = tools.get("sysbench")
    cpu = summary(tool.parse(run(bench_host, tool.commands({"test": "cpu", "duration": 1}, {})[0]).stdout))
    assert cpu["events_per_second"] == pytest.approx(cpu["events"] / cpu["total_time"], rel=0.02)
    memory = summary(tool.parse(run(bench_host, tool.commands(
        {"test": "memory", "duration": 1, "memory_total_size": "512M"}, {})[0]).stdout))
    assert memory["bytes"] == memory["operations"] * 1024


def test_stress_ng_yaml_against_metrics_lines(bench_host):
    needs(bench_host, "stress-ng")
    tool = tools.get("stress-ng")
    result = run(bench_host, tool.commands({"stressors": {"cpu": 1}, "duration": 1}, {})[0])
    (entry,) = yaml.safe_load(result.stdout[result.stdout.index("---"):])["metrics"]
    from_yaml = {r.metric: r.value for r in tool.parse(result.stdout, result.stderr)}
    from_lines = {r.metric: r.value for r in tool.parse("", result.stderr)}
    assert from_yaml["bogo_ops"] == from_lines["bogo_ops"] == entry["bogo-ops"] > 0


def test_ping_loopback(bench_host, server_address):
    needs(bench_host, "ping")
    tool = tools.get("ping")
    result = run(bench_host, tool.commands({"count": 3, "interval": 0.2}, {"server": server_address})[0])
    rows = tool.parse(result.stdout)
    replies = [r.value for r in rows if r.metric == "rtt"]
    assert len(replies) == 3 and summary(rows)["rtt_max"] == max(replies)


def test_dd_direct_write(bench_host):
    needs(bench_host, "dd")
    tool = tools.get("dd")
    with scratch(bench_host) as path:
        result = run(bench_host, tool.commands({"of": f"{path}/dd.dat", "bs": "1M", "count": 32,
                                                "oflag": "direct"}, {})[0])
    top = summary(tool.parse(result.stdout, result.stderr))
    assert top["bytes"] == 32 * 2**20
    # dd prints its rate with two or three significant digits ("1.1 GB/s", "512 MB/s"): the computed
    # rate must round to the printed one, i.e. lie within half a unit of its last printed digit
    # (elapsed, printed with ~6 digits, adds a relative 1e-5 at most)
    printed = re.search(r", (\d+)(?:[.,](\d+))? ([kMGT]?)(i?)B/s\s*$", result.stderr, re.MULTILINE)
    unit = (1024 if printed[4] else 1000) ** ("kMGT".find(printed[3]) + 1) if printed[3] else 1
    half_digit = 0.5 * 10 ** -len(printed[2] or "") * unit
    assert top["throughput"] == pytest.approx(top["throughput_computed"], abs=half_digit + 1e-5 * top["throughput"])


def test_mpstat_and_sadf_monitors(bench_host):
    needs(bench_host, "mpstat", "sadf")
    mpstat, sadf = tools.get("mpstat"), tools.get("sadf")
    rows = mpstat.parse(run(bench_host, mpstat.commands({"duration": 1}, {})[0]).stdout)
    cpus = {r.dims["cpu"]: r.value for r in rows if r.metric == "cpu_idle" and "timestamp" not in r.dims}
    assert "all" in cpus and len(cpus) >= 2
    # "all" is the per-CPU values weighted by each CPU's jiffies in the interval (equal only on an idle,
    # evenly ticking machine): it lies between the smallest and the largest, to mpstat's 0.01 precision
    each = [v for k, v in cpus.items() if k != "all"]
    assert min(each) - 0.01 <= cpus["all"] <= max(each) + 0.01, cpus
    rows = sadf.parse(run(bench_host, sadf.commands({"duration": 1}, {})[0]).stdout)
    assert {"cpu_usr", "load_1", "net_rx_bytes", "disk_tps"} <= {r.metric for r in rows}


def test_procstat_and_loadavg(bench_host):
    needs(bench_host, "getconf")
    procstat, loadavg = tools.get("procstat"), tools.get("loadavg")
    rows = procstat.parse(run(bench_host, procstat.commands({"duration": 1, "interval": 0.5}, {})[0]).stdout)
    elapsed = summary(rows)["elapsed"]
    cpu_all = sum(r.value for r in rows if r.metric == "cpu_time" and r.dims == {"cpu": "all", "state": r.dims["state"]}
                  and r.dims["state"] not in ("guest", "guest_nice"))
    ncpu = len({r.dims["cpu"] for r in rows if r.metric == "cpu_time"}) - 1
    assert cpu_all == pytest.approx(ncpu * elapsed, rel=0.2)
    load = summary(loadavg.parse(run(bench_host, loadavg.commands({}, {})[0]).stdout))
    assert load["load_1"] >= 0 and load["processes"] >= load["runnable"] >= 1
