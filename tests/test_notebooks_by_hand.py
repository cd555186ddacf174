"""A notebook template opened by hand (its default parameters) never writes the pipeline's files."""

from __future__ import annotations

import ast
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from helpers import copy_project

from perflab import paths

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: The variables a template writes through, and which of them it must redirect by hand.
OUTPUT_VARS = {"paper_dir", "raw_root", "processed_dir"}


def _parameters(nb: nbformat.NotebookNode) -> dict:
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    return {n.targets[0].id: ast.literal_eval(n.value) for n in ast.parse(cell.source).body
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)}


def _redirections(nb: nbformat.NotebookNode) -> dict[str, str]:
    """Variable -> the expression it is assigned through ``paths.outputs`` in the template's code."""
    found = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    and ast.unparse(node.value.func) == "paths.outputs"):
                found[node.targets[0].id] = ast.unparse(node.value)
    return found


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.stem)
def test_every_template_writes_under_scratch_by_default(template, monkeypatch, caplog):
    nb = nbformat.read(template, as_version=4)
    params = _parameters(nb)
    assert params["pipeline"] is False
    redirected = _redirections(nb)
    written = {"paper_dir"} & params.keys() | ({"raw_root"} if template.stem == "experiment" else set())
    assert written <= redirected.keys(), f"{template.name}: {written - redirected.keys()} not redirected"
    monkeypatch.chdir(ROOT)
    for var, expr in redirected.items():
        value = eval(expr, {"paths": paths}, dict(params))  # noqa: S307 - the template's own expression
        assert var in OUTPUT_VARS and value.startswith(f"{paths.SCRATCH}/"), (var, value)
    assert "opened by hand" in caplog.text


def test_outputs_keeps_the_pipeline_paths_for_the_pipeline_and_other_directories_everywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert paths.outputs("paper", pipeline=True) == "paper"
    assert paths.outputs("data/processed", pipeline=False) == "scratch/data/processed"
    assert paths.outputs(str(ROOT / "paper" / "tables"), pipeline=False) == "scratch/paper/tables"
    assert paths.outputs("paper/../data/raw", pipeline=False) == "scratch/data/raw"
    assert paths.outputs(str(tmp_path), pipeline=False) == str(tmp_path)  # e.g. verify --rebuild's scratch
    assert paths.outputs("build/mine", pipeline=False) == "build/mine"


def _snapshot(root: Path) -> dict[str, str]:
    """SHA-256 of every file in the project copy except the scratch directory and Python caches."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*")
            if p.is_file() and not {paths.SCRATCH, "__pycache__", ".ipynb_checkpoints"} & set(p.relative_to(root).parts)}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the project with the tidy table compare-levels' defaults read, and a pipeline output in place."""
    root = tmp_path_factory.mktemp("project")
    copy_project(ROOT, root, studies=["002-pfsense-neighbour"])
    subprocess.run([sys.executable, "-m", "perflab.cli", "tidy", "data/raw/pfsense-confirm-64", "--out", "data/processed"],
                   cwd=root, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT / "lib")})
    (root / "paper/tables/pfsense-confirm-64-throughput-summary.tex").write_text("% the pipeline's table\n")
    return root


@pytest.mark.slow
@pytest.mark.parametrize("template", ["compare-levels", "recheck"])
def test_a_template_run_by_hand_leaves_every_pipeline_and_tracked_file_alone(project, template, tmp_path):
    import papermill

    before = _snapshot(project)
    executed = tmp_path / f"{template}.ipynb"
    # As JupyterLab runs it: from notebooks/, with the template's own parameters.
    papermill.execute_notebook(str(project / "notebooks" / f"{template}.ipynb"), str(executed), kernel_name="perflab",
                               cwd=str(project / "notebooks"), progress_bar=False)
    after = _snapshot(project)
    assert {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)} == set()
    scratch = [p for p in (project / paths.SCRATCH / "paper").rglob("*.tex")]
    assert scratch, "the by-hand run wrote nothing under scratch/"
    text = "".join(o.get("text", "") for c in nbformat.read(executed, as_version=4).cells for o in c.get("outputs", []))
    assert "opened by hand (pipeline = False): outputs for paper/ go to scratch/paper/" in text
