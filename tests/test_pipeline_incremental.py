"""Incremental runs stay exact: a module of the package changed reruns the tables that read the code, and the
plan macros the pipeline writes for every campaign in one process are `perflab plan --macros`'s bytes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import copy_project, snakemake as _snakemake

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
STUDY = "004-aoe-iscsi"
CAMPAIGN = "004-confirm-mtu"


@pytest.mark.slow
def test_any_changed_module_reruns_the_tidy_table_and_an_unchanged_tree_reruns_nothing(tmp_path):
    copy_project(ROOT, tmp_path, studies=[STUDY])
    table = f"data/processed/{CAMPAIGN}.parquet"
    first = _snakemake(tmp_path, table)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    again = _snakemake(tmp_path, "-n", table)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stdout[-2000:]

    modules = sorted((tmp_path / "lib/perflab").rglob("*.py"), key=lambda p: (p.stat().st_mtime_ns, str(p)))
    for module in (modules[0], modules[len(modules) // 2]):  # the oldest module, then one in the middle
        later = (tmp_path / table).stat().st_mtime_ns + 1_000_000_000
        os.utime(module, ns=(later, later))
        planned = _snakemake(tmp_path, "-n", table)
        assert planned.returncode == 0, planned.stdout[-2000:] + planned.stderr[-2000:]
        assert "rule tidy:" in planned.stdout and "verify_raw" not in planned.stdout, planned.stdout[-2000:]


@pytest.mark.slow
def test_the_pipelines_plan_macros_are_the_bytes_of_perflab_plan_macros(tmp_path):
    copy_project(ROOT, tmp_path, studies=[STUDY])
    campaign = f"studies/{STUDY}/campaigns/{CAMPAIGN}.yaml"
    macros = f"paper/macros/{CAMPAIGN}-plan.tex"
    built = _snakemake(tmp_path, macros)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    cli = subprocess.run([str(BIN / "perflab"), "plan", "--macros", "scratch/plan.tex", campaign], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert (tmp_path / macros).read_bytes() == (tmp_path / "scratch/plan.tex").read_bytes()
    assert f"{CAMPAIGN}/plan/repetitions" in (tmp_path / macros).read_text()


@pytest.mark.slow
def test_a_touched_raw_file_reruns_only_its_own_campaigns_jobs(tmp_path):
    copy_project(ROOT, tmp_path, studies=[STUDY])
    other = "004-confirm-macro"
    tables = [f"data/processed/{c}.parquet" for c in (CAMPAIGN, other)]
    first = _snakemake(tmp_path, *tables)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]

    sample = sorted((tmp_path / f"data/raw/{CAMPAIGN}/samples").iterdir())[0] / "stdout"
    st = sample.stat()
    os.utime(sample, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))  # touched: same bytes, a new time
    planned = _snakemake(tmp_path, "-n", *tables)
    assert planned.returncode == 0, planned.stdout[-2000:] + planned.stderr[-2000:]
    assert f"campaign={CAMPAIGN}" in planned.stdout and f"campaign={other}" not in planned.stdout, planned.stdout
    assert "rule verify_raw:" in planned.stdout, planned.stdout[-2000:]


@pytest.mark.slow
def test_an_analysis_depends_on_its_studys_declaration(tmp_path):
    """The questions and the analyses' parameters are in study.yaml: editing it reruns the verdict table."""
    copy_project(ROOT, tmp_path, studies=[STUDY])
    planned = _snakemake(tmp_path, "-n", f"paper/macros/{STUDY}-verdicts.tex")
    assert planned.returncode == 0, planned.stdout[-2000:] + planned.stderr[-2000:]
    job = planned.stdout.split(f"rule analysis_{STUDY.replace('-', '_')}_verdicts:", 1)[1].split("\n\n", 1)[0]
    inputs = next(line for line in job.splitlines() if line.strip().startswith("input:"))
    assert f"studies/{STUDY}/study.yaml" in inputs, inputs


@pytest.mark.slow
def test_the_evidence_macros_depend_on_the_code_that_words_them(tmp_path):
    """A changed phrase in perflab.evidence rewrites paper/macros/evidence.tex, as a changed module reruns tidy."""
    copy_project(ROOT, tmp_path, studies=[STUDY])
    planned = _snakemake(tmp_path, "-n", "paper/macros/evidence.tex")
    assert planned.returncode == 0, planned.stdout[-2000:] + planned.stderr[-2000:]
    job = planned.stdout.split("rule evidence:", 1)[1].split("\n\n", 1)[0]
    inputs = next(line for line in job.splitlines() if line.strip().startswith("input:"))
    assert "lib/perflab/" in inputs and ".verified" in inputs, inputs
