"""The review site: figures as images, links to raw data, manifests, lineage, CSVs and machine pages."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbconvert.preprocessors import ExecutePreprocessor

from helpers import campaign_record, sample_meta
from perflab import store, tidy
from perflab.report import levels, lineage, site

FIXTURE = Path(__file__).parent / "fixtures/lab/iperf3-tcp-P4.json"
LIB = Path(__file__).resolve().parents[1] / "lib"


def _fingerprint(host, boot):
    return json.dumps({"schema": 1, "host": host, "address": f"198.18.7.{11 if host == 'h1' else 12}",
                       "collected_at": "2026-11-22T12:00:00+00:00", "facts": {"cpu.model": "Test CPU",
                       "kernel.boot_id": boot, "net.eth0.mtu": 1500}, "state": {"load": [0.1, 0.1, 0.1]},
                       "versions": {"iperf3": "iperf 3.12"}}, indent=1, sort_keys=True) + "\n"


def make_project(root: Path, samples: int = 6, notebook: bool = True) -> Path | None:
    """A project with one measured campaign (2 levels), its analysis outputs and an executed notebook.

    Returns the executed notebook (None without ``notebook``).
    """
    (root / "Snakefile").write_text("")
    raw = store.RawStore(root / "data/raw", "demo")
    raw.begin(campaign_record("demo", {"parallel": [1, 4]}, spec={"design": "rmit", "benchmark": {"tool": "iperf3"}}))
    doc, rng = json.loads(FIXTURE.read_text()), np.random.default_rng(7)
    for block in range(samples):
        for pos, p in enumerate((1, 4)):
            doc["end"]["sum_received"]["bits_per_second"] = (9e9 if p == 1 else 9.4e9) + rng.normal(0, 1e8)
            meta = sample_meta(f"b{block}-p{p}", {"parallel": p}, block, campaign="demo", position=pos,
                               started_utc=f"2026-11-22T12:{block:02d}:0{pos}Z")
            raw.put_sample(f"b{block}-p{p}", {"stdout": json.dumps(doc), "stderr": "", "meta.json": meta})
        for host in ("h1", "h2"):
            raw.put_file(f"blocks/{block}/fingerprint-before-{host}.json", _fingerprint(host, "a" if block < 3 else "b"))
        changed = [{"key": "kernel.boot_id", "before": "a", "after": "b", "hosts": ["h1"]}] if block == 3 else []
        raw.put_file(f"blocks/{block}/differences.json", json.dumps(
            {"block": block, "changed": [], "between_hosts_before": [], "between_hosts_after": [],
             "since_previous_block": changed}))
    (root / "notebooks").mkdir()
    (root / "notebooks/analysis.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    cwd = os.getcwd()
    os.chdir(root)
    try:
        lineage.parameters(campaign="demo", metric="throughput", factor="parallel")
        tables = tidy.write("data/raw/demo", "data/processed", csv=True)
        result = levels.analyse(tidy.load(tables["parquet"]), metric="throughput", factor="parallel")
        levels.write(result, campaign="demo", source=tables["parquet"], paper_dir="paper",
                     factor_label="Parallel streams", quantity="Throughput", scale=1e9, unit="Gbit/s",
                     generator="notebooks/analysis.ipynb")
    finally:
        lineage.parameters()
        os.chdir(cwd)
    if not notebook:
        return None
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import pandas as pd\nfrom perflab import stats\nfrom perflab.report import figures\n"
        "df = pd.read_parquet('data/processed/demo.parquet').query('summary and metric == \"throughput\"')\n"
        "figures.levels(df, factor='parallel', value='value', summary=stats.describe(df, 'value', 'parallel'),\n"
        "               ylabel='Throughput (Gbit/s)', xlabel='Parallel streams', scale=1e9)")])
    ExecutePreprocessor(timeout=120, kernel_name="python3").preprocess(nb, {"metadata": {"path": str(root)}})
    out = root / "reports/notebooks/demo-analysis.ipynb"
    out.parent.mkdir(parents=True)
    nbformat.write(nb, out)
    return out


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(LIB), old]))
    try:
        notebook = make_project(root)
    finally:
        os.environ.pop("PYTHONPATH") if old is None else os.environ.__setitem__("PYTHONPATH", old)
    index = site.build([notebook], root / "reports", root=root)
    return root, index


def _links(page: Path) -> list[str]:
    return re.findall(r'(?:href|src)="([^"#]+)"', page.read_text())


def test_every_link_of_every_page_resolves(project):
    root, index = project
    pages = sorted((root / "reports").rglob("*.html"))
    assert len(pages) >= 5
    for page in pages:
        for href in _links(page):
            if href.startswith(("http:", "https:", "data:")) or href.endswith("paper/main.pdf"):
                continue
            assert (page.parent / href).exists(), f"{page.name}: broken link {href}"


def test_the_campaign_page_shows_figures_and_links_raw_manifest_lineage_and_csv(project):
    root, _ = project
    page = root / "reports/campaigns/demo.html"
    text = page.read_text()
    targets = {(page.parent / h).resolve().relative_to(root).as_posix() for h in _links(page)}
    assert "paper/figures/demo-throughput.png" in re.findall(r'src="\.\./\.\./([^"]+)"', text)
    for expected in ("data/raw/demo/MANIFEST.sha256", "data/raw/demo/samples/b0-p1/stdout",
                     "data/raw/demo/samples/b5-p4/meta.json", "data/processed/demo.csv",
                     "paper/figures/demo-throughput.lineage.json", "paper/tables/demo-throughput-checks.lineage.json",
                     "data/raw/demo/blocks/3/differences.json", "reports/html/demo-analysis.html"):
        assert expected in targets, expected
    assert "All 56 raw files match" in text
    assert "kernel.boot_id" in text, "the fingerprint difference of block 3 is shown"
    assert "how it was made (lineage)" in text and "from raw campaign data/raw/demo: 12 samples" in text


def test_one_machine_page_per_distinct_fingerprint(project):
    root, index = project
    machines = sorted(p.name for p in (root / "reports/machines").glob("*.html"))
    assert len(machines) == 4 and {m.split("-")[0] for m in machines} == {"h1", "h2"}
    assert all(f"machines/{m}" in index.read_text() for m in machines)
    text = (root / "reports/machines" / machines[0]).read_text()
    assert "Test CPU" in text and "iperf 3.12" in text and "blocks/0/fingerprint-before-" in text


def test_the_notebook_page_embeds_the_figure_as_an_image(project):
    root, _ = project
    text = (root / "reports/html/demo-analysis.html").read_text()
    assert "&lt;Figure size" not in text and "<Figure size" not in text
    assert re.search(r'<img[^>]+src="data:image/png;base64,', text)


@pytest.mark.skipif(not shutil.which("chromium"), reason="needs chromium (Debian package chromium)")
def test_headless_chromium_renders_the_campaign_page_with_its_figure(project, tmp_path):
    root, _ = project
    shot = tmp_path / "campaign.png"
    run = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                          f"--screenshot={shot}", "--window-size=1100,1400",
                          (root / "reports/campaigns/demo.html").as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 20_000, run.stderr[-2000:]
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("RGB"), dtype=int)
    blue = (np.abs(pixels - [0x00, 0x72, 0xB2]).sum(axis=2) < 40).sum()
    assert blue > 200, "the figure (its first palette colour) is not on the screenshot"
    if os.environ.get("PERFLAB_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["PERFLAB_KEEP_SCREENSHOT"])


def test_a_page_per_declared_study_links_its_data_manifest_campaigns_and_declaration(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    for folder in ("data/raw/published", "studies", "notebooks"):
        shutil.copytree(repo / folder, tmp_path / folder)
    index = site.build([], tmp_path / "reports", root=tmp_path)
    text = index.read_text()
    assert "studies/iperf3-streams.html" in text and "One stream or four" in text
    demo = (tmp_path / "reports/studies/iperf3-streams.html").read_text()
    assert "iperf3-streams (" in demo and "not measured yet" in demo and "study.yaml" in demo
    page = tmp_path / "reports/studies/003-openstack-opennebula.html"
    assert "studies/003-openstack-opennebula.html" in index.read_text()
    targets = {(page.parent / h).resolve().relative_to(tmp_path).as_posix() for h in _links(page)}
    assert {"data/raw/published/MANIFEST.sha256", "data/raw/published/ORIGIN.md",
            "data/raw/published/003-openstack-opennebula-table3-nas.csv"} <= targets
    assert "All published files match" in page.read_text()


def test_a_study_page_shows_an_analysis_whose_outputs_are_named_exactly_after_it(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    for folder in ("data/raw/published", "studies", "notebooks"):
        shutil.copytree(repo / folder, tmp_path / folder)
    for sub, name in (("figures", "pfsense-neighbour-udp.png"), ("tables", "pfsense-neighbour-udp.tex")):
        (tmp_path / "paper" / sub).mkdir(parents=True, exist_ok=True)
        (tmp_path / "paper" / sub / name).write_bytes(b"% the scenarios template's output\n")
    site.build([], tmp_path / "reports", root=tmp_path)
    page = (tmp_path / "reports/studies/002-pfsense-neighbour.html").read_text()
    udp = page[page.index("pfsense-neighbour-udp"):page.index("pfsense-neighbour-jitter")]
    assert "figure pfsense-neighbour-udp" in udp and "the scenarios template&#x27;s output" in udp
    assert "No figure or table yet" not in udp
