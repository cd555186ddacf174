"""sysstat (mpstat, sadf), load average and /proc deltas, and seed 004's per-operation costs."""

from __future__ import annotations

import json
from statistics import fmean

import pytest

from perflab import tools
from perflab.tools.base import Measurement, ParseError
from perflab.tools.procfs import parse_snapshots, per_operation

MPSTAT, SADF, LOADAVG, PROCSTAT = (tools.get(n) for n in ("mpstat", "sadf", "loadavg", "procstat"))


def test_mpstat_all_row_is_the_mean_of_the_cpus(read_fixture):
    text = read_fixture("sysstat/mpstat_all_cpu_load.json")
    rows = MPSTAT.parse(text, source="mpstat.json")
    stamps = sorted({r.dims["timestamp"] for r in rows if "timestamp" in r.dims})
    assert stamps[0].startswith("2026-11-22T") and len(stamps) == 2
    for stamp in stamps:
        usr = {r.dims["cpu"]: r.value for r in rows if r.metric == "cpu_usr" and r.dims.get("timestamp") == stamp}
        assert usr["all"] == pytest.approx(fmean([usr["0"], usr["1"]]), abs=0.6)
    raw = json.loads(text)["sysstat"]["hosts"][0]["statistics"]
    mean_all = next(r.value for r in rows if r.metric == "cpu_idle" and r.dims == {"cpu": "all"})
    assert mean_all == pytest.approx(fmean(s["cpu-load"][0]["idle"] for s in raw))


def test_sadf_sections_become_rows_with_entity_dims(read_fixture):
    text = read_fixture("sysstat/sadf_u_all_q_dev_d.json")
    raw = json.loads(text)["sysstat"]["hosts"][0]["statistics"]
    rows = SADF.parse(text, source="sadf.json")
    first = raw[0]
    stamp = f"{first['timestamp']['date']}T{first['timestamp']['time']}Z"
    lo = next(n for n in first["network"]["net-dev"] if n["iface"] == "lo")
    got = {(r.metric, r.dims.get("iface")): r.value for r in rows if r.dims.get("timestamp") == stamp}
    assert got[("net_rx_bytes", "lo")] == pytest.approx(lo["rxkB"] * 1024)
    assert got[("load_1", None)] == first["queue"]["ldavg-1"]
    disk = first["disk"][0]
    assert any(r.metric == "disk_write_bytes" and r.dims.get("device") == disk["disk-device"] for r in rows)
    cpus = {r.dims["cpu"] for r in rows if r.metric == "cpu_usr"}
    assert cpus == {"all", "0", "1"}


def test_the_empty_objects_sadf_ends_a_cut_recording_with_are_no_intervals(read_fixture):
    """``sadf -j -e <time>`` on a recording that goes on past ``<time>`` ends its statistics with ``{}``."""
    from perflab.tidy import _no_intervals

    text = read_fixture("sysstat/sadf_u_all_q_dev_d.json")
    doc = json.loads(text)
    doc["sysstat"]["hosts"][0]["statistics"].append({})
    assert SADF.parse(json.dumps(doc), source="cut.json") == SADF.parse(text, source="cut.json")
    doc["sysstat"]["hosts"][0]["statistics"] = [{}]
    assert _no_intervals(json.dumps(doc))
    with pytest.raises(ParseError, match="at least one interval"):
        SADF.parse(json.dumps(doc), source="none.json")
    doc["sysstat"]["hosts"][0]["statistics"] = [{}, json.loads(text)["sysstat"]["hosts"][0]["statistics"][0]]
    with pytest.raises(ParseError, match="timestamp"):  # only the end's empty objects are sadf's
        SADF.parse(json.dumps(doc), source="inside.json")


def test_sysstat_user_and_system_fields_map_to_usr_and_sys():
    # sysstat without -u ALL names the fields "user" and "system" (a minimal document, built here).
    doc = {"sysstat": {"hosts": [{"date": "11/22/26", "statistics": [
        {"timestamp": "23:59:59", "cpu-load": [{"cpu": "all", "user": 10.0, "system": 5.0, "idle": 85.0}]},
        {"timestamp": "00:00:00", "cpu-load": [{"cpu": "all", "user": 20.0, "system": 5.0, "idle": 75.0}]}]}]}}
    rows = MPSTAT.parse(json.dumps(doc), source="min.json")
    usr = [(r.dims.get("timestamp"), r.value) for r in rows if r.metric == "cpu_usr"]
    assert usr == [("2026-11-22T23:59:59", 10.0), ("2026-11-23T00:00:00", 20.0), (None, 15.0)]


def test_sysstat_truncated_or_empty_output_is_refused(read_fixture):
    text = read_fixture("sysstat/sadf_u_all_q_dev_d.json")
    with pytest.raises(ParseError, match="truncated"):
        SADF.parse(text[:2000], source="cut.json")
    with pytest.raises(ParseError, match="at least one interval"):
        MPSTAT.parse('{"sysstat": {"hosts": [{"date": "2026-11-22", "statistics": []}]}}', source="empty.json")


@pytest.mark.parametrize("name", ["proc_loadavg.txt", "uptime.txt", "top_header_linux.txt"])
def test_load_average_from_proc_uptime_and_top(read_fixture, name):
    text = read_fixture(f"procfs/{name}")
    rows = {r.metric: r.value for r in LOADAVG.parse(text, source=name)}
    numbers = [float(x.strip(",")) for x in text.replace("load average:", "|").split("|")[-1].split()[:3]]
    assert [rows["load_1"], rows["load_5"], rows["load_15"]] == numbers


def test_load_average_from_a_freebsd_top_header():
    # FreeBSD/pfSense top header layout (seed 000's server), typed here after FreeBSD top's format.
    text = "last pid: 75836;  load averages:  0.05,  0.13,  0.11  up 12+03:41:40  10:11:49"
    assert [r.value for r in LOADAVG.parse(text, source="top")] == [0.05, 0.13, 0.11]


def test_procstat_deltas_add_up_and_match_raw_counters(read_fixture):
    text = read_fixture("procfs/procstat_snapshots.txt")
    snapshots, clk_tck = parse_snapshots(text)
    assert clk_tck == 100 and len(snapshots) == 3
    rows = PROCSTAT.parse(text, source="procstat")
    total = {(r.dims["cpu"], r.dims["state"]): r.value for r in rows if r.metric == "cpu_time"
             and "interval_start" not in r.dims}
    expected_user = (snapshots[-1].cpu["all"]["user"] - snapshots[0].cpu["all"]["user"]) / 100
    assert total[("all", "user")] == pytest.approx(expected_user)
    parts = [r.value for r in rows if r.metric == "net_rx_bytes" and r.dims.get("iface") == "lo"
             and "interval_start" in r.dims]
    whole = next(r.value for r in rows if r.metric == "net_rx_bytes" and r.dims == {"iface": "lo"})
    assert len(parts) == 2 and sum(parts) == whole
    elapsed = next(r.value for r in rows if r.metric == "elapsed")
    busy_and_idle = sum(v for (cpu, state), v in total.items() if cpu == "all" and state not in ("guest", "guest_nice"))
    assert busy_and_idle == pytest.approx(2 * elapsed, rel=0.15)  # 2 CPUs x wall time, at 10 ms ticks


def test_procstat_refuses_a_counter_that_goes_back(read_fixture):
    clock, *snapshots = read_fixture("procfs/procstat_snapshots.txt").split("@timestamp")
    reordered = clock + "".join("@timestamp" + s for s in snapshots[1:] + snapshots[:1])  # first one moved last
    with pytest.raises(ParseError, match="not decreasing"):
        PROCSTAT.parse(reordered, source="reordered")


def test_per_operation_costs_for_seed_004():
    rows = [Measurement("cpu_time", 2.0, "s", {"cpu": "all", "state": "user"}),
            Measurement("cpu_time", 1.0, "s", {"cpu": "all", "state": "system"}),
            Measurement("cpu_time", 7.0, "s", {"cpu": "all", "state": "idle"}),
            Measurement("cpu_time", 0.5, "s", {"cpu": "0", "state": "user"}),
            Measurement("net_rx_bytes", 6000.0, "byte", {"iface": "eth0"}),
            Measurement("net_tx_bytes", 4000.0, "byte", {"iface": "eth0"}),
            Measurement("net_rx_bytes", 9e9, "byte", {"iface": "lo"}),
            Measurement("net_rx_bytes", 1.0, "byte", {"iface": "eth0", "interval_start": 0.0, "interval_end": 1.0})]
    cpu, net = per_operation(rows, 1000)
    assert (cpu.metric, cpu.value, cpu.unit) == ("cpu_time_per_op", 0.003, "s/op")
    assert (net.metric, net.value, net.unit) == ("bytes_per_op", 10.0, "byte/op")
    with pytest.raises(ValueError, match="positive"):
        per_operation(rows, 0)


def test_procstat_reads_the_monitors_tail_layout(read_fixture):
    text = read_fixture("procfs/tail_form_two_snapshots.txt")
    uptimes = [float(line.split()[0]) for line in text.split("==> /proc/uptime <==\n")[1:]]
    rows = PROCSTAT.parse(text, source="tail_form")
    assert next(r.value for r in rows if r.metric == "elapsed") == pytest.approx(uptimes[1] - uptimes[0])
    assert {r.dims["iface"] for r in rows if r.metric == "net_rx_bytes"} >= {"lo"}  # /proc/net/snmp lines skipped
    assert not any(r.dims.get("iface") in ("Ip", "Tcp", "Udp") for r in rows)


def test_cgroup_snapshots_give_the_hosts_own_cpu_time_by_hand(read_fixture):
    rows = {m.metric: m.value for m in tools.get("cgroup").parse(read_fixture("cgroup/two_snapshots.txt"))}
    # cpuacct.usage 28495875 -> 1049110253 ns; cpu.stat user_usec 4070 -> 915309, system_usec 24425 -> 133800;
    # /proc/uptime 10165.48 -> 10166.74
    assert rows["cpu_seconds"] == pytest.approx((1049110253 - 28495875) / 1e9, abs=1e-12)
    assert rows["user_seconds"] == pytest.approx((915309 - 4070) / 1e6, abs=1e-12)
    assert rows["system_seconds"] == pytest.approx((133800 - 24425) / 1e6, abs=1e-12)
    assert rows["elapsed"] == pytest.approx(1.26, abs=1e-9)
    assert rows["cpu_load"] == pytest.approx(rows["cpu_seconds"] / 1.26, rel=1e-12)


@pytest.mark.parametrize("text, found", [
    ("==> /proc/uptime <==\n1.00 0\n==> /x/cpuacct.usage <==\n5\n", "two snapshots"),
    ("==> /proc/uptime <==\n1.00 0\n==> /x/cpuacct.usage <==\n5\n==> /proc/uptime <==\n2.00 0\n"
     "==> /x/cpuacct.usage <==\n4\n", "not decreasing"),
    ("==> /proc/uptime <==\n1.00 0\n==> /proc/uptime <==\n2.00 0\n", "cpuacct.usage or cpu.stat usage_usec"),
    ("==> /proc/uptime <==\nfast 0\n==> /proc/uptime <==\n2.00 0\n", "numbers in uptime"),
])
def test_cgroup_snapshots_that_cannot_be_trusted_are_refused(text, found):
    with pytest.raises(ParseError, match=found):
        tools.get("cgroup").parse(text, source="x")


def test_costs_per_operation_come_from_the_tools_own_operation_count(read_fixture):
    from perflab.tidy import per_operation
    cgroup = tools.get("cgroup").parse(read_fixture("cgroup/two_snapshots.txt"))
    (row,) = per_operation("cgroup", list(cgroup), 1000)
    assert row.metric == "cpu_seconds_per_op" and row.unit == "s/op"
    assert row.value == pytest.approx((1049110253 - 28495875) / 1e9 / 1000)
    assert per_operation("sadf", list(cgroup), 1000) == []
    ops = [Measurement("total_ios", 300.0, "count", {"direction": "read"}),
           Measurement("total_ios", 100.0, "count", {"direction": "write"})]
    assert tools.get("fio").operations(ops) == 400
    assert tools.get("blockproto").operations([Measurement("ops", 7.0, "count")]) == 7
    assert tools.get("iperf3").operations([Measurement("packets", 9.0, "packet"),
                                           Measurement("packets", 4.0, "packet", {"stream": 1})]) == 9
    assert tools.get("iperf3").operations([]) is None
