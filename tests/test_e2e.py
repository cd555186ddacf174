"""End to end on the real lab: a tiny campaign over SSH to raw files, tidy table, figure, table."""

import io
import json
import subprocess

import pytest

from helpers import ROOT_ONLY
from perflab import campaign as campaign_mod, runner, store, tidy
from perflab.report import levels

pytestmark = [ROOT_ONLY, pytest.mark.lab]

CAMPAIGN = """\
campaign: tiny
benchmark:
  tool: iperf3
  params: {duration: 1}
hosts: {client: h1, server: h2}
factors:
  parallel: [1, 2]
repetitions: 3
warmups: 1
seed: 11
"""


@pytest.fixture(scope="module")
def ran(lab_inventory, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("e2e")
    (tmp / "tiny.yaml").write_text(CAMPAIGN)
    campaign = campaign_mod.load(tmp / "tiny.yaml")
    out = io.StringIO()
    summary = runner.run(campaign, lab_inventory, tmp / "raw", stream=out)
    return tmp, campaign, summary, out.getvalue()


def test_every_planned_sample_is_stored_verbatim_with_its_metadata(ran, lab_inventory):
    tmp, campaign, summary, progress = ran
    assert summary.complete and summary.done == 8 and not summary.failed
    assert "[8/8]" in progress and "ETA" in progress and "throughput" in progress and "Gbit/s" in progress
    samples = sorted((tmp / "raw/tiny/samples").iterdir())
    assert len(samples) == 8
    for sdir in samples:
        meta = json.loads((sdir / "meta.json").read_text())
        cmd = meta["commands"][0]
        assert cmd["host"] == "h1" and cmd["address"] == lab_inventory["h1"].address
        assert cmd["exit_code"] == 0 and cmd["started"] < cmd["ended"]
        assert cmd["argv"][:3] == ["iperf3", "-c", lab_inventory["h2"].address]
        assert f"-P {meta['cell']['parallel']}" in cmd["command"]
        doc = json.loads((sdir / "stdout").read_text())
        assert doc["start"]["test_start"]["num_streams"] == meta["cell"]["parallel"]
    assert sum(json.loads((s / "meta.json").read_text())["warmup"] for s in samples) == 2


def test_manifest_checks_with_sha256sum_and_verify(ran):
    tmp = ran[0]
    assert store.verify(tmp / "raw/tiny") == []
    check = subprocess.run(["sha256sum", "-c", "--quiet", "MANIFEST.sha256"], cwd=tmp / "raw/tiny")
    assert check.returncode == 0


def test_a_second_run_does_nothing(ran, lab_inventory):
    tmp, campaign = ran[0], ran[1]
    before = (tmp / "raw/tiny/MANIFEST.sha256").read_text()
    again = runner.run(campaign, lab_inventory, tmp / "raw", stream=io.StringIO())
    assert (again.done, again.already_done) == (0, 8)
    assert (tmp / "raw/tiny/MANIFEST.sha256").read_text() == before


def test_tidy_table_figure_table_and_macros(ran):
    tmp = ran[0]
    paths = tidy.write(tmp / "raw/tiny", tmp / "processed")
    df = tidy.load(paths["parquet"])
    thr = df[(df.metric == "throughput") & df.summary]
    assert len(thr) == 8 and set(thr.unit) == {"bit/s"}
    for _, row in thr.iterrows():
        doc = json.loads((tmp / "raw" / row["source"]).read_text())
        assert row["value"] == pytest.approx(doc["end"]["sum_received"]["bits_per_second"])
    result = levels.analyse(df, metric="throughput", factor="parallel")
    assert list(result.summary["n"]) == [3, 3]
    out = levels.write(result, campaign="tiny", source=paths["parquet"], paper_dir=tmp / "paper",
                       factor_label="Parallel streams", quantity="Throughput", scale=1e9, unit="Gbit/s",
                       generator="tests/test_e2e.py", monitors=df)
    pdf, png = out["figures"]
    caption = out["sections"][0].read_text()
    monitored = {"cpu_usr", "load_1"} <= set(df.loc[df.tool == "sadf", "metric"])
    assert ("(d) the CPU time busy" in caption and "(e) the 1-minute load" in caption) == monitored
    assert pdf.read_bytes()[:5] == b"%PDF-" and png.read_bytes()[:4] == b"\x89PNG"
    sidecar = json.loads((pdf.parent / "tiny-throughput.lineage.json").read_text())
    assert sidecar["inputs"][0]["sha256"] == store.sha256_file(paths["parquet"])
    assert sidecar["inputs"][0]["lineage"]["inputs"]["manifest_sha256"] == store.sha256_file(
        tmp / "raw/tiny/MANIFEST.sha256")
    summary_tex, comparison_tex, checks_tex = (p.read_text() for p in out["tables"])
    assert "Ljung--Box" in checks_tex and len(result.checks) == 2
    assert "\\toprule" in summary_tex and "\\bottomrule" in summary_tex
    assert result.comparisons[0].test in comparison_tex
    assert "\\plset{tiny/throughput/parallel-2/mean}" in out["macros"][0].read_text()
