"""Every runnable tool's campaign runs on the lab and its analysis finds one value per sample."""

import dataclasses
import io
from pathlib import Path

import pytest
import yaml

from helpers import ROOT_ONLY
from perflab import runner, spec, store, tidy
from perflab.report import levels

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config/config.yaml").read_text())
DEMOS = sorted(name for name, conf in CONFIG["campaigns"].items() if conf.get("demo"))

pytestmark = [ROOT_ONLY, pytest.mark.lab]


def test_every_runnable_tool_has_a_demo_campaign():
    tools = {spec.load(ROOT / CONFIG["campaigns"][name]["file"]).tool for name in DEMOS}
    assert tools == {"iperf2", "fio", "hpcc", "sysbench", "stress-ng", "ping", "dd"}


@pytest.mark.parametrize("name", DEMOS)
def test_tool_campaign_runs_and_analyses(name, lab_inventory, tmp_path):
    conf = CONFIG["campaigns"][name]
    full = spec.load(ROOT / conf["file"])
    short = dataclasses.replace(full, repetitions=2, warmups=0, doc={**full.doc, "repetitions": 2, "warmups": 0})
    summary = runner.run(short, lab_inventory, tmp_path, stream=io.StringIO())
    assert summary.complete, summary.failed
    assert store.verify(tmp_path / name) == []
    df, quarantine = tidy.frame(tmp_path / name)
    assert quarantine.empty, quarantine.to_dict("records")
    params = conf["analysis"].get("parameters", {})
    result = levels.analyse(df, metric=conf["analysis"]["metric"], factor=params["factor"], select=params.get("select"))
    assert list(result.summary["n"]) == [2, 2]
    assert (result.data["value"] > 0).all()
    assert any((tmp_path / name / "samples").glob("*/monitors/*/sar.json")), "monitors stored no sysstat data"
