"""The paper's frame: a bibliography of every seed study, build metadata, no Type 3 fonts."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from perflab.report import macros

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ("seed000", "seed001", "seed002", "seed003", "seed004")


def test_every_seed_study_has_an_entry_and_is_cited():
    bib = (ROOT / "paper/references.bib").read_text()
    ids = re.findall(r"ids\s*=\s*\{(seed\d{3})\}", bib)
    assert sorted(ids) == list(SEEDS)
    cited = set(re.findall(r"\\cite\{(seed\d{3})\}", (ROOT / "paper/main.tex").read_text()))
    assert cited == set(SEEDS)


def test_build_macros_name_version_commit_and_date(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    path = macros.write_build(tmp_path / "build.tex", root=ROOT)
    text = path.read_text()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert f"\\plset{{build/commit}}{{{head[:12]}}}" in text
    assert "\\plset{build/date}{2023-11-14}" in text and "\\plset{build/version}{0.1.0}" in text
    assert (tmp_path / "build.lineage.json").exists()


@pytest.mark.slow
@pytest.mark.skipif(not all(shutil.which(t) for t in ("latexmk", "biber", "pdffonts", "pdfinfo")),
                    reason="needs latexmk, biber and poppler-utils")
def test_the_paper_builds_with_metadata_bibliography_and_no_type3_font(tmp_path):
    paper = tmp_path / "paper"
    shutil.copytree(ROOT / "paper", paper, ignore=shutil.ignore_patterns("*.aux", "*.pdf", "*.log", "*.bbl"))
    macros.write_build(paper / "macros/build.tex", root=ROOT)
    run = subprocess.run(["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "main.tex"], cwd=paper,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    fonts = subprocess.run(["pdffonts", "main.pdf"], cwd=paper, capture_output=True, text=True).stdout
    assert "Type 3" not in fonts and "Type 1" in fonts
    info = subprocess.run(["pdfinfo", "main.pdf"], cwd=paper, capture_output=True, text=True).stdout
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert f"git commit {head}" in info and "perflab 0.1.0" in info
    log = (paper / "main.log").read_text(errors="replace")
    assert not re.search(r"Citation .* undefined|could not be found", log)
    assert "Rocha" in (paper / "main.bbl").read_text()
