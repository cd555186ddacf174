"""``perflab compare`` and ``perflab recheck`` handlers, called directly and through ``python -m``."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perflab.stats import compare
from perflab.stats.cli import register

PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "raw" / "published"


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="perflab")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code = args.func(args)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def tidy(tmp_path: Path) -> Path:
    """A tidy table as perflab writes it: RMIT blocks, warm-ups flagged, metric/value columns."""
    rng = np.random.default_rng(5)
    rows = []
    for block in range(12):
        for cell, mean in (("x", 100.0), ("y", 104.0)):
            rows.append({"run_id": f"{block}-{cell}", "block": block, "cell": cell, "warmup": False,
                         "metric": "throughput", "value": rng.normal(mean, 2.0), "unit": "bit/s"})
        rows.append({"run_id": f"{block}-w", "block": block, "cell": "x", "warmup": True,
                     "metric": "throughput", "value": 1.0, "unit": "bit/s"})
    path = tmp_path / "campaign.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_compare_prints_description_and_comparison(tidy, capsys):
    code, out, _ = run(["compare", str(tidy), "--metric", "throughput", "--by", "cell"], capsys)
    assert code == 0
    assert "excluded 12 warm-up row(s)" in out
    assert "Description" in out and "Comparisons (p adjusted: Holm)" in out
    assert "y vs x" in out


def test_compare_json_matches_the_library(tidy, capsys):
    code, out, _ = run(["compare", str(tidy), "--metric", "throughput", "--by", "cell",
                        "--paired-by", "block", "--json"], capsys)
    assert code == 0
    payload = json.loads(out)
    df = pd.read_csv(tidy)
    df = df[~df["warmup"]].sort_values("block")
    expected = compare(df[df.cell == "x"]["value"], df[df.cell == "y"]["value"], paired=True,
                       labels=("x", "y"))
    got = payload["comparisons"][0]
    assert got["test"] == expected.test and got["p_value"] == pytest.approx(expected.p_value)
    assert got["rel_diff_ci"] == pytest.approx(list(expected.rel_diff_ci))
    assert [row["n"] for row in payload["describe"]] == [12, 12]
    assert payload["omnibus"] is None and payload["paired_by"] == "block"


def test_compare_errors_are_one_clear_line(tidy, capsys):
    code, out, err = run(["compare", str(tidy), "--metric", "latency", "--by", "cell"], capsys)
    assert code == 2 and out == ""
    assert "perflab compare: error:" in err and "metrics ['throughput']" in err
    code, _, err = run(["compare", str(tidy.with_name("missing.csv")), "--metric", "v", "--by", "c"], capsys)
    assert code == 2 and "missing.csv" in err


def test_compare_refuses_several_rows_per_run(tmp_path, capsys):
    path = tmp_path / "intervals.csv"
    pd.DataFrame({"run_id": ["r1", "r1", "r2", "r2"], "cell": ["x", "x", "y", "y"],
                  "metric": "bps", "value": [1.0, 2.0, 3.0, 4.0]}).to_csv(path, index=False)
    code, _, err = run(["compare", str(path), "--metric", "bps", "--by", "cell"], capsys)
    assert code == 2 and "one value per run" in err


def test_recheck_reports_flags_and_claims(capsys):
    code, out, _ = run(["recheck", str(PUBLISHED / "003-openstack-opennebula-table2-microbenchmarks.csv"),
                        str(PUBLISHED / "003-openstack-opennebula-table3-nas.csv"),
                        "--claims", str(PUBLISHED / "003-openstack-opennebula-claims.csv")], capsys)
    assert code == 0
    assert "comparison(s) flagged" in out and "claim(s) flagged" in out
    assert "STREAM SCALE" in out


def test_recheck_json_is_strict(capsys):
    code, out, _ = run(["recheck", str(PUBLISHED / "003-openstack-opennebula-table3-nas.csv"), "--json"], capsys)
    assert code == 0
    payload = json.loads(out)  # strict JSON: NaN became null
    assert "NaN" not in out
    rows = {r["name"]: r for r in payload["recheck"]}
    assert rows["OMP FT 2"]["p_welch"] is None and payload["claims"] is None


def test_module_entry_point_runs_recheck():
    done = subprocess.run([sys.executable, "-m", "perflab.stats.cli", "recheck",
                           str(PUBLISHED / "003-openstack-opennebula-table2-microbenchmarks.csv")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "2 of 10 comparison(s) flagged" in done.stdout
