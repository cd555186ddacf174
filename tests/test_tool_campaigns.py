"""Every runnable tool's campaign runs on the lab and its analysis finds one value per sample."""

import dataclasses
import io
from pathlib import Path

import pytest

from helpers import ROOT_ONLY
from perflab import campaign as campaign_mod, runner, store, study, tidy
from perflab.report import levels

ROOT = Path(__file__).resolve().parents[1]
#: The demo studies' analyses, by campaign (discovered from studies/*/study.yaml).
DEMOS = {a.campaign: (c.file, a) for s in study.discover(ROOT) if s.demo for a in s.analyses
         for c in s.campaigns if c.id == a.campaign}

pytestmark = [ROOT_ONLY, pytest.mark.lab]


def test_every_runnable_tool_has_a_demo_campaign():
    tools = {campaign_mod.load(ROOT / file).tool for file, _ in DEMOS.values()}
    assert tools == {"iperf2", "fio", "hpcc", "sysbench", "stress-ng", "ping", "dd"}


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_tool_campaign_runs_and_analyses(name, lab_inventory, tmp_path):
    file, analysis = DEMOS[name]
    full = campaign_mod.load(ROOT / file)
    short = dataclasses.replace(full, repetitions=2, warmups=0, doc={**full.doc, "repetitions": 2, "warmups": 0})
    summary = runner.run(short, lab_inventory, tmp_path, stream=io.StringIO())
    assert summary.complete, summary.failed
    assert store.verify(tmp_path / name) == []
    df, quarantine = tidy.frame(tmp_path / name)
    assert quarantine.empty, quarantine.to_dict("records")
    params = analysis.parameters
    result = levels.analyse(df, metric=params["metric"], factor=params["factor"], select=params.get("select"))
    assert list(result.summary["n"]) == [2, 2]
    assert (result.data["value"] > 0).all()
    assert any((tmp_path / name / "samples").glob("*/monitors/*.tar.xz")), "monitors stored no sysstat data"
