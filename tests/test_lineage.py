"""Lineage: every generated file names notebook, parameters, inputs, campaign, hosts, commit and versions."""

import json
import subprocess

import pytest
from test_site import make_project

from perflab import cli, verify


@pytest.fixture
def project(tmp_path, monkeypatch):
    git = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "README").write_text("x\n")
    subprocess.run(git + ["add", "README"], cwd=tmp_path, check=True)
    subprocess.run(git + ["commit", "-qm", "init"], cwd=tmp_path, check=True)
    make_project(tmp_path, samples=4, notebook=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_figure_sidecar_names_everything_a_reviewer_needs(project):
    record = json.loads((project / "paper/figures/demo-throughput.lineage.json").read_text())
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True).stdout.strip()
    assert record["format"] == 2 and record["git"]["commit"] == head
    assert record["notebook"]["path"] == "notebooks/compare-levels.ipynb" and len(record["notebook"]["sha256"]) == 64
    assert record["parameters"] == {"campaign": "demo", "metric": "throughput", "factor": "parallel"}
    assert record["campaigns"][0]["raw_dir"] == "data/raw/demo"
    assert len(record["hosts"]) == 4 and all(k.startswith(("h1-", "h2-")) for k in record["hosts"])
    assert {"python", "perflab", "numpy", "pandas", "scipy", "matplotlib"} <= set(record["packages"])
    assert record["inputs"][0]["path"] == "data/processed/demo.parquet"


def test_perflab_lineage_prints_the_chain_down_to_raw_files_and_hosts(project, capsys):
    assert cli.main(["lineage", "paper/tables/demo-throughput-summary.tex"]) == 0
    out = capsys.readouterr().out
    assert "paper/tables/demo-throughput-summary.tex  sha256" in out and "(matches)" in out
    assert "made by notebooks/compare-levels.ipynb" in out and "parameters: campaign='demo'" in out
    assert "input data/processed/demo.parquet" in out
    assert "from raw campaign data/raw/demo: 8 samples, 0 quarantined" in out
    assert "raw files: 38 in the manifest; all match" in out  # with the directory's README.md
    assert out.count("host h1-") == 2 and out.count("host h2-") == 2


def test_a_changed_notebook_shows_in_lineage_and_fails_verify(project, capsys):
    (project / "notebooks/compare-levels.ipynb").write_text("{}")
    assert cli.main(["lineage", "paper/figures/demo-throughput.pdf"]) == 1
    assert "CHANGED since recorded" in capsys.readouterr().out
    report = verify.repository(project)
    assert any(f.path == "notebooks/compare-levels.ipynb" and "generating notebook changed" in f.problem
               for f in report.findings)


def test_lineage_of_a_file_without_sidecar_is_a_clear_error(project, capsys):
    assert cli.main(["lineage", "README"]) == 2
    assert "README: no lineage sidecar README.lineage.json" in capsys.readouterr().err


def test_parameters_papermill_injected_are_recorded_without_any_call(tmp_path, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    from perflab.report import lineage

    monkeypatch.chdir(tmp_path)
    (tmp_path / "out.tex").write_text("x\n")
    shell = InteractiveShell.instance()
    try:
        shell.user_ns["In"] = ["", 'campaign = "default"  # id\nlevel = 0.95\nselect = None\nx = f(1)\n',
                               '# Parameters\ncampaign = "iperf3-streams"\nscale = 1e9\n', "print(1)"]
        record = json.loads(lineage.write([tmp_path / "out.tex"], [], generator="g").read_text())
    finally:
        InteractiveShell.clear_instance()
    assert record["parameters"] == {"campaign": "iperf3-streams", "level": 0.95, "select": None, "scale": 1e9}


def test_lineage_names_paths_outside_the_project_and_never_opens_them(tmp_path, monkeypatch):
    """A sidecar whose input, its upstream sidecar and raw directory lie outside the project: named, not read."""
    from perflab.report import lineage

    root, outside = tmp_path / "project", tmp_path / "outside"
    (root / "paper/tables").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.csv").write_text("x\n")
    (outside / "secret.lineage.json").write_text(json.dumps({"format": 2, "outputs": [], "parameters": {"key": "CANARY"}}))
    (root / "paper/tables/t.tex").write_text("t\n")
    (root / "paper/tables/t.lineage.json").write_text(json.dumps({
        "format": 2, "outputs": [{"path": "paper/tables/t.tex", "sha256": "0" * 64}],
        "inputs": [{"path": "../outside/secret.csv", "sha256": "0" * 64}]}))
    (root / "data/processed").mkdir(parents=True)
    (root / "data/processed/d.lineage.json").write_text(json.dumps({
        "output": ["d.csv"], "inputs": {"raw_dir": str(outside), "manifest_sha256": "0" * 64}}))
    lines = "\n".join(lineage.chain("paper/tables/t.tex", root) + lineage.chain("data/processed/d.lineage.json", root))
    assert "input ../outside/secret.csv  sha256 000000000000 (OUTSIDE the project, not read)" in lines
    assert "raw directory OUTSIDE the project, not read" in lines and "CANARY" not in lines
