"""Every file kind carries the same version key, ``format``, and every reader checks it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import copy_project
from perflab import cli, inventory, labspec, study
from perflab.formats import records
from perflab.hosts.lab import state as lab_state

ROOT = Path(__file__).resolve().parents[1]
LAB = "lab: x\nlinks: {lan: }\nhosts:\n  h1: {links: [lan]}\n"
INVENTORY = "hosts:\n  h1: {address: 198.18.0.11}\n"


@pytest.mark.parametrize("head, problem", [
    ("", ":1: format: missing; lab files start with `format: 1`"),
    ("format: 2\n", ":1: format: lab format 2; this perflab reads format 1: write `format: 1`"),
    ("format: '1'\n", ":1: format: lab format '1'; this perflab reads format 1"),
])
def test_a_lab_file_without_a_known_format_is_one_line(tmp_path, head, problem):
    path = tmp_path / "lab.yaml"
    path.write_text(head + LAB)
    with pytest.raises(labspec.LabFileError) as err:
        labspec.load(path)
    assert err.value.problems == [f"{path}{problem}" + err.value.problems[0].partition(problem)[2]]
    assert labspec.load(tmp_path / "ok.yaml", text="format: 1\n" + LAB).name == "x"


@pytest.mark.parametrize("head, problem", [
    ("", ":1: format: missing; inventory files start with `format: 1`"),
    ("format: 7\n", ":1: format: inventory format 7; this perflab reads format 1"),
])
def test_an_inventory_without_a_known_format_is_one_line(tmp_path, head, problem):
    path = tmp_path / "inventory.yaml"
    path.write_text(head + INVENTORY)
    with pytest.raises(inventory.InventoryError) as err:
        inventory.load(path)
    assert str(err.value).startswith(f"{path}{problem}") and "\n" not in str(err.value)
    path.write_text("format: 1\n" + INVENTORY)
    assert inventory.load(path)["h1"].address == "198.18.0.11"


def test_the_inventory_a_lab_writes_carries_its_format(tmp_path):
    inventory.dump({"h1": inventory.HostEntry("h1", "198.18.0.11")}, tmp_path / "inv.yaml")
    assert (tmp_path / "inv.yaml").read_text().startswith("format: 1\n")
    assert list(inventory.load(tmp_path / "inv.yaml")) == ["h1"]


def test_a_study_declaration_with_an_unknown_format_names_the_file(tmp_path, capsys):
    copy_project(ROOT, tmp_path, studies=["iperf3-streams"])
    path = tmp_path / "studies" / "iperf3-streams" / "study.yaml"
    text = path.read_text()
    assert "\nformat: 1\n" in text
    path.write_text(text.replace("\nformat: 1\n", "\nformat: 9\n"))
    with pytest.raises(study.StudyError, match=r"^studies/iperf3-streams/study.yaml:\d+: format: study format 9; this perflab reads format 1"):
        study.load(path.parent, tmp_path)
    path.write_text(text.replace("\nformat: 1\n", "\n"))
    with pytest.raises(study.StudyError, match=r"^studies/iperf3-streams/study.yaml:1: format: missing"):
        study.load(path.parent, tmp_path)


def test_a_record_of_an_unknown_format_names_the_file(tmp_path):
    record = json.loads(records.CampaignRecord("c", "d", {}, "c.yaml", "x", "3", [], {}).to_json())
    (tmp_path / "campaign.json").write_text(json.dumps({**record, "format": 99}))
    with pytest.raises(records.RecordError, match=r"campaign.json: campaign record of format 99"):
        records.read_campaign(tmp_path / "campaign.json")


def test_a_lab_state_file_carries_format_and_one_written_as_version_is_still_read(tmp_path, monkeypatch):
    monkeypatch.setattr(lab_state.model, "STATE_ROOT", tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "state.json").write_text(json.dumps({"version": 2, "name": "a"}))
    assert lab_state.read_state("a")["name"] == "a"
    (tmp_path / "a" / "state.json").write_text(json.dumps({"format": 3, "name": "a"}))
    with pytest.raises(lab_state.LabError, match="state format 3, this one reads 2"):
        lab_state.read_state("a")


def test_the_cli_reports_a_lab_file_format_in_one_line(tmp_path, capsys):
    path = tmp_path / "lab.yaml"
    path.write_text(LAB)
    assert cli.main(["lab", "up", "--file", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"perflab lab: error: {path}:1: format: missing; lab files start with `format: 1` (the version "
                   "of their format); add that line"]
