"""`perflab verify --rebuild`: the analysis notebook rerun into a scratch directory gives the same bytes."""

import json
import os
import shutil
from pathlib import Path

import papermill
import pytest
from test_site import make_project

from perflab import store, tidy, verify

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project whose paper outputs come from the real compare-levels notebook run by papermill."""
    root = tmp_path_factory.mktemp("rebuild")
    make_project(root, samples=4, notebook=False)
    shutil.rmtree(root / "paper")
    shutil.rmtree(root / "data/processed")
    tidy.write(root / "data/raw/demo", root / "data/processed")  # the pipeline's tidy rule
    shutil.copy(ROOT / "notebooks/compare-levels.ipynb", root / "notebooks/compare-levels.ipynb")
    (root / "reports").mkdir()
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(LIB), old]))
    try:
        papermill.execute_notebook(
            str(root / "notebooks/compare-levels.ipynb"), str(root / "reports/demo-analysis.ipynb"),
            parameters={"campaign": "demo", "metric": "throughput", "factor": "parallel",
                        "factor_label": "Parallel streams", "quantity": "Throughput", "scale": 1e9, "unit": "Gbit/s",
                        "pipeline": True},  # as the pipeline runs it (by hand it would write under scratch/)
            kernel_name="python3", cwd=str(root), progress_bar=False)
        yield root
    finally:
        os.environ.pop("PYTHONPATH") if old is None else os.environ.__setitem__("PYTHONPATH", old)


@pytest.mark.slow
def test_rebuilt_outputs_are_identical_and_a_forged_table_is_named(project, tmp_path):
    record = json.loads((project / "paper/tables/demo-throughput-summary.lineage.json").read_text())
    assert record["parameters"]["campaign"] == "demo" and record["parameters"]["paper_dir"] == "paper"
    findings, notes, compared = verify.rebuild(project, tmp_path / "scratch", kernel="python3")
    assert findings == [] and notes == []
    assert compared >= 7, "figure (PDF, PNG), three tables, macros and section"

    table = project / "paper/tables/demo-throughput-summary.tex"
    table.write_text(table.read_text().replace("\\toprule", "\\toprule % edited", 1))
    record["outputs"][0]["sha256"] = store.sha256_file(table)  # the sidecar forged to match
    (project / "paper/tables/demo-throughput-summary.lineage.json").write_text(json.dumps(record))
    assert verify.repository(project).ok, "the forged sidecar hides the edit from the hash check"
    findings, _, _ = verify.rebuild(project, tmp_path / "scratch2", kernel="python3")
    assert [f.path for f in findings] == ["paper/tables/demo-throughput-summary.tex"]
    assert "differs from the copy notebooks/compare-levels.ipynb rebuilt from raw data (line" in findings[0].problem
