"""A misspelled key of every YAML kind is reported at its own line with the nearest valid name (one cause, in
``yamlfile.schema_problems``): campaigns, lab files, inventories, study declarations, the pipeline's config and
a template's parameters in a study's analysis."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from perflab import cli, inventory, labspec, study, yamlfile

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "studies/iperf3-streams/campaigns/iperf3-streams.yaml"


def _typo(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


def test_plan_names_the_line_of_a_misspelled_top_level_key_and_the_nearest_name(tmp_path, capsys):
    text = CAMPAIGN.read_text()
    assert text.splitlines()[18] == "repetitions: 40", "line 19 of the shipped campaign"
    path = tmp_path / "c.yaml"
    path.write_text(_typo(text, "repetitions: 40", "repetitons: 40"))
    assert cli.main(["plan", str(path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"perflab plan: error: {path}:19: repetitons: unknown field; did you mean 'repetitions'?"]


def test_a_misspelled_nested_campaign_key_is_reported_at_its_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(_typo(CAMPAIGN.read_text(), "  params:\n", "  parms:\n"))
    from perflab import campaign
    with pytest.raises(yamlfile.SpecError) as err:
        campaign.load(path)
    assert err.value.problems == [f"{path}:11: benchmark.parms: unknown field; did you mean 'params'?"]


def test_with_no_close_name_the_allowed_names_are_listed_briefly(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN.read_text() + "colour: red\n")
    from perflab import campaign
    with pytest.raises(yamlfile.SpecError) as err:
        campaign.load(path)
    [problem] = err.value.problems
    assert problem.startswith(f"{path}:28: colour: unknown field; remove it or use one of format, scratch, ")
    assert problem.endswith(", ... (36 in all)") and problem.count(",") == yamlfile.LISTED, problem


def test_a_lab_file(tmp_path):
    text = "format: 1\nlab: demo\nlinks:\n  lan1: {mtu: 1500}\nhosts:\n  h1:\n    links: [lan1]\n    memmory: 512M\n"
    with pytest.raises(labspec.LabFileError) as err:
        labspec.load("lab.yaml", text=text)
    assert err.value.problems == ["lab.yaml:8: hosts.h1.memmory: unknown field; did you mean 'memory'?"]


def test_an_inventory(tmp_path):
    path = tmp_path / "inventory.yaml"
    path.write_text("# hosts of the lab\nformat: 1\nhosts:\n  h1:\n    address: 198.18.0.11\n    user: root\n"
                    "    known_host: lab/known_hosts\n")
    with pytest.raises(inventory.InventoryError) as err:
        inventory.load(path)
    assert str(err.value) == f"{path}:7: hosts.h1.known_host: unknown field; did you mean 'known_hosts'?"
    path.write_text("format: 1\nhosts:\n  h1: {address: 198.18.0.11}\nhostz: {}\n")
    with pytest.raises(inventory.InventoryError) as err:
        inventory.load(path)
    assert str(err.value) == f"{path}:4: hostz: unknown field; did you mean 'hosts'?"


def _study(tmp_path: Path, old: str, new: str) -> Path:
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    shutil.copytree(ROOT / "studies/iperf3-streams", tmp_path / "studies/iperf3-streams")
    decl = tmp_path / "studies/iperf3-streams/study.yaml"
    decl.write_text(_typo(decl.read_text(), old, new))
    return tmp_path


def test_a_study_declaration(tmp_path):
    root = _study(tmp_path, "order: 10", "ordre: 10")
    with pytest.raises(study.StudyError) as err:
        study.load("studies/iperf3-streams", root)
    assert err.value.problems == ["studies/iperf3-streams/study.yaml:5: ordre: unknown field; did you mean 'order'?"]


def test_plan_reports_a_misspelled_key_of_the_study_declaring_its_campaign(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(_study(tmp_path, "order: 10", "ordre: 10"))
    assert cli.main(["plan", "studies/iperf3-streams/campaigns/iperf3-streams.yaml"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "perflab plan: error: studies/iperf3-streams/study.yaml:5: ordre: unknown field; did you mean 'order'?"]


def test_a_template_parameter_in_a_study_analysis(tmp_path):
    root = _study(tmp_path, "factor_label: Parallel streams", "factor_labl: Parallel streams")
    with pytest.raises(study.StudyError) as err:
        study.load("studies/iperf3-streams", root)
    assert err.value.problems == [
        "studies/iperf3-streams/study.yaml:12: analyses.0.parameters.factor_labl: template compare-levels has no "
        "parameter 'factor_labl'; did you mean 'factor_label'?"]


def test_the_pipeline_config(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(_typo((ROOT / "config/config.yaml").read_text(), "\ndemos:", "\ndemo:"))
    schema = yamlfile.load(ROOT / "config/schema.yaml", "schema")[0]
    with pytest.raises(yamlfile.SpecError) as err:
        yamlfile.read_yaml(path, schema, "config")
    assert err.value.problems == [f"{path}:5: demo: unknown field; did you mean 'demos'?"]
    assert "read_yaml(\"config/config.yaml\"" in (ROOT / "Snakefile").read_text(), "the pipeline reads it so"
