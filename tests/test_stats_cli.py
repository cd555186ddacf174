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
from perflab.cli.stats import register

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
    assert "excluded 12 warm-up rows" in out and "values in bit/s" in out
    assert "Description" in out and "cell=y vs cell=x: Welch's t; default for independent groups" in out
    assert "difference of means: " in out and " bit/s, 95 % CI [" in out and "relative: " in out and " %, 95 % CI [" in out
    assert "e+" not in out and "e-" not in out  # ordinary magnitudes in fixed notation


def test_compare_json_matches_the_library(tidy, capsys):
    code, out, _ = run(["compare", str(tidy), "--metric", "throughput", "--by", "cell",
                        "--paired-by", "block", "--json"], capsys)
    assert code == 0
    payload = json.loads(out)
    df = pd.read_csv(tidy)
    df = df[~df["warmup"]].sort_values("block")
    expected = compare(df[df.cell == "x"]["value"], df[df.cell == "y"]["value"], paired=True,
                       labels=("cell=x", "cell=y"))
    got = payload["comparison"]
    assert got["test"] == expected.test == "paired t" and got["p_value"] == pytest.approx(expected.p_value)
    assert got["rel_diff_ci"] == pytest.approx(list(expected.rel_diff_ci))
    assert got["estimate_ci"] == pytest.approx(list(expected.estimate_ci))
    assert [row["n"] for row in payload["describe"]] == [12, 12]
    assert payload["omnibus"] is None and payload["paired_by"] == "block" and payload["unit"] == "bit/s"


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
    assert code == 2 and "one value per run" in err and "--per-run" in err


@pytest.fixture
def iperf_tidy(tmp_path: Path) -> Path:
    """A tidy table shaped like iperf3's: a summary row and per-interval rows per run, in bit/s."""
    rng = np.random.default_rng(9)
    rows = []
    for block in range(10):
        for parallel, mean in ((1, 9.0e9), (4, 9.6e9)):
            run_id = f"{block}-{parallel}"
            common = {"run_id": run_id, "block": block, "position": parallel, "warmup": False, "parallel": parallel,
                      "metric": "throughput", "unit": "bit/s"}
            values = rng.normal(mean, 2e8, 4)
            rows.append({**common, "summary": True, "value": values.mean(), "interval_start": None})
            rows += [{**common, "summary": False, "value": v, "interval_start": float(i)} for i, v in enumerate(values)]
            rows.append({**common, "metric": "retransmits", "unit": "count", "summary": True, "value": 3.0,
                         "interval_start": None})
    path = tmp_path / "iperf3.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_compare_on_a_tidy_table_uses_summary_rows_and_prints_units(iperf_tidy, capsys):
    code, out, err = run(["compare", str(iperf_tidy), "--metric", "throughput", "--by", "parallel"], capsys)
    assert code == 0, err
    assert "values in Gbit/s" in out and "parallel=4 vs parallel=1: Welch's t" in out and " Gbit/s, 95 % CI" in out
    assert "e+09" not in out


def test_compare_selects_interval_rows_and_aggregates_them_per_run(iperf_tidy, capsys):
    code, _, err = run(["compare", str(iperf_tidy), "--metric", "throughput", "--by", "parallel",
                        "--where", "interval_start=*"], capsys)
    assert code == 2 and "several rows for run" in err and "['interval_start']" in err
    code, out, _ = run(["compare", str(iperf_tidy), "--metric", "throughput", "--by", "parallel",
                        "--where", "interval_start=*", "--per-run", "mean", "--json"], capsys)
    payload = json.loads(out)
    assert code == 0 and "mean of 4-4 rows per run" in payload["notes"]
    assert [r["n"] for r in payload["describe"]] == [10, 10]
    code, out, _ = run(["compare", str(iperf_tidy), "--metric", "throughput", "--by", "parallel",
                        "--where", "interval_start=2", "--json"], capsys)
    assert code == 0 and [r["n"] for r in json.loads(out)["describe"]] == [10, 10]


def test_compare_refuses_to_pool_units_and_blank_labels(iperf_tidy, tmp_path, capsys):
    code, _, err = run(["compare", str(iperf_tidy), "--metric", "value", "--by", "parallel"], capsys)
    assert code == 2 and "one unit" in err and "['bit/s', 'count']" in err
    df = pd.read_csv(iperf_tidy)
    df["host"] = df["parallel"].map({1: "a", 4: " "})
    path = tmp_path / "blank.csv"
    df.to_csv(path, index=False)
    code, _, err = run(["compare", str(path), "--metric", "throughput", "--by", "host"], capsys)
    assert code == 2 and str(path) in err and "column 'host'" in err and "non-blank group label" in err


def test_compare_names_the_test_and_runs_the_post_hoc_it_names(tidy, capsys):
    code, out, _ = run(["compare", str(tidy), "--metric", "throughput", "--by", "cell", "--test", "mannwhitney"],
                       capsys)
    assert code == 0 and "Mann-Whitney U; requested by the caller" in out and "Hodges-Lehmann shift" in out
    df = pd.read_csv(tidy)
    df.loc[df["block"] % 3 == 0, "cell"] = "z"
    df.to_csv(tidy, index=False)
    code, out, _ = run(["compare", str(tidy), "--metric", "throughput", "--by", "cell"], capsys)
    assert code == 0 and "Omnibus: Welch's ANOVA; default" in out and "Post-hoc: Games-Howell" in out
    assert "cell=y vs cell=x:" in out and "cell=z vs cell=y:" in out
    code, out, _ = run(["compare", str(tidy), "--metric", "throughput", "--by", "cell", "--test", "mannwhitney"],
                       capsys)
    assert "Omnibus: Kruskal-Wallis" in out and "Post-hoc: Dunn (Holm-adjusted)" in out


def test_json_tells_unbounded_from_undefined(tmp_path, capsys):
    path = tmp_path / "zero.csv"
    pd.DataFrame({"g": ["a"] * 3 + ["b"] * 3, "v": [-1.0, 1.0, 0.5, 2.0, 3.0, 2.5]}).to_csv(path, index=False)
    code, out, _ = run(["compare", str(path), "--metric", "v", "--by", "g", "--json"], capsys)
    got = json.loads(out)["comparison"]
    assert code == 0 and got["rel_diff_ci"] == ["-inf", "inf"]  # a's mean is not distinguishable from 0
    assert got["df"] is not None and got["rel_diff_ci_bootstrap"] == [None, None]  # not computed at n < 30


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
    done = subprocess.run([sys.executable, "-m", "perflab.cli.stats", "recheck",
                           str(PUBLISHED / "003-openstack-opennebula-table2-microbenchmarks.csv")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "2 of 10 comparison(s) flagged" in done.stdout


def test_a_group_too_small_is_named_with_file_metric_and_group(tidy, capsys):
    df = pd.read_csv(tidy)
    df.loc[(df["cell"] == "y") & (df["block"] > 0), "cell"] = "x"
    df.to_csv(tidy, index=False)
    code, _, err = run(["compare", str(tidy), "--metric", "throughput", "--by", "cell"], capsys)
    assert code == 2 and f"{tidy}, --metric throughput, group 'cell=y': expected at least 2 values" in err


def test_three_paired_groups_run_the_repeated_measures_anova_and_its_post_hoc(tidy, capsys):
    df = pd.read_csv(tidy)
    z = df[df["cell"] == "y"].assign(cell="z", run_id=lambda d: d["run_id"] + "z", value=lambda d: d["value"] + 3)
    pd.concat([df, z]).to_csv(tidy, index=False)
    code, out, _ = run(["compare", str(tidy), "--metric", "throughput", "--by", "cell", "--paired-by", "block",
                        "--json"], capsys)
    payload = json.loads(out)
    assert code == 0 and payload["comparison"] is None
    assert payload["omnibus"]["test"] == "repeated-measures ANOVA"
    assert [(p["group_a"], p["group_b"]) for p in payload["omnibus"]["pairs"]] == [("x", "y"), ("x", "z"), ("y", "z")]
    assert payload["omnibus"]["pairs"][2]["diff"] == pytest.approx(3.0)
