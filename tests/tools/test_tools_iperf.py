"""iperf3 (JSON and text) and iperf2 (text and CSV) parsers against captured and quoted outputs.

Expected values come from the tools' own summary fields (read here independently with
``json`` or a regular expression), not from the parser under test.
"""

from __future__ import annotations

import json
import re

import pytest

from perflab import tools
from perflab.tools.base import ParseError

IPERF3 = tools.get("iperf3")
IPERF2 = tools.get("iperf2")


def summary(rows):
    """The sample's summary rows (no dims) by metric."""
    return {r.metric: r.value for r in rows if not r.dims}


def test_iperf3_tcp_summary_streams_and_intervals_match_iperf3s_own_sums(read_fixture):
    text = read_fixture("iperf3/tcp_p2.json")
    doc, rows = json.loads(text), IPERF3.parse(text, source="tcp_p2.json")
    end = doc["end"]
    top = summary(rows)
    assert top["throughput"] == end["sum_received"]["bits_per_second"]
    assert top["throughput_sent"] == end["sum_sent"]["bits_per_second"]
    assert top["retransmits"] == end["sum_sent"]["retransmits"]
    per_stream = [r for r in rows if set(r.dims) == {"stream"} and r.metric == "bytes"]
    assert len(per_stream) == 2
    assert sum(r.value for r in per_stream) == end["sum_received"]["bytes"]
    sums = [r for r in rows if r.metric == "bytes" and "interval_start" in r.dims and "stream" not in r.dims]
    assert len(sums) == len(doc["intervals"])
    assert sum(r.value for r in sums) == pytest.approx(end["sum_sent"]["bytes"], rel=1e-9)
    for total in sums:
        start = round(total.dims["interval_start"], 2)
        streams = [r.value for r in rows if r.metric == "bytes" and "stream" in r.dims
                   and round(r.dims.get("interval_start", -1), 2) == start]
        assert len(streams) == 2 and sum(streams) == total.value


def test_iperf3_udp_loss_and_packets_match_per_stream_reports(read_fixture):
    text = read_fixture("iperf3/udp_p2.json")
    end = json.loads(text)["end"]
    rows = IPERF3.parse(text, source="udp_p2.json")
    top = summary(rows)
    assert top["packets"] == end["sum"]["packets"]
    assert top["jitter"] == pytest.approx(end["sum"]["jitter_ms"] / 1000)
    streams = [r.value for r in rows if r.metric == "packets" and set(r.dims) == {"stream"}]
    assert sum(streams) == top["packets"]


def test_iperf3_reverse_udp_intervals_carry_receiver_jitter_for_windows(read_fixture):
    rows = IPERF3.parse(read_fixture("iperf3/udp_reverse.json"), source="udp_reverse.json")
    jitter = [r for r in rows if r.metric == "jitter" and "interval_start" in r.dims]
    assert len(jitter) == 2 and all(r.value is not None and r.value >= 0 for r in jitter)
    assert [(r.dims["interval_start"], r.dims["interval_end"]) for r in jitter][-1] == pytest.approx((1, 2), abs=1e-3)
    lost = sum(r.value for r in rows if r.metric == "lost_packets" and "interval_start" in r.dims)
    assert lost == summary(rows)["lost_packets"]


def test_iperf3_text_output_quoted_in_seed_001(read_fixture):
    rows = IPERF3.parse(read_fixture("iperf3/seed001_fig45_text.txt"), source="seed001_fig45_text.txt")
    top = summary(rows)
    assert top["throughput"] == pytest.approx(9.40e9)
    assert top["retransmits"] == 119
    intervals = [r for r in rows if r.metric == "retransmits" and "interval_start" in r.dims]
    assert len(intervals) == 20
    assert sum(r.value for r in intervals) == top["retransmits"]  # 37 + 32 + 11 + 39
    assert top["bytes"] == pytest.approx(21.9 * 2**30)


def test_iperf3_error_key_is_reported(read_fixture):
    with pytest.raises(ParseError, match="unable to connect to server: Connection refused"):
        IPERF3.parse(read_fixture("iperf3/connect_refused.json"), source="connect_refused.json")


def test_iperf3_truncated_json_is_refused(read_fixture):
    text = read_fixture("iperf3/tcp_p2.json")
    with pytest.raises(ParseError, match="truncated"):
        IPERF3.parse(text[: len(text) // 2], source="cut.json")


def test_iperf3_nan_becomes_missing_not_zero(read_fixture):
    # Older iperf3 versions print "lost_percent": -nan (esnet/iperf#613, #826); simulate it here.
    text = read_fixture("iperf3/udp_p2.json").replace('"lost_percent":\t0.2554445107398568', '"lost_percent":\t-nan', 1)
    assert "-nan" in text
    assert summary(IPERF3.parse(text, source="nan.json"))["loss"] is None


def test_iperf3_error_line_after_the_json_is_ignored(read_fixture):
    # esnet/iperf#1143: "iperf3: error - unable to send control message" after the closing brace.
    text = read_fixture("iperf3/tcp_p2.json")
    junk = text + "iperf3: error - unable to send control message: Bad file descriptor\n"
    assert summary(IPERF3.parse(junk, source="junk.json")) == summary(IPERF3.parse(text, source="ok.json"))


def test_iperf3_commands():
    server, client = IPERF3.commands({"duration": 2, "parallel": 4, "protocol": "udp", "reverse": True,
                                      "bitrate": "100M", "length": 466, "interval": 10}, {"server": "10.0.0.2"})
    assert server.service and server.argv[:2] == ("iperf3", "-s")
    assert client.argv[:3] == ("iperf3", "-c", "10.0.0.2")
    for flag in ("-J", "-u", "-R"):
        assert flag in client.argv
    assert client.argv[client.argv.index("-b") + 1] == "100M"
    assert client.argv[client.argv.index("-i") + 1] == "10"


def test_iperf2_adaptive_text_sum_matches_streams_within_print_rounding(read_fixture):
    text = read_fixture("iperf2/tcp_p2_adaptive.txt")
    rows = IPERF2.parse(text, source="tcp_p2_adaptive.txt")
    sum_line = re.findall(r"\[SUM\] 0\.0000-\S+ sec\s+\S+ GBytes\s+(\S+) Gbits/sec", text)[-1]
    top = summary(rows)
    assert top["throughput"] == float(sum_line) * 1e9
    streams = [r.value for r in rows if r.metric == "throughput" and set(r.dims) == {"stream"}]
    assert sum(streams) == pytest.approx(top["throughput"], rel=0.01)
    sum_intervals = [r for r in rows if r.metric == "throughput" and "interval_start" in r.dims
                     and "stream" not in r.dims]
    assert len(sum_intervals) == 2


def test_iperf2_csv_without_sum_line_adds_the_streams(read_fixture):
    text = read_fixture("iperf2/tcp_p2.csv")
    finals = [line.split(",") for line in text.splitlines() if ",0.0-2.0," in line]
    rows = IPERF2.parse(text, source="tcp_p2.csv")
    top = summary(rows)
    assert top["throughput"] == sum(float(f[8]) for f in finals)
    assert top["bytes"] == sum(float(f[7]) for f in finals)


def test_iperf2_enhanced_text_gives_exact_bytes_and_retries(read_fixture):
    rows = IPERF2.parse(read_fixture("iperf2/tcp_enhanced.txt"), source="tcp_enhanced.txt")
    top = summary(rows)
    assert top["bytes"] == 3208380476
    assert top["retransmits"] == 11
    assert top["bytes"] * 8 / 2.0202 == pytest.approx(top["throughput"], rel=1e-4)


def test_iperf2_udp_server_report_gives_loss_and_jitter(read_fixture):
    rows = IPERF2.parse(read_fixture("iperf2/udp_server_report.txt"), source="udp_server_report.txt")
    top = summary(rows)
    assert (top["lost_packets"], top["packets"]) == (156, 56260)
    assert top["loss"] == pytest.approx(100 * 156 / 56260)  # printed as 0.28%
    assert top["throughput"] == 104572471 and top["throughput_sent"] == 104859045


def test_iperf2_csv_interval_without_a_lost_count_has_no_loss_rather_than_failing():
    # a receiver's CSV line whose Lost field is nan: that interval's lost packets and loss are missing
    csv = ("20261122195132,127.0.0.1,5001,127.0.0.1,45465,3,0.0-1.0,13107182,104857456,0.010,nan,8916,0.000,0\n"
           "20261122195133,127.0.0.1,5001,127.0.0.1,45465,3,1.0-2.0,13098794,104790352,0.011,2,8910,0.022,0\n"
           "20261122195133,127.0.0.1,5001,127.0.0.1,45465,3,0.0-2.0,26206908,104718410,0.011,2,17826,0.011,0\n")
    loss = {r.dims.get("interval_start"): r.value for r in IPERF2.parse(csv, source="x.csv") if r.metric == "loss"}
    assert loss[0.0] is None and loss[1.0] == pytest.approx(100 * 2 / 8910)
    assert loss[None] == pytest.approx(100 * 2 / 17826)


def test_iperf2_reverse_udp_intervals_add_up_and_give_seed_002_windows(read_fixture):
    rows = IPERF2.parse(read_fixture("iperf2/udp_reverse_intervals.txt"), source="udp_reverse_intervals.txt")
    top = summary(rows)
    lost = [r.value for r in rows if r.metric == "lost_packets" and "interval_start" in r.dims]
    packets = [r.value for r in rows if r.metric == "packets" and "interval_start" in r.dims]
    assert len(lost) == 6
    assert (sum(lost), sum(packets)) == (top["lost_packets"], top["packets"]) == (192, 84383)
    spans = {(round(r.dims["interval_start"], 3), round(r.dims["interval_end"], 3)) for r in rows
             if r.metric == "jitter" and "interval_start" in r.dims and "stream" not in r.dims}
    assert {(0.5, 1.0), (1.5, 2.0), (2.5, 3.0)} <= spans, "the seed's windows have their interval reports"


@pytest.mark.parametrize(("name", "message"), [
    ("udp_sender_only.csv", "receiver report"),
    ("udp_no_server_report.txt", "receiver report"),
    ("udp_reverse_no_traffic.txt", "0/0"),
    ("connect_refused.txt", "connect failed: Connection refused"),
])
def test_iperf2_refuses_outputs_without_trustworthy_numbers(read_fixture, name, message):
    with pytest.raises(ParseError, match=re.escape(message)) as error:
        IPERF2.parse(read_fixture(f"iperf2/{name}"), source=name)
    assert name in str(error.value)


def test_iperf2_commands_use_exact_units_and_udp_on_both_sides():
    server, client = IPERF2.commands({"protocol": "udp", "bitrate": "100M", "length": 466, "interval": 10,
                                      "duration": 600}, {"server": "10.0.0.2"})
    assert "-u" in server.argv and "-u" in client.argv
    assert client.argv[client.argv.index("-f") + 1] == "b"
    assert "-y" in IPERF2.commands({"csv": True}, {"server": "h"})[1].argv
