"""Campaign format: levels that set several parameters, excluded cells, services with a lifecycle."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT_ONLY, load_campaign
from perflab import campaign as campaign_mod, runner, store, tidy
from perflab.formats import records
from perflab.store import RawStore

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
programs: [cmd]
setup: [{on: client, run: "echo {x}"}]
"""


def test_labelled_levels_set_their_parameters_and_excluded_cells_are_left_out(probe):
    c = load_campaign(LEVELS)
    cells = c.cells()
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
    with pytest.raises(campaign_mod.SpecError) as err:
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
    assert len(metas) == 8 and {m["format"] for m in metas} == {records.SAMPLE_FORMAT}
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


PREFLIGHT = LEVELS + """\
requires:
  - {on: all, commands: [sh, no-such-program-xyz], free_mib: {/: 1.0e+12}}
  - {on: client, modules: [no_such_module_xyz], filesystems: [no_such_fs_xyz]}
"""


def test_preflight_names_every_missing_thing_and_nothing_runs(probe, tmp_path, capsys):
    from perflab import cli, inventory

    c = load_campaign(PREFLIGHT, tmp_path)
    with pytest.raises(runner.RunnerError) as err:
        runner.run(c, inventory.localhost(), tmp_path / "raw", stream=open(os.devnull, "w"))
    text = str(err.value)
    assert "nothing was run" in text
    assert "host h1: command no-such-program-xyz is missing" in text
    assert "host h1: module no_such_module_xyz is missing" in text
    assert "host h1: filesystem no_such_fs_xyz is missing" in text
    assert "host h1: / has " in text and "the campaign needs 1000000000000 MiB" in text
    assert "command sh" not in text
    assert not (tmp_path / "raw/levels/samples").exists()
    owner = RawStore(tmp_path / "raw", c.name).owner
    assert not [p for p in Path("/sys/fs/cgroup").rglob(f"perflab-{owner}")], "the process registry outlived the run"
    assert cli.main(["plan", str(tmp_path / "c.yaml"), "--check", "--inventory", "localhost"]) == 1
    assert "4 problem(s)" in capsys.readouterr().out


def test_an_rmit_campaign_without_a_seed_draws_one_stores_it_and_a_resume_reuses_it(probe, tmp_path):
    from perflab import inventory

    c = load_campaign(LEVELS.replace("seed: 3\n", ""), tmp_path)
    assert c.seed is None and runner.plan(c)["seed"] is None
    out = tmp_path / "out.txt"
    with open(out, "w") as fh:
        runner.run(c, inventory.localhost(), tmp_path / "raw", stream=fh, limit=2)
    drawn = json.loads((tmp_path / "raw/levels/campaign.json").read_text())["spec"]["seed"]
    assert f"drew the RMIT seed {drawn}" in out.read_text()
    with open(out, "w") as fh:
        summary = runner.run(c, inventory.localhost(), tmp_path / "raw", stream=fh)
    assert summary.complete and f"using the seed {drawn} drawn by its first run" in out.read_text()
    metas = [json.loads(p.read_text()) for p in (tmp_path / "raw/levels/samples").glob("*/meta.json")]
    assert {m["seed"] for m in metas} == {drawn} and len(metas) == 6


def test_a_parse_only_tool_is_refused_for_running():
    with pytest.raises(campaign_mod.SpecError, match=r"c.yaml:2: benchmark.tool: perflab only parses npb's output"):
        load_campaign(LEVELS.replace("tool: probe", "tool: npb"))


MONITORED = """\
campaign: monitored
benchmark: {tool: ping, params: {count: 8, interval: 0.3}}
hosts: {client: h1, server: h2}
factors: {size: [56, 64]}
repetitions: 2
warmups: 0
seed: 1
fingerprints: false
"""


@ROOT_ONLY
@pytest.mark.lab
def test_monitors_reach_the_tidy_table_per_host_and_never_as_summary_rows(lab_inventory, tmp_path):
    c = load_campaign(MONITORED, tmp_path)
    assert runner.run(c, lab_inventory, tmp_path / "raw", stream=open(os.devnull, "w")).complete
    archives = sorted((tmp_path / "raw/monitored/samples").glob("*/monitors/h1.tar.xz"))
    assert len(archives) == 4 and not list((tmp_path / "raw/monitored/samples").glob("*/monitors/h1/"))
    members = store.unpack_monitors(archives[0].read_bytes(), str(archives[0]))
    assert {"sar.json", "proc-before.txt", "proc-after.txt", "sadf-command.txt"} <= set(members)
    # one recording per host through the run's blocks (renewed only after runner.RENEW_SECONDS), cut per sample
    recording: dict[int, set[str]] = {}
    for archive in archives:
        block = records.read_sample(archive.parent.parent / "meta.json").block
        command = store.unpack_monitors(archive.read_bytes())["sadf-command.txt"].split()
        recording.setdefault(block, set()).add(command[command.index("-A") - 2])
    assert sorted(recording) == [0, 1] and len(set.union(*recording.values())) == 1
    df, quarantine = tidy.frame(tmp_path / "raw/monitored")
    assert quarantine.empty, list(quarantine["reason"])
    mon = df[df["tool"].isin(["sadf", "procstat"])]
    assert set(mon["host"]) == {"h1", "h2"} and not mon["summary"].any()
    cpu = mon[(mon["tool"] == "sadf") & (mon["metric"] == "cpu_usr") & (mon["cpu"] == "all")]
    assert len(cpu) == 8 and cpu["value"].between(0, 100).all()  # 4 samples x 2 hosts, a percentage
    elapsed = mon[(mon["tool"] == "procstat") & (mon["metric"] == "elapsed")]
    assert len(elapsed) == 8 and (elapsed["value"] > 0).all()
    ping = df[df["summary"]]
    assert set(ping["tool"]) == {"ping"} and set(ping["host"]) == {"h1"}


@ROOT_ONLY
@pytest.mark.lab
def test_the_services_example_runs_on_the_lab_and_records_its_flow(lab_inventory, tmp_path):
    import dataclasses

    full = campaign_mod.load(Path(__file__).resolve().parents[1] / "campaigns/examples/services-and-levels.yaml")
    short = dataclasses.replace(full, repetitions=1, warmups=0, doc={**full.doc, "repetitions": 1, "warmups": 0})
    assert runner.plan(short)["cells"] == 5
    assert runner.run(short, lab_inventory, tmp_path, stream=open(os.devnull, "w")).complete
    for p in (tmp_path / "services-and-levels/samples").glob("*/meta.json"):
        m = json.loads(p.read_text())
        names = [s["name"] for s in m["services"]]
        assert names == (["service-flow-server", "service-flow-client"] if m["cell"]["load"] == "flow" else [])
    assert count("iperf3 -s -p 5299") == 0 and count("-p 5299 -t 3600") == 0
    # per-host CPU: h3 sends the competing flow in the flow cells and runs only the monitor otherwise
    df, _ = tidy.frame(tmp_path / "services-and-levels")
    h3 = df[(df.tool == "cgroup") & (df.metric == "cpu_seconds") & (df.host == "h3")]
    assert len(h3) == 5
    assert h3[h3.load == "flow"].value.min() > h3[h3.load == "idle"].value.max(), h3[["load", "value"]]
