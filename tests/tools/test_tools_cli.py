"""``perflab parse``: the handler prints rows, or the parser's error, with a useful exit code."""

from __future__ import annotations

import argparse
import json

from perflab.cli import tools as cli
from perflab.tools.base import Measurement


def run(argv):
    parser = argparse.ArgumentParser(prog="perflab")
    cli.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.func(args)


def test_table_output_for_a_fixture(capsys, fixture_path):
    assert run(["parse", "ping", str(fixture_path("ping/loopback_c5.txt"))]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].split() == ["metric", "value", "unit", "seq"]
    assert "rtt_avg" in out and "12 rows" in err and "ping parser v1" in err


def test_json_lines_with_separate_stderr(capsys, fixture_path):
    stderr = fixture_path("dd/direct_64m.stderr.txt")
    assert run(["parse", "dd", "/dev/null", "--stderr", str(stderr), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {"metric": "bytes", "value": 67108864.0, "unit": "byte"} in rows


def test_parse_error_exits_1_and_names_the_file(capsys, fixture_path):
    path = fixture_path("iperf3/connect_refused.json")
    assert run(["parse", "iperf3", str(path)]) == 1
    err = capsys.readouterr().err
    assert str(path) in err and "Connection refused" in err


def test_unknown_tool_and_missing_file_exit_2(capsys, tmp_path):
    assert run(["parse", "netperf", str(tmp_path)]) == 2
    assert "known tools" in capsys.readouterr().err
    assert run(["parse", "fio", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_format_table_aligns_dims_and_blanks_missing_values():
    table = cli.format_table([Measurement("loss", None, "%"), Measurement("rtt", 0.5, "s", {"seq": 1})])
    header, first, second = table.splitlines()
    assert header.split() == ["metric", "value", "unit", "seq"]
    assert first.split() == ["loss", "%"] and second.split() == ["rtt", "0.5", "s", "1"]
