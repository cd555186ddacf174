"""Campaign format: levels that set several parameters, excluded cells, services with a lifecycle."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT_ONLY, load_campaign
from perflab import design, runner, spec, tidy

LEVELS = """\
campaign: levels
benchmark: {tool: probe}
hosts: {client: h1}
factors:
  mode:
    - {label: one, set: {cmd: "echo 1"}}
    - {label: two, set: {cmd: "echo 2"}}
  x: [a, b]
exclude:
  - {mode: two, x: a}
repetitions: 2
warmups: 0
seed: 3
monitors: false
fingerprints: false
"""


def test_labelled_levels_set_their_parameters_and_excluded_cells_are_left_out(probe):
    c = load_campaign(LEVELS)
    cells = design.cells(c.factors, c.crossing, c.exclude)
    assert [dict(cell.levels) for cell in cells] == [{"mode": "one", "x": "a"}, {"mode": "one", "x": "b"},
                                                     {"mode": "two", "x": "b"}]
    assert c.cell_params({"mode": "two", "x": "b"}) == {"cmd": "echo 2", "x": "b"}
    assert runner.plan(c)["samples"] == 6


@pytest.mark.parametrize("edit, message", [
    (("{mode: two, x: a}", "{mode: three, x: a}"), "c.yaml:10: exclude.0.mode: 'three' is not a level of factor mode"),
    (("{mode: two, x: a}", "{colour: two}"), "c.yaml:10: exclude.0.colour: unknown factor 'colour'"),
    (("  - {mode: two, x: a}", "  - {x: a}\n  - {x: b}"), "c.yaml:9: exclude: leaves no cell to measure"),
    (("label: two,", "label: one,"), "c.yaml:5: factors.mode: level label 'one' is used twice"),
    (("set: {cmd: \"echo 2\"}", "sets: {cmd: 2}"), "c.yaml:7: factors.mode.1: "),
])
def test_format_errors_name_the_line_and_field(probe, edit, message):
    with pytest.raises(spec.SpecError) as err:
        load_campaign(LEVELS.replace(*edit))
    assert message in str(err.value)


SERVICES = LEVELS.replace("exclude:\n  - {mode: two, x: a}\n", "") + """\
services:
  - {name: whole, on: h1, start: "sleep 601", order: 1}
  - {name: percell, on: h2, start: "sleep 602", ready: "test -d /proc", stop: "true", scope: cell, order: 2}
  - {name: perblock, on: h1, start: "sleep 603", scope: block, cells: {x: [b]}}
"""


def count(pattern: str) -> int:
    return int(subprocess.run(["pgrep", "-fc", pattern], capture_output=True, text=True).stdout.strip() or 0)


@ROOT_ONLY
@pytest.mark.lab
def test_services_start_per_scope_are_recorded_and_none_is_left(probe, lab_inventory, tmp_path):
    c = load_campaign(SERVICES, tmp_path)
    summary = runner.run(c, lab_inventory, tmp_path / "raw", stream=open(os.devnull, "w"))
    assert summary.complete
    metas = [json.loads(p.read_text()) for p in sorted((tmp_path / "raw/levels/samples").glob("*/meta.json"))]
    assert len(metas) == 8 and {m["format"] for m in metas} == {2}
    for m in metas:
        running = {s["name"]: s for s in m["services"]}
        assert running["service-whole"]["scope"] == "campaign" and running["service-whole"]["host"] == "h1"
        assert running["service-percell"]["scope"] == f"cell {m['cell_index']}"
        assert ("service-perblock" in running) == (m["cell"]["x"] == "b")
        if m["cell"]["x"] == "b":
            assert running["service-perblock"]["scope"] == f"block {m['block']}"
    values = tidy.frame(tmp_path / "raw/levels")[0]
    assert set(zip(values["mode"], values["value"])) == {("one", 1.0), ("two", 2.0)}
    assert [count(f"sleep 60{k}") for k in (1, 2, 3)] == [0, 0, 0], "a service outlived the campaign"


@ROOT_ONLY
@pytest.mark.lab
def test_a_service_that_never_gets_ready_stops_the_campaign_with_its_output(probe, lab_inventory, tmp_path):
    c = load_campaign(SERVICES.replace('ready: "test -d /proc"', 'ready: "test -e /nonexistent"')
                      .replace("scope: cell, order: 2}", "scope: cell, order: 2, timeout: 1}"), tmp_path)
    with pytest.raises(runner.RunnerError, match=r"host h2: service-percell `sleep 602` did not become ready in 1 s"):
        runner.run(c, lab_inventory, tmp_path / "raw", stream=open(os.devnull, "w"))
    assert [count(f"sleep 60{k}") for k in (1, 2, 3)] == [0, 0, 0]
