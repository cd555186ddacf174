"""Studies are declared once (studies/<id>/study.yaml) and everything else discovers them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import copy_project
from perflab import study

ROOT = Path(__file__).resolve().parents[1]
STUDIES = study.discover(ROOT)
#: Files that list shared things; a study id never appears in them.
SHARED = ["Snakefile", "config/config.yaml", "config/schema.yaml", "paper/main.tex", "Makefile",
          *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "rules").glob("*.smk")),
          *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "lib/perflab/schemas").glob("*.json"))]


def test_every_study_folder_is_declared_and_loads():
    folders = sorted(p.name for p in (ROOT / "studies").iterdir() if p.is_dir())
    assert sorted(s.id for s in STUDIES) == folders
    for s in STUDIES:
        assert s.chapter and (ROOT / s.chapter).is_file(), s.id
        for f in s.published:
            assert (ROOT / f).is_file(), f
        for a in s.analyses:
            assert (ROOT / a.notebook).is_file() and "notebook" in a.outputs, a.name


def test_no_shared_listing_names_a_study():
    ids = [s.id for s in STUDIES] + [c.id for s in STUDIES for c in s.campaigns]
    for name in SHARED:
        text = (ROOT / name).read_text()
        found = [i for i in ids if i in text]
        assert not found, f"{name} names {found}: studies are discovered from studies/*/study.yaml"


def test_seed_sources_are_relative_to_the_project_root():
    for s in STUDIES:
        if s.source:
            assert s.source.startswith("../shared/seeds/"), s.source
            if (ROOT.parent / "shared").is_dir():
                assert (ROOT / s.source).is_file(), s.source


def test_paper_index_lists_every_chapter_in_order_with_the_appendix_last():
    index = study.paper_index(STUDIES)
    chapters = [line for line in index["studies-chapters.tex"].splitlines() if line.startswith("\\")]
    assert chapters[-2:] == ["\\appendix", "\\input{../studies/tools/chapter.tex}"]
    assert chapters.index("\\input{../studies/iperf3-streams/chapter.tex}") < chapters.index("\\appendix")
    macros = index["studies-macros.tex"]
    assert "\\input{macros/iperf3-streams-plan.tex}" in macros
    assert "\\input{macros/003-openstack-opennebula-recheck.tex}" in macros
    assert "tools" not in "".join(study.paper_index(study.discover(ROOT, demos=False)).values())


def _declare(root: Path, sid: str, body: str) -> Path:
    folder = root / "studies" / sid
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "study.yaml").write_text(body)
    return folder


def _project(tmp_path: Path) -> Path:
    """A minimal project: the notebook templates and one copy of a real study."""
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    shutil.copytree(ROOT / "studies/iperf3-streams", tmp_path / "studies/iperf3-streams")
    return tmp_path


def test_errors_name_the_file_line_and_field(tmp_path):
    root = _project(tmp_path)
    _declare(root, "zz-bad", "format: 1\nstudy: zz-other\ntitle: t\nchapter: nosuch.tex\n"
             "analyses:\n  - notebook: compare-levels\n    campaign: nosuch\n")
    with pytest.raises(study.StudyError) as err:
        study.load("studies/zz-bad", root)
    text = str(err.value)
    assert "studies/zz-bad/study.yaml:2: study: 'zz-other' differs from the folder name 'zz-bad'" in text
    assert "studies/zz-bad/study.yaml:4: chapter: studies/zz-bad/nosuch.tex does not exist" in text
    assert "studies/zz-bad/study.yaml:7: analyses.0.campaign: 'nosuch' is not a campaign of this study" in text
    _declare(root, "zz-bad", "format: 1\nstudy: zz-bad\ntitle: t\nchapters: x.tex\n")
    with pytest.raises(study.StudyError, match=r"study.yaml:4: chapters: unknown field; did you mean 'chapter'\?"):
        study.load("studies/zz-bad", root)


def test_a_campaign_declared_by_two_studies_is_refused(tmp_path):
    root = _project(tmp_path)
    copy = root / "studies/zz-copy"
    shutil.copytree(root / "studies/iperf3-streams", copy)
    text = (copy / "study.yaml").read_text().replace("study: iperf3-streams", "study: zz-copy")
    (copy / "study.yaml").write_text(text.split("analyses:")[0])
    with pytest.raises(study.StudyError, match="campaign 'iperf3-streams' is already declared by "
                                               "studies/iperf3-streams/study.yaml"):
        study.discover(root)


def test_a_planned_campaign_with_its_monitors_off_is_refused_when_the_study_loads(tmp_path):
    root = _project(tmp_path)
    folder = root / "studies/iperf3-streams"
    camp = next(folder.glob("campaigns/*.yaml"))
    camp.write_text(camp.read_text() + "monitors: false\n")
    assert study.load("studies/iperf3-streams", root), "a campaign measured before the rule keeps its declaration"
    decl = folder / "study.yaml"
    decl.write_text(decl.read_text().replace(f"  - file: campaigns/{camp.name}\n",
                                             f"  - file: campaigns/{camp.name}\n    planned: true\n"))
    with pytest.raises(study.StudyError, match=rf"study.yaml:\d+: campaigns.0.file: .*{camp.name}: monitors: false"):
        study.load("studies/iperf3-streams", root)


def test_a_verdicts_analysis_that_misses_a_questions_campaign_is_refused(tmp_path):
    root = _project(tmp_path)
    shutil.copytree(ROOT / "studies/001-unnoba-ceph", root / "studies/001-unnoba-ceph")
    shutil.copytree(ROOT / "data/raw/published", root / "data/raw/published")
    assert study.load("studies/001-unnoba-ceph", root)
    decl = root / "studies/001-unnoba-ceph/study.yaml"
    decl.write_text(decl.read_text().replace("unnoba-confirm-qd, unnoba-confirm-bs,", "unnoba-confirm-qd,"))
    with pytest.raises(study.StudyError, match=r"study.yaml:40: analyses.0.parameters.campaigns: the study's "
                                               r"questions ask about unnoba-confirm-bs, which this verdicts"):
        study.load("studies/001-unnoba-ceph", root)


SIXTH = """\
format: 1
study: 999-sixth
title: A sixth study
order: 60
chapter: chapter.tex
campaigns:
  - file: campaigns/sixth-ping.yaml
  - {file: campaigns/sixth-later.yaml, planned: true}
analyses:
  - notebook: compare-levels
    campaign: sixth-ping
    parameters: {metric: rtt_avg, factor: size, factor_label: Payload, quantity: RTT, scale: 1.0e-6, unit: us}
  - notebook: compare-levels
    campaign: sixth-later
    parameters: {metric: rtt_avg, factor: size, factor_label: Payload, quantity: RTT, scale: 1.0e-6, unit: us}
"""
SIXTH_CAMPAIGN = """\
campaign: sixth-ping
benchmark: {tool: ping, params: {count: 3, interval: 0.2}}
hosts: {client: h1, server: h2}
factors: {size: [56, 1400]}
repetitions: 2
warmups: 0
seed: 6
"""


def test_a_sixth_study_is_one_new_folder_and_the_pipeline_finds_it(tmp_path):
    copy_project(ROOT, tmp_path)
    folder = _declare(tmp_path, "999-sixth", SIXTH)
    (folder / "campaigns").mkdir()
    (folder / "campaigns/sixth-ping.yaml").write_text(SIXTH_CAMPAIGN)
    (folder / "campaigns/sixth-later.yaml").write_text(SIXTH_CAMPAIGN.replace("sixth-ping", "sixth-later"))
    (folder / "chapter.tex").write_text("\\chapter{Sixth}\n\\plv{sixth-ping/plan/repetitions} repetitions.\n")
    found = {s.id: s for s in study.discover(tmp_path)}
    assert found["999-sixth"].analyses[0].outputs["macros"] == "paper/macros/sixth-ping-rtt-avg.tex"
    later = next(c for c in found["999-sixth"].campaigns if c.id == "sixth-later")
    assert later.planned and later.pending(tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    dry = subprocess.run(["snakemake", "-n", "--cores", "1", "--config", "demos=False"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr[-2000:]
    for job in ("analysis_sixth_ping_rtt_avg", "experiment", "plan_macros"):
        assert job in dry.stdout, job
    assert "data/raw/sixth-ping/experiment.ipynb" in dry.stdout
    assert "tool-iperf2" not in dry.stdout, "demos=False must leave the demo study out"
    # a planned campaign without data is neither measured nor waited for, until it is named
    assert "data/raw/sixth-later/" not in dry.stdout and "sixth_later" not in dry.stdout
    named = subprocess.run(["snakemake", "-n", "--cores", "1", "data/raw/sixth-later/experiment.ipynb"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=120)
    assert named.returncode == 0 and "data/raw/sixth-later/experiment.ipynb" in named.stdout, named.stderr[-2000:]


def test_an_analysis_reads_every_campaign_its_parameters_name():
    verdicts = next(a for s in STUDIES for a in s.analyses if a.name == "002-pfsense-neighbour-verdicts")
    assert set(verdicts.reads) == {"pfsense-confirm-64", "pfsense-confirm-512-1518", "pfsense-confirm-8192",
                                   "pfsense-confirm-ping", "pfsense-latency-idle", "pfsense-latency-loaded",
                                   "pfsense-capacity-64"}  # named in a list of its parameters
    table2 = next(a for s in STUDIES for a in s.analyses if a.name == "003-openstack-opennebula-table2")
    assert table2.reads == ()  # the published table alone
    demo = next(a for s in STUDIES for a in s.analyses if a.name == "iperf3-streams-throughput")
    assert demo.reads == ("iperf3-streams",)


def test_every_campaign_declared_before_its_data_plans_within_75_minutes():
    """A planned campaign without data yet is measured alone for the record: `perflab plan` must estimate it
    within the 75 minutes a campaign is designed for (docs/campaigns.md)."""
    from perflab import campaign, runner

    pending = [c for s in STUDIES for c in s.campaigns if c.pending(ROOT)]
    for ref in pending:
        minutes = runner.plan(campaign.load(ROOT / ref.file))["estimated_seconds"] / 60
        assert minutes <= 75, (ref.id, round(minutes))


def test_a_verdicts_analysis_reads_what_exists_while_other_analyses_wait_for_a_planned_campaign():
    cedri = next(s for s in STUDIES if s.id == "000-cedri")
    by_name = {a.name: a for a in cedri.analyses}
    verdicts, grid = by_name["000-cedri-verdicts"], by_name["cedri-mtu-wire-throughput"]
    pending = {"cedri-mtu-wire", "cedri-zfs-confirm", "cedri-nfs-confirm", "cedri-nfs-mtu"}
    assert verdicts.reads == ("cedri-nat-confirm", "cedri-mtu-wire", "cedri-zfs-confirm", "cedri-nfs-confirm",
                              "cedri-nfs-mtu")
    assert verdicts.inputs(pending) == ("cedri-nat-confirm",) and verdicts.inputs(set()) == verdicts.reads
    assert grid.inputs(pending) is None and grid.inputs(set()) == ("cedri-mtu-wire",)
