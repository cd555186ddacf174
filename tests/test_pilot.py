"""Pilot mode: a few repetitions, then the minimum detectable effect per cell."""

import io

import pandas as pd
import pytest

from helpers import ROOT_ONLY
from perflab import campaign as campaign_mod, pilot, stats

TEXT = """\
campaign: pil
benchmark: {tool: iperf3, params: {duration: 1}}
hosts: {client: h1, server: h2}
factors: {parallel: [1, 2]}
repetitions: 40
warmups: 0
seed: 3
"""


def test_pilot_campaign_is_renamed_and_cut():
    c = pilot.pilot_campaign(campaign_mod.load("c.yaml", text=TEXT), 4)
    assert (c.name, c.repetitions, c.doc["campaign"]) == ("pil-pilot", 4, "pil-pilot")
    with pytest.raises(ValueError, match="at least 2"):
        pilot.pilot_campaign(campaign_mod.load("c.yaml", text=TEXT), 1)


def test_summarize_uses_the_planned_n_and_statsmodels_power():
    rows = [{"metric": "t", "summary": True, "warmup": False, "parallel": p, "value": v}
            for p, vals in ((1, [10.0, 11.0, 9.0, 10.5]), (2, [20.0, 20.2, 19.8, 20.1])) for v in vals]
    table = pilot.summarize(pd.DataFrame(rows), ["parallel"], metric="t", n=40)
    cv1 = table.loc[table.parallel == 1, "cv"].iloc[0]
    assert table.loc[table.parallel == 1, "mde"].iloc[0] == pytest.approx(stats.min_detectable_effect(40, cv1))
    assert table["mde"].iloc[0] > table["mde"].iloc[1], "the noisier cell must have the larger MDE"
    assert "MDE" in pilot.format_table(table, ["parallel"])


@ROOT_ONLY
@pytest.mark.lab
def test_pilot_on_the_lab_prints_per_cell_plan(lab_inventory, tmp_path):
    c = campaign_mod.load("c.yaml", text=TEXT)
    table = pilot.run(c, lab_inventory, tmp_path, repetitions=3, stream=io.StringIO())
    assert list(table["n"]) == [3, 3] and table.attrs["metric"] == "throughput"
    assert (tmp_path / "pil-pilot" / "samples").is_dir() and not (tmp_path / "pil").exists()
    assert (table["mde"] > 0).all()
