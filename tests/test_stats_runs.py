"""perflab compare-runs: per cell and metric the change between two runs, against the SESOI, on one machine."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from perflab.stats.cli import main as stats_main
from perflab.stats.runs import compare_runs

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
