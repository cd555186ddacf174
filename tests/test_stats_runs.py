"""perflab compare-runs: per cell and metric the change between two runs, against the SESOI, on one machine."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from perflab.evidence import contention_changes
from perflab.cli.stats import main as stats_main
from perflab.stats.runs import Target, compare_runs

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "data/raw/unnoba-fio-qd"


def _tidy(values: dict[str, list[float]]) -> pd.DataFrame:
    rows = [{"run_id": f"{cell}-{i}", "warmup": False, "started_utc": "", "cell": cell, "metric": "iops",
             "summary": True, "value": v, "unit": "op/s"} for cell, vs in values.items() for i, v in enumerate(vs)]
    return pd.DataFrame(rows)[["run_id", "warmup", "started_utc", "cell", "metric", "summary", "value", "unit"]]


def test_changes_are_judged_against_the_sesoi():
    rng = np.random.default_rng(5)
    old = _tidy({"a": list(100 + rng.normal(0, 1, 40)), "b": list(100 + rng.normal(0, 1, 40)),
                 "c": list(100 + rng.normal(0, 20, 5))})
    new = _tidy({"a": list(130 + rng.normal(0, 1, 40)), "b": list(100.2 + rng.normal(0, 1, 40)),
                 "c": list(100 + rng.normal(0, 20, 5))})
    table = compare_runs(old, new, ["iops"], sesoi=0.05).set_index("cell")
    assert list(table["status"]) == ["exceeds", "within", "unclear"]
    assert (table["ci_level"] == 1 - 0.05 / 3).all() and table.loc["a", "ci_low"] > 0.25


def test_the_same_run_twice_shows_no_change_and_json_is_strict(capsys):
    assert stats_main(["compare-runs", str(RUN), str(RUN), "--metric", "iops", "--where", "direction=read",
                       "--where", "job=", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["host_changes"] == [] and out["rows"]
    assert all(abs(r["change"]) < 1e-12 and r["status"] != "exceeds" for r in out["rows"])


def test_runs_on_different_host_facts_are_refused_unless_allowed(tmp_path, capsys):
    old = tmp_path / "old"
    shutil.copytree(RUN, old)
    first = sorted((old / "blocks/0").glob("fingerprint-before-*.json"))[0]
    fp = json.loads(first.read_text())
    fp["facts"]["cpu.model"] = "Another CPU"
    first.write_text(json.dumps(fp))
    assert stats_main(["compare-runs", str(old), str(RUN), "--metric", "iops"]) == 2
    err = capsys.readouterr().err
    assert "cpu.model changed from 'Another CPU'" in err and "--allow-host-change" in err and "Traceback" not in err


def _target_rows(values: dict[str, list[float]]) -> pd.DataFrame:
    rows = [{"run_id": f"{cell}-{i}", "warmup": False, "started_utc": "", "parallel": cell, "metric": "throughput",
             "summary": True, "value": v, "unit": "bit/s"} for cell, vs in values.items() for i, v in enumerate(vs)]
    return pd.DataFrame(rows)[["run_id", "warmup", "started_utc", "parallel", "metric", "summary", "value", "unit"]]


def test_each_question_takes_its_own_sesoi_on_its_within_cells():
    rng = np.random.default_rng(3)
    old = _target_rows({"1": list(100 + rng.normal(0, 0.5, 40)), "8": list(100 + rng.normal(0, 0.5, 40))})
    new = _target_rows({"1": list(107 + rng.normal(0, 0.5, 40)), "8": list(107 + rng.normal(0, 0.5, 40))})
    targets = [Target("Q1", "throughput", 0.10, within={"parallel": "1"}),
               Target("Q2", "throughput", 0.05, within={"parallel": "8"})]
    table = compare_runs(old, new, targets=targets)
    assert list(zip(table["question"], table["parallel"], table["sesoi"], table["status"])) == [
        ("Q1", "1", 0.10, "within"), ("Q2", "8", 0.05, "exceeds")], "a 7 % change: inside Q1's 10 %, beyond Q2's 5 %"


def test_with_several_runs_the_run_is_a_level_of_variance():
    rng = np.random.default_rng(11)

    def run(level: float) -> pd.DataFrame:
        return _tidy({"a": list(level + rng.normal(0, 0.5, 40))})

    olds, news = [run(100), run(104), run(96)], [run(103), run(99), run(107)]  # runs shift by ~4 %, samples by 0.5 %
    pooled = compare_runs(olds[0], news[0], ["iops"], sesoi=0.02)
    nested = compare_runs(olds, news, ["iops"], sesoi=0.02)
    assert pooled["status"].iloc[0] == "exceeds", "one run against one run: the runs' shift looks like a change"
    assert nested["model"].iloc[0] == "run as random effect" and (nested[["runs_old", "runs_new"]].iloc[0] == 3).all()
    assert nested["status"].iloc[0] == "unclear" and nested["ci_high"].iloc[0] - nested["ci_low"].iloc[0] > 0.04


def _with_contention(src: Path, dst: Path, steal: float) -> Path:
    """A copy of a committed run whose samples carry a contention record with ``steal`` (manifest redone)."""
    shutil.copytree(src, dst)
    for meta_path in dst.glob("samples/*/meta.json"):
        meta = json.loads(meta_path.read_text())
        meta["contention"] = {"format": 3, "steal": steal, "other_cpus": 0.02, "outside_cpus": 0.01,
                              "lab_kernel_cpus": 0.01, "bounds": {"max_other_cpus": 0.1, "max_steal": 1.0},
                              "gate_gave_up": False, "exceeded": [], "contended": steal > 0.01}
        meta_path.write_text(json.dumps(meta))
    manifest = dst / "MANIFEST.sha256"
    lines = []
    for line in manifest.read_text().splitlines():
        _, name = line.split("  ", 1)
        lines.append(f"{hashlib.sha256((dst / name).read_bytes()).hexdigest()}  {name}")
    manifest.write_text("\n".join(lines) + "\n")
    return dst


def test_runs_under_different_steal_are_shown_side_by_side_and_refused_unless_qualified(tmp_path, capsys):
    quiet = _with_contention(RUN, tmp_path / "quiet", 0.003)
    noisy = _with_contention(RUN, tmp_path / "noisy", 0.15)
    lines, differs = contention_changes(quiet, noisy)
    assert "median 0.3 %" in lines[1] and "median 15.0 %" in lines[1] and lines[1].lstrip().startswith("steal")
    assert differs == ["the median steal differs (0.3 % old, 15.0 % new) by more than the bound of 1 %"]
    args = ["compare-runs", str(quiet), str(noisy), "--metric", "iops", "--where", "direction=read", "--where", "job="]
    assert stats_main(args) == 2
    err = capsys.readouterr().err
    assert "ran under different platform noise: the median steal differs" in err and "--allow-contention-change" in err
    assert stats_main([*args, "--allow-contention-change"]) == 0
    out = capsys.readouterr().out
    assert "contended" in out and "qualified: the median steal differs" in out and "iops [" in out
    assert contention_changes(quiet, _with_contention(RUN, tmp_path / "again", 0.004))[1] == []
