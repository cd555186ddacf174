"""Analysis templates declare their parameters; a study's misspelled or mistyped parameter is refused, naming it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import copy_project
from perflab import cli, study, templates

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
STUDY = "studies/iperf3-streams/study.yaml"
TYPO = ("scale: 1.0e+9, unit: Gbit/s}", "scale: 1.0e+9, unti: Gbit/s}")
EXPECTED = ("studies/iperf3-streams/study.yaml:13: analyses.0.parameters.unti: template compare-levels has no "
            "parameter 'unti'; did you mean 'unit'?")


def test_the_notebooks_are_found():
    assert len(NOTEBOOKS) >= 9, NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_template_declares_exactly_the_parameters_of_its_parameters_cell(path):
    nb = json.loads(path.read_text())
    declared = templates.declared(nb["metadata"].get("perflab", {}))
    assert declared is not None, f"{path.name}: no metadata perflab.parameters"
    cell = templates.from_cell(templates.parameters_cell(nb))
    assert cell and list(declared) == list(cell), f"{path.name}: declaration and parameters cell differ"
    for name, (default, _) in cell.items():
        spec = declared[name]
        assert set(spec) == {"type", "default", "required", "doc"} and spec["doc"], (path.name, name, spec)
        assert spec["default"] == default, f"{path.name}: {name}: declared default differs from the cell's"
        types = [spec["type"]] if isinstance(spec["type"], str) else spec["type"]
        assert set(types) <= set(templates.TYPES), (path.name, name, types)
        assert templates._fits(default, spec["type"]), f"{path.name}: {name}: the default is not of its type"


def _planted(tmp_path: Path, old: str, new: str) -> Path:
    copy_project(ROOT, tmp_path, studies=[Path(STUDY).parent.name])
    path = tmp_path / STUDY
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    return tmp_path


def test_studies_list_refuses_a_misspelled_parameter_naming_file_analysis_and_nearest_name(tmp_path, capsys,
                                                                                         monkeypatch):
    monkeypatch.chdir(_planted(tmp_path, *TYPO))
    assert cli.main(["studies", "list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"perflab studies: error: {EXPECTED}"), err


def test_a_mistyped_parameter_value_is_refused_with_the_declared_type(tmp_path):
    root = _planted(tmp_path, "scale: 1.0e+9", "scale: lots")
    with pytest.raises(study.StudyError) as err:
        study.load(root / "studies" / "iperf3-streams", root)
    assert err.value.problems == [
        "studies/iperf3-streams/study.yaml:13: analyses.0.parameters.scale: template compare-levels expects number "
        "(divide values by this for display); found 'lots'"]


def test_snakemake_dry_run_refuses_a_misspelled_parameter_in_one_line(tmp_path):
    snakemake = shutil.which("snakemake") or str(Path(sys.executable).with_name("snakemake"))
    root = _planted(tmp_path, *TYPO)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'lib'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([snakemake, "-n"], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "Traceback" not in done.stderr + done.stdout, done.stderr[-3000:]
    assert f"perflab pipeline: error: {EXPECTED}" in done.stderr, done.stderr[-3000:]
