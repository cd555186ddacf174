"""The whole Snakemake pipeline in a copy of the project: lab, papermill, analysis, LaTeX, HTML."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from helpers import ROOT_ONLY, copy_project, leftovers
from perflab import store
from perflab.hosts import lab as lab_mod
from perflab.report import leftovers as leftovers_in_paper

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def test_notebook_templates_are_stripped_and_parametrized():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert nb.metadata["kernelspec"]["name"] == "perflab", path
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.outputs and c.execution_count is None for c in code), f"{path} has outputs"
        assert "parameters" in code[0].metadata.get("tags", []), f"{path}: first code cell must be tagged parameters"


@ROOT_ONLY
@pytest.mark.lab
@pytest.mark.slow
def test_pipeline_runs_end_to_end_and_a_second_run_does_nothing(tmp_path):
    copy_project(ROOT, tmp_path, studies=["iperf3-streams"])  # one study end to end; each study's own tests cover it
    campaign_file = tmp_path / "studies/iperf3-streams/campaigns/iperf3-streams.yaml"
    campaign = yaml.safe_load(campaign_file.read_text())
    campaign.update(repetitions=3, warmups=1)
    campaign["benchmark"]["params"]["duration"] = 1
    campaign_file.write_text(yaml.safe_dump(campaign))
    name = f"p{os.getpid() % 100000}"
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    cmd = ["snakemake", "--cores", "1", "--config", f"inventory=lab:{name}", "demos=False"]
    try:
        first = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
        second = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    finally:
        lab_mod.down(name)
    assert leftovers(name) == []
    assert "[8/8]" in first.stdout + first.stderr, "no progress lines from the campaign"
    raw = tmp_path / "data/raw/iperf3-streams"
    assert "experiment.ipynb" in store.read_manifest(raw) and store.verify(raw) == []
    assert len(list((raw / "samples").iterdir())) == 8
    for out in ("paper/main.pdf", "reports/index.html", "reports/notebooks/iperf3-streams-throughput.ipynb",
                "data/processed/iperf3-streams.parquet", "paper/figures/iperf3-streams-throughput.png"):
        assert (tmp_path / out).stat().st_size > 0, out
    assert (tmp_path / "paper/main.pdf").read_bytes()[:5] == b"%PDF-"
    log = (tmp_path / "paper/main.log").read_text(errors="replace")
    assert "No value for" not in log, "the paper uses a value the pipeline did not produce"
    assert leftovers_in_paper.check(tmp_path / "paper/main.pdf") == [], "template text reached the built thesis"
    assert not list((tmp_path / "data/processed").glob("iperf3-streams.csv")), "Parquet is the shipped format"
    assert not [p for p in (tmp_path / "reports").rglob("*.csv") if "processed" in p.parts
                and not p.name.endswith(".quarantine.csv")], "no CSV mirror in the site"
    assert re.search(r"^site: [\d,.]+ MB in [\d,]+ files, [\d.]+ x the raw data",
                     (tmp_path / "logs/report.log").read_text(), re.M)
    moved = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "reports", moved)
    check = subprocess.run(["sha256sum", "-c", "--quiet", "MANIFEST.sha256"], capture_output=True, text=True,
                           cwd=moved / "files/data/raw/iperf3-streams")
    assert check.returncode == 0, check.stdout + check.stderr
    assert second.returncode == 0 and "Nothing to be done" in second.stdout + second.stderr
