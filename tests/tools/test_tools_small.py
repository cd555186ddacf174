"""ping and dd parsers: captured outputs and the lines seed 001 quotes (decimal commas)."""

from __future__ import annotations

from statistics import fmean

import pytest

from perflab import tools
from perflab.tools.base import ParseError

PING, DD = tools.get("ping"), tools.get("dd")


def values(rows):
    return {r.metric: r.value for r in rows if not r.dims}


def test_ping_summary_matches_the_replies(read_fixture):
    rows = PING.parse(read_fixture("ping/loopback_c5.txt"), source="loopback_c5.txt")
    replies = [r.value for r in rows if r.metric == "rtt"]
    top = values(rows)
    assert len(replies) == top["packets_received"] == top["packets_sent"] == 5
    assert top["loss"] == 0
    assert top["rtt_min"] == min(replies) and top["rtt_max"] == max(replies)
    assert top["rtt_avg"] == pytest.approx(fmean(replies), abs=1e-6)  # printed to 1 us


def test_ping_summary_line_alone_from_seed_001(read_fixture):
    top = values(PING.parse(read_fixture("ping/seed001_fig43_summary.txt"), source="fig43"))
    assert top == pytest.approx({"rtt_min": 139e-6, "rtt_avg": 163e-6, "rtt_max": 213e-6, "rtt_mdev": 21e-6})


def test_ping_total_loss_reports_counts_without_rtt():
    # iputils' summary when nothing answers (typed here after iputils' format; no host was pinged).
    text = "--- 10.9.9.9 ping statistics ---\n3 packets transmitted, 0 received, 100% packet loss, time 2047ms\n"
    assert values(PING.parse(text, source="lost")) == {"packets_sent": 3, "packets_received": 0, "loss": 100}


def test_ping_error_is_quoted():
    with pytest.raises(ParseError, match="Name or service not known"):
        PING.parse("", "ping: nosuchhost: Name or service not known\n", source="err")


def test_dd_captured_line_agrees_with_bytes_over_time(read_fixture):
    top = values(DD.parse("", read_fixture("dd/direct_64m.stderr.txt"), source="direct_64m"))
    assert top["bytes"] == 64 * 2**20 and top["records_full"] == 64
    assert top["throughput"] == pytest.approx(top["throughput_computed"], rel=0.005)  # 3 printed digits


@pytest.mark.parametrize(("name", "copied", "elapsed", "rate"), [
    ("seed001_fig63_ssd.txt", 5368709120, 11.2378, 478e6),
    ("seed001_fig110_krbd.txt", 5368709120, 11.7749, 456e6),
    ("seed001_fig92_spanish_locale.txt", 104857600, 0.0795434, 1.3e9),
])
def test_dd_decimal_comma_lines_from_seed_001(read_fixture, name, copied, elapsed, rate):
    top = values(DD.parse(read_fixture(f"dd/{name}"), source=name))
    assert (top["bytes"], top["elapsed"], top["throughput"]) == (copied, pytest.approx(elapsed), rate)
    assert top["throughput_computed"] == pytest.approx(rate, rel=0.02)


def test_dd_seed_001_hdd_line_is_internally_inconsistent(read_fixture):
    # "27 s, 202 MB/s" for 5368709120 bytes: bytes / elapsed is 198.8 MB/s, outside the
    # rounding of a three-digit rate; the quoted elapsed time lost digits.
    top = values(DD.parse(read_fixture("dd/seed001_fig54_hdd.txt"), source="fig54"))
    assert abs(top["throughput_computed"] / top["throughput"] - 1) > 0.005


def test_dd_seed_001_fig92_wrote_twice_what_its_command_asks(read_fixture):
    # The quoted command is bs=1M count=50, the output reports 100 full records.
    top = values(DD.parse(read_fixture("dd/seed001_fig92_spanish_locale.txt"), source="fig92"))
    assert top["records_full"] == 100 and top["bytes"] == 100 * 2**20


def test_dd_failure_is_refused(read_fixture):
    with pytest.raises(ParseError, match="dd's result line"):
        DD.parse("", read_fixture("dd/open_failed.stderr.txt"), source="open_failed")


def test_dd_command_needs_an_output():
    with pytest.raises(ValueError, match="'of'"):
        DD.commands({"bs": "1M"}, {})
    assert DD.commands({"of": "/tmp/x", "bs": "1G", "count": 5, "oflag": "direct"}, {})[0].line() == (
        "dd if=/dev/zero of=/tmp/x bs=1G count=5 oflag=direct")
