"""Lab or real data, declared: study 001's grid analysis reads the lab campaign until data of its real-hosts
counterpart are committed, then reads those, with the same outputs, and the chapter's sentence says which.

The real-host-style data are made here by a rehearsal on a lab that plays the Ceph client (a host named
`client` whose two files stand in for the mapped RBD images), copied into a copy of the project."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT_ONLY, copy_project, leftovers
from perflab.report import datasource as report_datasource
from perflab import campaign as campaign_mod, inventory, labspec, rehearse, study
from perflab.hosts import lab as lab_mod

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
STUDY = "studies/001-unnoba-ceph"
REAL = "unnoba-rbd-fio-grid"


def test_the_study_reads_its_lab_campaign_while_no_real_hosts_data_are_committed():
    s = study.load(STUDY, ROOT)
    (source,) = s.sources
    assert (source.lab, source.real, source.used, source.kind) == ("unnoba-confirm-grid", REAL, "unnoba-confirm-grid",
                                                                    "lab stand-in")
    grid = next(a for a in s.analyses if a.name == "unnoba-confirm-grid-iops")
    assert grid.campaign == "unnoba-confirm-grid" and REAL not in [c.id for c in s.campaigns]
    said = report_datasource.sentence(ROOT, source)
    assert said.startswith("the lab stand-in (campaign unnoba-confirm-grid on labs/001-unnoba-ceph.yaml; h1: ")
    assert "has no committed data" in said
    assert r"\plv{001-unnoba-ceph/data/unnoba-confirm-grid}" in (ROOT / STUDY / "chapter.tex").read_text()


def test_a_counterpart_with_other_factors_is_refused(tmp_path):
    copy_project(ROOT, tmp_path, studies=[Path(STUDY).name])
    real = tmp_path / STUDY / "real-hosts" / f"{REAL}.yaml"
    real.write_text(real.read_text().replace("  numjobs: [1, 2, 4, 8, 16, 32]\n", ""))
    with pytest.raises(study.StudyError, match="has factors device, iodepth; its lab counterpart unnoba-confirm-grid "
                                               "has device, numjobs, iodepth"):
        study.load(STUDY, tmp_path)


def paper_text(project: Path, env: dict) -> str:
    """Build the paper of ``project`` (its studies index first); its text without spaces and hyphens (line breaks)."""
    for cmd in (["perflab", "studies", "index", "--paper-dir", "paper"],
                ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "-cd", "paper/main.tex"]):
        res = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    text = subprocess.run(["pdftotext", "paper/main.pdf", "-"], cwd=project, capture_output=True, text=True,
                          check=True).stdout
    return squeeze(text)


def squeeze(text: str) -> str:
    """``text`` without whitespace, hyphens and quotes, so a phrase matches however TeX broke its lines."""
    return "".join(ch for ch in text if not ch.isspace() and ch not in "-'\u2019")


@ROOT_ONLY
@pytest.mark.lab
def test_committed_real_hosts_data_switch_the_analysis_and_the_chapter_says_so(tmp_path):
    project = tmp_path / "p"
    copy_project(ROOT, project, studies=[Path(STUDY).name])  # the paper with study 001's chapter only
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "PYTHONPATH": str(project / "lib")}
    lab_text = paper_text(project, env)
    assert squeeze("its figure's data: the lab stand-in (campaign unnoba-confirm-grid on labs/001-unnoba-ceph.yaml; h1:") \
        in lab_text
    name = f"c{os.getpid() % 100000}"
    created = lab_mod.bring_up(labspec.load(f"{name}.yaml", text=f"format: 1\nlab: {name}\nlinks:\n  lan: {{mtu: 1500}}\n"
                                                                  "hosts:\n  client: {links: [lan]}\n"))
    try:
        entries = inventory.load(created.inventory_path)
        # The lab plays the cluster's client: two files stand in for the mapped images, a small grid.
        doc = campaign_mod.load(project / STUDY / "real-hosts" / f"{REAL}.yaml").doc
        doc = {**doc, "destructive": False, "devices": {}, "requires": [], "monitors": False,
               "scratch": [str(tmp_path)],
               "factors": {"device": [{"label": "hdd", "set": {"filename": str(tmp_path / "hdd.dat")}},
                                      {"label": "ssd", "set": {"filename": str(tmp_path / "ssd.dat")}}],
                           "numjobs": [1, 2], "iodepth": [1, 4]}}
        doc["benchmark"] = {**doc["benchmark"], "params": {**doc["benchmark"]["params"], "size": "8M"}}
        stand_in = campaign_mod.load(project / STUDY / "real-hosts" / f"{REAL}.yaml", text=json.dumps(doc))
        done = rehearse.rehearse(stand_in, entries, project / "scratch/rehearsal", stream=io.StringIO())
    finally:
        lab_mod.down(name)
    assert leftovers(name) == [] and done.complete and not done.skipped
    shutil.copytree(done.raw_dir, project / "data/raw" / REAL)

    s = study.load(STUDY, project)
    (source,) = s.sources
    assert (source.used, source.kind) == (REAL, "real hosts")
    grid = next(a for a in s.analyses if a.name == "unnoba-confirm-grid-iops")
    assert grid.campaign == REAL and grid.reads == (REAL,), "the analysis reads the real-hosts data"
    assert grid.outputs["macros"] == "paper/macros/unnoba-confirm-grid-iops.tex", "outputs keep their names"
    said = report_datasource.sentence(project, source)
    assert said.startswith(f"real hosts (campaign {REAL}; client: ") and said.endswith("a rehearsal, not evidence")

    targets = ["paper/macros/unnoba-confirm-grid-iops.tex", "paper/macros/studies-macros.tex"]
    res = subprocess.run(["snakemake", "--cores", "1", *targets], cwd=project, env=env, capture_output=True,
                         text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert (project / "data/processed" / f"{REAL}.parquet").is_file(), "the real-hosts data were tidied"
    lineage = json.loads((project / "paper/macros/unnoba-confirm-grid-iops.lineage.json").read_text())
    assert f"data/processed/{REAL}.parquet" in json.dumps(lineage), "the figure's values come from the real data"
    index = (project / "paper/macros/studies-macros.tex").read_text()
    line = next(x for x in index.splitlines() if x.startswith(r"\plset{001-unnoba-ceph/data/unnoba-confirm-grid}"))
    assert f"real hosts (campaign {REAL}; client: " in line and "a rehearsal, not evidence" in line
    text = paper_text(project, env)
    assert squeeze(f"its figure's data: real hosts (campaign {REAL}; client:") in text
    assert squeeze("a rehearsal, not evidence") in text
    assert (project / "paper/figures/unnoba-confirm-grid-iops.pdf").is_file(), "the figure the chapter shows"
