"""The paper's generated tables stand upright on the text width: set in a page of the paper's own
geometry and style (paper/perflab.sty), none is turned sideways (the style says so in the log)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perflab.report import factorial, recheck, scenarios, verdicts

ROOT = Path(__file__).resolve().parents[1]
PUB = ROOT / "data" / "raw" / "published"
SIDEWAYS = "perflab: a table set sideways"


def _scenario_table() -> str:
    """Study 002's UDP layout: four metrics, two frame sizes, four scenarios (16 rows a part), 40 blocks."""
    rng = np.random.default_rng(7)
    order = ["alone", "idle", "stress", "stress+net"]
    samples = {}
    for key in ("throughput", "loss", "jitter", "reordered"):
        rows = [{"run_id": f"{key}{f}{s}{b}", "block": b, "frame": f, "scenario": s,
                 "value": 1000.0 * (1 - 0.01 * i) * (1 + 0.02 * rng.standard_normal())}
                for f in ("512", "1518") for i, s in enumerate(order) for b in range(40)]
        samples[key] = pd.DataFrame(rows)
    result = scenarios.analyse(samples, panel="frame", scenario="scenario", baseline="alone", order=order)
    metrics = [scenarios.Metric(key="throughput", label="Throughput", unit="Mbit/s"),
               scenarios.Metric(key="loss", label="Loss", unit="%"),
               scenarios.Metric(key="jitter", label="Jitter", unit="ms"),
               scenarios.Metric(key="reordered", label="Out of order", unit="packets")]
    return scenarios.table(result, metrics, panel="frame", panel_label="Frame", scenario="scenario",
                           caption="UDP through the firewall per frame size and neighbour scenario", label="tab:s")


def _grid_table() -> str:
    """Study 000's throughput grid: parallel streams down, MTU x path across, mean above its interval."""
    cols = ["mtu=1500, path=direct", "mtu=1500, path=nat", "mtu=9000, path=direct", "mtu=9000, path=nat"]
    table = pd.DataFrame([{"parallel": p, **{c: "12.67 [12.24, 13.12]" for c in cols}} for p in ("1", "8")]
                         + [{"parallel": "mean", **{c: "11.24" for c in cols}}])
    return factorial.layout_tex(table, caption="Throughput (Gbit/s) per cell.", label="tab:g", over="parallel",
                                labels={"parallel": "Parallel streams", "mtu": "MTU (B)", "path": "path"})


def _tables(tmp_path: Path) -> dict[str, str]:
    """Generated tables of the kinds the paper turned sideways before they were laid out to stand upright."""
    out = verdicts.write("studies/003-openstack-opennebula", ROOT, paper_dir=tmp_path, tables={}, inputs=[],
                         generator="test")
    pvalues, claims, _ = recheck.run("003-openstack-opennebula", PUB)
    eleven = verdicts.write("studies/002-pfsense-neighbour", ROOT, paper_dir=tmp_path, tables={}, inputs=[],
                            generator="test")
    return {"verdicts": out["verdicts"].read_text(), "verdicts-11": eleven["verdicts"].read_text(), "scenarios": _scenario_table(), "grid": _grid_table(),
            "recheck-p": recheck.recheck_table_latex(pvalues, caption="p", label="tab:p"),
            "claims": recheck.claims_table(claims, caption="Claims", label="tab:c")}


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("pdflatex"), reason="needs pdflatex (TeX Live)")
def test_the_generated_tables_stand_upright_on_the_papers_text_width(tmp_path):
    shutil.copy(ROOT / "paper" / "perflab.sty", tmp_path / "perflab.sty")
    tables = _tables(tmp_path)
    preamble = (ROOT / "paper" / "main.tex").read_text().split("\\usepackage{perflab}")[0]
    preamble += ("\\usepackage{perflab}\n\\input{macros/003-openstack-opennebula-verdicts.tex}\n"
                 "\\input{macros/002-pfsense-neighbour-verdicts.tex}\n")  # the verdict words
    body = "\n".join(f"\\typeout{{perflab-test: {name}}}\n{tex}\n\\clearpage" for name, tex in tables.items())
    (tmp_path / "t.tex").write_text(f"{preamble}\\begin{{document}}\n{body}\n\\end{{document}}\n")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    log = (tmp_path / "t.log").read_text(errors="replace")
    assert run.returncode == 0, run.stdout[-3000:]
    turned, current = [], None
    for line in log.splitlines():
        if line.startswith("perflab-test: "):
            current = line.removeprefix("perflab-test: ")
        elif line.startswith(SIDEWAYS):
            turned.append(current)
    assert turned == [], f"turned sideways: {turned}"
    assert "Float too large for page" not in log, "a table taller than the page runs past its foot"
    assert "\\plcell" in tables["grid"] and "\\plcell" in tables["scenarios"]  # the means above their intervals
    # a long table is one longtable, never numbered parts: study 002's thirteen questions, the 74 re-checked p-values
    for name in ("verdicts-11", "recheck-p"):
        assert "\\pllong" in tables[name] and "\\plfloat" not in tables[name] and "rows 1--" not in tables[name], name
    text = subprocess.run(["pdftotext", "-layout", "t.pdf", "-"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert "(continued)" in text and "continued on the next page" in text
