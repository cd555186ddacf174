"""Analysis templates declare their parameters; a study's misspelled or mistyped parameter is refused, naming it."""

from __future__ import annotations

import ast
import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from helpers import copy_project
from perflab import cli, study, templates, yamlfile

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
        assert templates.not_data(default) is None, f"{path.name}: {name}: the default is not plain data"


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
    assert err == [f"perflab studies: error: {EXPECTED}"], "the nearest name, not every name the template has"


def test_plan_refuses_a_campaign_whose_study_has_a_misspelled_analysis_parameter(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(_planted(tmp_path, *TYPO))
    campaign = "studies/iperf3-streams/campaigns/iperf3-streams.yaml"
    for argv in (["plan", campaign], ["plan", campaign, "--macros", "planned.tex"]):
        assert cli.main(argv) == 2
        assert capsys.readouterr().err.strip().splitlines() == [f"perflab plan: error: {EXPECTED}"]
    assert not (tmp_path / "planned.tex").exists()
    path = tmp_path / STUDY
    path.write_text(path.read_text().replace(*reversed(TYPO)))
    assert cli.main(["plan", campaign]) == 0, "the same campaign plans once its study is right"


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


# A notebook parameter is data, never code. Papermill writes each value into the notebook as Python source; a
# value YAML builds from a tag (bytes, a set, a date ...) takes its fallback path, and bytes whose text ends a
# string literal run as code in the analysis kernel.
PAYLOAD = b'x\\"]; __import__("os").system("touch CANARY"); _ = ["'
TAGGED = {
    "binary": (f"[Throughput, !!binary {base64.b64encode(PAYLOAD).decode()}]", "quantity.1",
               "a !!binary value (bytes) is not plain data"),
    "set": ("!!set {Throughput, Goodput}", "quantity", "a !!set is not plain data"),
    "date": ("2026-11-29", "quantity", "a date or timestamp (2026-11-29) is not plain data"),
    "timestamp": ("2026-11-29 01:30:00", "quantity", "a date or timestamp (2026-11-29T01:30:00) is not plain data"),
    "omap": ("[!!omap [{a: 1}]]", "quantity.0.0", "an !!omap or !!pairs entry is not plain data"),
    "pairs": ("{labels: !!pairs [{a: 1}]}", "quantity.labels.0", "an !!omap or !!pairs entry is not plain data"),
    "nan": ("[.nan]", "quantity.0", "nan is not plain data"),
    "binary key": ("{!!binary eA==: Throughput}", "quantity.b'x'", "the key b'x' is not text; quote it"),
}
#: Plain values whose text papermill must keep inside its literals.
HOSTILE = ['a"b', "a'b", 'a\\', '\\"; import os #', '"""', "'''", "line\nbreak", "\u2028", "{x}", "$(touch CANARY)"]


def _injected(values):
    """The cell papermill injects for ``values`` passed as the pipeline passes them: a one-line YAML for papermill's
    ``-y``, read by papermill's command line, written into the notebook by papermill's Python translator."""
    from papermill.iorw import NoDatesSafeLoader
    from papermill.parameterize import parameterize_notebook

    text = yaml.safe_dump(values, default_flow_style=True, width=1 << 20)  # what the pipeline passed before the check
    read = yaml.load(text, Loader=NoDatesSafeLoader)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("quantity = ''", metadata={"tags": ["parameters"]})])
    nb.metadata.update(kernelspec={"name": "python3", "language": "python", "display_name": "Python 3"}, papermill={})
    out = parameterize_notebook(nb, read)
    return next(c.source for c in out.cells if "injected-parameters" in c.metadata.get("tags", []))


def _literals_only(source: str) -> dict:
    """The names and values of a cell that assigns literals and does nothing else (AssertionError otherwise)."""
    out = {}
    for node in ast.parse(source).body:
        assert isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name), ast.dump(node)
        out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def test_before_the_check_a_binary_parameter_ran_code_in_the_notebook(tmp_path, monkeypatch):
    root = _planted(tmp_path, "quantity: Throughput", f"quantity: {TAGGED['binary'][0]}")
    doc, _ = yamlfile.load(root / STUDY, "study")
    source = _injected(doc["analyses"][0]["parameters"])
    with pytest.raises((AssertionError, ValueError)):
        _literals_only(source)
    monkeypatch.chdir(tmp_path)
    exec(compile(source, "injected", "exec"), {})  # what the kernel ran
    assert (tmp_path / "CANARY").exists()


@pytest.mark.parametrize("form", TAGGED, ids=str)
def test_a_tagged_yaml_parameter_is_refused_at_study_load_in_one_line(tmp_path, form):
    value, where, what = TAGGED[form]
    root = _planted(tmp_path, "quantity: Throughput", f"quantity: {value}")
    with pytest.raises(study.StudyError) as err:
        study.load(root / "studies" / "iperf3-streams", root)
    assert len(err.value.problems) == 1, err.value.problems
    assert err.value.problems[0].startswith(
        f"studies/iperf3-streams/study.yaml:12: analyses.0.parameters.{where}: {what}"), err.value.problems
    doc, _ = yamlfile.load(root / STUDY, "study")
    with pytest.raises(ValueError, match="not plain data|not text"):
        templates.papermill_yaml(doc["analyses"][0]["parameters"])


def test_plain_parameters_reach_the_notebook_as_literals_of_the_same_values():
    values = {"study": "s", "quantity": HOSTILE, "labels": {text: text for text in HOSTILE}, "scale": 1e9,
              "n": 40, "flag": True, "none": None, "nested": [[{"a": ["b", 1.5, False]}]], "pipeline": True}
    assert _literals_only(_injected(values)) == values
    assert yaml.load(templates.papermill_yaml(values), Loader=yaml.SafeLoader) == values
