"""The review site: figures as images, links to raw data, manifests, lineage, CSVs and machine pages."""

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from nbconvert.preprocessors import ExecutePreprocessor

from helpers import campaign_record, sample_meta
from perflab import store, tidy
from perflab.report import levels, lineage, site

FIXTURE = Path(__file__).parent / "fixtures/lab/iperf3-tcp-P4.json"
REPO = Path(__file__).resolve().parents[1]
LIB = REPO / "lib"


def _fingerprint(host, boot):
    return json.dumps({"schema": 1, "host": host, "address": f"198.18.7.{11 if host == 'h1' else 12}",
                       "collected_at": f"2026-11-22T{12 if boot == 'a' else 13}:00:00+00:00", "facts": {"cpu.model": "Test CPU", "cpu.turbo": None,
                       "kernel.boot_id": boot, "net.eth0.mtu": 1500}, "state": {"load": [0.1, 0.1, 0.1]},
                       "versions": {"iperf3": "iperf 3.12"}}, indent=1, sort_keys=True) + "\n"


def make_project(root: Path, samples: int = 6, notebook: bool = True) -> Path | None:
    """A project with one measured campaign (2 levels), its analysis outputs and an executed notebook.

    Returns the executed notebook (None without ``notebook``).
    """
    (root / "Snakefile").write_text("")
    raw = store.RawStore(root / "data/raw", "demo")
    raw.begin(campaign_record("demo", {"parallel": [1, 4]}, spec={"benchmark": {"tool": "iperf3"}}))  # the default design
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
    shutil.copy(REPO / "notebooks/compare-levels.ipynb", root / "notebooks")
    (root / "studies/demo/campaigns").mkdir(parents=True)
    (root / "studies/demo/campaigns/demo.yaml").write_text(
        (REPO / "studies/iperf3-streams/campaigns/iperf3-streams.yaml").read_text()
        .replace("campaign: iperf3-streams", "campaign: demo"))
    (root / "studies/demo/study.yaml").write_text(
        "format: 1\nstudy: demo\ntitle: A demonstration study\ncampaigns:\n  - file: campaigns/demo.yaml\n"
        "analyses:\n  - notebook: compare-levels\n    campaign: demo\n    parameters: {metric: throughput, "
        "factor: parallel}\n")
    cwd = os.getcwd()
    os.chdir(root)
    try:
        lineage.parameters(campaign="demo", metric="throughput", factor="parallel")
        tables = tidy.write("data/raw/demo", "data/processed", csv=True)
        result = levels.analyse(tidy.load(tables["parquet"]), metric="throughput", factor="parallel")
        levels.write(result, campaign="demo", source=tables["parquet"], paper_dir="paper",
                     factor_label="Parallel streams", quantity="Throughput", scale=1e9, unit="Gbit/s",
                     generator="notebooks/compare-levels.ipynb")
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
    out = root / "reports/notebooks/demo-throughput.ipynb"
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
    return re.findall(r'(?:href|src)="([^"#?]+)"', page.read_text())


def _targets(page: Path, site_dir: Path) -> set[str]:
    """Every link of ``page`` as a path under the site directory."""
    return {(page.parent / h).resolve().relative_to(site_dir.resolve()).as_posix() for h in _links(page)}


def test_a_copied_site_has_no_broken_link_and_loads_nothing_from_the_network(project, tmp_path):
    root, _ = project
    copy = tmp_path / "elsewhere" / "reports"
    shutil.copytree(root / "reports", copy)
    pages = sorted(copy.rglob("*.html"))
    assert len(pages) >= 8
    checked = 0
    for page in pages:
        text = page.read_text()
        assert not re.search(r'(?:href|src)="(?:https?:)?//', text), f"{page.name} loads from the network"
        for href in _links(page):
            assert not href.startswith(("http:", "https:")), f"{page.name}: {href}"
            if href.startswith("data:"):
                continue
            target = (page.parent / href).resolve()
            assert target.is_relative_to(copy.resolve()), f"{page.name}: {href} leaves the site"
            assert target.exists(), f"{page.name}: broken link {href}"
            checked += 1
    assert checked > 100


def test_the_campaign_page_shows_its_declared_analysis_and_links_raw_manifest_lineage_and_parquet(project):
    root, _ = project
    out = root / "reports"
    page = out / "campaigns/demo.html"
    text = page.read_text()
    targets = _targets(page, out)
    assert "files/paper/figures/demo-throughput.png" in {t for t in targets if t.endswith(".png")}
    for expected in ("files/data/raw/demo/MANIFEST.sha256", "files/data/raw/demo/samples/b0-p1/stdout",
                     "files/data/raw/demo/samples/b5-p4/meta.json", "files/data/processed/demo.parquet",
                     "files/paper/figures/demo-throughput.lineage.json",
                     "files/paper/tables/demo-throughput-checks.lineage.json",
                     "files/data/raw/demo/blocks/3/differences.json", "html/demo-throughput.html",
                     "studies/demo.html", "machines/h1-2026-11-22-1200.html"):
        assert expected in targets, expected
    assert "All 56 raw files match" in text
    assert "design <b>rmit</b>" in text, "a campaign that names no design shows the default it ran under"
    assert "How it was measured</h2><p>Campaign demo stored 12 samples" in text
    assert "kernel.boot_id" in text, "the fingerprint difference of block 3 is shown"
    assert "how it was made (lineage)" in text
    lineage = text[text.index("how it was made (lineage)"):]
    assert re.search(r'from raw campaign <a href="[^"]*files/data/raw/demo/MANIFEST.sha256">data/raw/demo</a>: '
                     r"12 samples", lineage), "the lineage links down to the raw manifest"
    assert re.search(r'host <a href="\.\./machines/h[12]-2026-11-22-1[23]00\.html">h[12], 2026-11-22 1[23]:00', lineage)


def test_the_site_ships_parquet_and_no_csv_mirror_unless_asked(project, tmp_path):
    root, _ = project
    assert (root / "data/processed/demo.csv").is_file(), "the fixture's tidy step made the CSV mirror"
    shipped = {p.relative_to(root / "reports").as_posix() for p in (root / "reports").rglob("*.csv")}
    assert shipped == {"files/data/processed/demo.quarantine.csv"}, "no CSV mirror of a tidy table by default"
    assert (root / "reports/files/data/processed/demo.parquet").is_file()
    site.build([], tmp_path / "asked", root=root, csv=True)
    assert (tmp_path / "asked/files/data/processed/demo.csv").is_file()
    assert "files/data/processed/demo.csv" in _targets(tmp_path / "asked/campaigns/demo.html", tmp_path / "asked")


def test_a_moved_copy_of_the_site_passes_the_manifest_check_its_campaign_page_prints(project, tmp_path, monkeypatch):
    """Every raw file the manifest lists is in the site, also the samples past those the page lists, so the check
    the page prints (sha256sum -c, as the README's) passes in a copy of the site moved elsewhere; the raw files are
    copies, never links to the committed ones."""
    root, _ = project
    monkeypatch.setattr(site, "MAX_SAMPLES", 2)
    out = tmp_path / "built" / "reports"
    site.build([], out, root=root)
    page = (out / "campaigns/demo.html").read_text()
    assert "12 samples stored" in page and "10 more samples are in the directory" in page
    assert "<p>No executed notebook in this build.</p>" in page and "<p>None.</p>" not in page
    [check] = re.findall(r"<code>(cd [^<]*sha256sum -c[^<]*)</code>", page)
    check = html.unescape(check)
    assert check == "cd files/data/raw/demo && sha256sum -c --quiet MANIFEST.sha256"
    raw = root / "data/raw/demo/samples/b5-p4/stdout"
    assert not (out / "files/data/raw/demo/samples/b5-p4/stdout").samefile(raw), "a raw file is a copy"
    moved = tmp_path / "elsewhere" / "reports"
    shutil.copytree(out, moved)
    shutil.rmtree(tmp_path / "built")
    assert not (moved / "files/data/raw/demo/samples/b5-p4/stdout").samefile(raw)
    result = subprocess.run(["bash", "-c", check], cwd=moved, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(store.read_manifest(moved / "files/data/raw/demo")) == 56


def test_perflab_report_prints_the_sites_size_against_the_raw_datas(project, tmp_path, capsys):
    from perflab import cli

    root, _ = project
    out = tmp_path / "reports"
    notebook = root / "reports/notebooks/demo-throughput.ipynb"
    assert cli.main(["report", "--out", str(out), "--root", str(root), str(notebook)]) == 0
    printed = capsys.readouterr()
    line = printed.out.splitlines()[-1]
    size, files = site.footprint(out)
    raw_size, raw_files = site.footprint(root / "data/raw")
    assert (size, files) == (sum(p.stat().st_size for p in out.rglob("*") if p.is_file()),
                             sum(1 for p in out.rglob("*") if p.is_file()))
    assert raw_files == len(store.read_manifest(root / "data/raw/demo")) + 1, "the listed files and the manifest"
    assert line == (f"site: {size / 1e6:,.1f} MB in {files:,} files, {size / raw_size:.2f} x the raw data "
                    f"(data/raw: {raw_size / 1e6:,.1f} MB in {raw_files:,} files); a copy of it elsewhere holds "
                    "that much")
    # the fixture's raw data is tiny beside one notebook page: its site is over the budget, and says so
    assert size > site.MAX_RATIO * raw_size
    assert printed.err.startswith("perflab report: warning: the site is")


def test_the_site_size_note_warns_only_over_the_budget_and_names_its_largest_parts(tmp_path):
    raw, out = tmp_path / "data/raw", tmp_path / "reports"
    (raw / "c").mkdir(parents=True)
    (raw / "c/stdout").write_bytes(b"x" * 10_000)
    (out / "files").mkdir(parents=True)
    (out / "files/stdout").write_bytes(b"x" * 10_000)
    (out / "index.html").write_bytes(b"x" * 4_000)
    line, warning = site.size_note(out, raw)
    assert line.startswith("site: 0.0 MB in 2 files, 1.40 x the raw data") and warning == ""
    (out / "html").mkdir()
    (out / "html/notebook.css").write_bytes(b"x" * 2_000)
    _, warning = site.size_note(out, raw)
    assert warning.startswith("warning: the site is 1.60 x the raw data, over its budget of 1.5 x")
    assert "largest parts: files/ 0.0 MB, index.html 0.0 MB, html/ 0.0 MB" in warning


def test_notebook_pages_link_one_shared_stylesheet_instead_of_inlining_it(project):
    """nbconvert's lab styles (about 260 kB) are written once; inlined in each of 83 notebook pages they made a
    tenth of the site."""
    root, _ = project
    css = root / "reports/html" / site.NOTEBOOK_CSS
    assert css.is_file() and css.stat().st_size > 100_000 and ".jp-Cell" in css.read_text()
    page = (root / "reports/html/demo-throughput.html").read_text()
    assert f'<link rel="stylesheet" href="{site.NOTEBOOK_CSS}">' in page and "<style" not in page
    assert "jp-Cell" in page, "the cells keep the classes the stylesheet styles"


def test_tables_are_shown_as_html_not_latex_source(project):
    root, _ = project
    text = (root / "reports/campaigns/demo.html").read_text()
    shown = text.split("<details>")[0] + "".join(part.split("</details>", 1)[-1] for part in text.split("<details>")[1:])
    assert '<table class="tex">' in shown and "Shapiro" in shown
    assert "\\toprule" not in shown and "\\num{" not in shown and "\\plhead" not in shown
    assert "LaTeX source as included in the paper" in text


def test_one_machine_page_per_distinct_fingerprint_named_by_host_and_date(project):
    root, index = project
    machines = sorted(p.name for p in (root / "reports/machines").glob("*.html"))
    assert machines == ["h1-2026-11-22-1200.html", "h1-2026-11-22-1300.html", "h2-2026-11-22-1200.html",
                        "h2-2026-11-22-1300.html"]
    assert all(f"machines/{m}" in index.read_text() for m in machines)
    assert "h1, 2026-11-22 13:00" in index.read_text()
    page = root / "reports/machines/h1-2026-11-22-1200.html"
    text = page.read_text()
    assert "Test CPU" in text and "iperf 3.12" in text and "blocks/0/fingerprint-before-" in text
    assert "first fingerprinted on 2026-11-22 12:00:00 UTC." in text and "T12:00:00+00:00" not in text
    assert "<td><code>cpu.turbo</code></td><td><small>not recorded</small></td>" in text and ">None<" not in text
    assert "review site index" in text and "review site index" not in index.read_text(), "no link to itself"
    assert "campaigns/demo.html" in _targets(page, root / "reports")


def test_the_notebook_page_embeds_the_figure_and_loads_no_script(project):
    root, _ = project
    text = (root / "reports/html/demo-throughput.html").read_text()
    assert "&lt;Figure size" not in text and "<Figure size" not in text
    assert re.search(r'<img[^>]+src="data:image/png;base64,', text)
    assert "<script" not in text and "cdnjs" not in text and "review site index" in text


def test_the_search_index_holds_studies_campaigns_machines_and_figures(project):
    root, _ = project
    index = (root / "reports/search-index.js").read_text()
    items = json.loads(index.split("=", 1)[1].rstrip().rstrip(";"))
    kinds = {(i["kind"], i["title"]) for i in items}
    assert {("study", "study demo"), ("campaign", "campaign demo"), ("figure", "figure demo-throughput"),
            ("machine", "machine h1, 2026-11-22 12:00")} <= kinds
    assert all((root / "reports" / i["url"]).exists() for i in items)
    assert 'id="q"' in (root / "reports/campaigns/demo.html").read_text()


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not shutil.which("chromium"), reason="needs chromium (Debian package chromium)")
def test_headless_chromium_renders_the_campaign_page_with_its_figure(project, tmp_path):
    root, _ = project
    shot = tmp_path / "campaign.png"
    run = _chromium(f"--screenshot={shot}", "--window-size=1100,1400", (root / "reports/campaigns/demo.html").as_uri())
    assert shot.exists() and shot.stat().st_size > 20_000, run.stderr[-2000:]
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("RGB"), dtype=int)
    blue = (np.abs(pixels - [0x00, 0x72, 0xB2]).sum(axis=2) < 40).sum()
    assert blue > 200, "the figure (its first palette colour) is not on the screenshot"
    if os.environ.get("PERFLAB_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["PERFLAB_KEEP_SCREENSHOT"])


@pytest.mark.skipif(not shutil.which("chromium"), reason="needs chromium (Debian package chromium)")
def test_headless_chromium_runs_the_search_of_a_copied_site(project, tmp_path):
    root, _ = project
    copy = tmp_path / "reports"
    shutil.copytree(root / "reports", copy)
    run = _chromium("--dump-dom", (copy / "search.html").as_uri() + "?q=demo+throughput")
    dom = run.stdout
    assert "result" in dom and "figure demo-throughput" in dom, run.stderr[-2000:]
    hits = re.findall(r'<li><a href="([^"]+)">', dom)
    assert hits and all((copy / h).exists() for h in hits)
    assert "campaign demo" not in dom.split('id="results"')[1], "a campaign without 'throughput' is not listed"


def test_a_page_per_declared_study_links_its_data_manifest_campaigns_and_declaration(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    for folder in ("data/raw/published", "studies", "notebooks"):
        shutil.copytree(repo / folder, tmp_path / folder)
    extra = tmp_path / "data/raw/published/notes.md"  # listed in the manifest, linked from no page
    extra.write_text("notes\n")
    with (extra.parent / store.MANIFEST).open("a") as manifest:
        manifest.write(f"{store.sha256_file(extra)}  notes.md\n")
    index = site.build([], tmp_path / "reports", root=tmp_path)
    text = index.read_text()
    assert "studies/iperf3-streams.html" in text and "One stream or four" in text
    demo = (tmp_path / "reports/studies/iperf3-streams.html").read_text()
    assert "iperf3-streams (" in demo and "not measured yet" in demo and "study.yaml" in demo
    page = tmp_path / "reports/studies/003-openstack-opennebula.html"
    assert "studies/003-openstack-opennebula.html" in index.read_text()
    targets = _targets(page, tmp_path / "reports")
    assert {"files/data/raw/published/MANIFEST.sha256", "files/data/raw/published/ORIGIN.md",
            "files/data/raw/published/003-openstack-opennebula-table3-nas.csv"} <= targets
    assert "All published files match" in page.read_text()
    check = subprocess.run(["sha256sum", "-c", "--quiet", "MANIFEST.sha256"], capture_output=True, text=True,
                           cwd=tmp_path / "reports/files/data/raw/published")
    assert check.returncode == 0, "the site holds every published file its manifest lists: " + check.stdout
    pilot = (tmp_path / "reports/studies/001-unnoba-ceph.html").read_text()
    assert re.search(r"unnoba-fio-qd\b[^<]*(<[^>]*>[^<]*)*?; pilot: decides no question", pilot), "a pilot says so"
    assert "unnoba-confirm-bs (" in pilot and "unnoba-confirm-bs; pilot" not in pilot


def test_a_study_page_shows_an_analysis_whose_outputs_are_named_exactly_after_it(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    for folder in ("data/raw/published", "studies", "notebooks"):
        shutil.copytree(repo / folder, tmp_path / folder)
    for sub, name in (("figures", "pfsense-confirm-64-udp.png"), ("tables", "pfsense-confirm-64-udp.tex")):
        (tmp_path / "paper" / sub).mkdir(parents=True, exist_ok=True)
        (tmp_path / "paper" / sub / name).write_bytes(b"% the scenarios template's output\n")
    site.build([], tmp_path / "reports", root=tmp_path)
    page = (tmp_path / "reports/studies/002-pfsense-neighbour.html").read_text()
    udp = page[page.index("pfsense-confirm-64-udp"):page.index("pfsense-confirm-64-cpu")]
    assert "figure pfsense-confirm-64-udp" in udp and "the scenarios template&#x27;s output" in udp
    assert "No figure or table yet" not in udp


def _raw_campaign(root: Path, name: str) -> None:
    raw = store.RawStore(root / "data/raw", name)
    raw.begin(campaign_record(name, {"size": [1]}, spec={"design": "rmit", "benchmark": {"tool": "fio"}}))
    raw.put_sample("b0-s1", {"stdout": "{}", "stderr": "", "meta.json": sample_meta("b0-s1", {"size": 1}, 0,
                                                                                     campaign=name)})


def test_a_campaign_page_shows_what_the_declarations_made_from_it_not_what_its_name_prefixes(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    for folder in ("data/raw/published", "studies", "notebooks"):
        shutil.copytree(repo / folder, tmp_path / folder)
    for name in ("004-confirm", "004-confirm-protocols", "pfsense-confirm-64"):
        _raw_campaign(tmp_path, name)
    (tmp_path / "paper/figures").mkdir(parents=True)
    for name in ("004-confirm-protocols-protocols-throughput", "pfsense-confirm-64-udp", "pfsense-confirm-64-cpu",
                 "pfsense-confirm-ping-idle"):
        (tmp_path / "paper/figures" / f"{name}.png").write_bytes(b"\x89PNG")
    site.build([], tmp_path / "reports", root=tmp_path)
    old = (tmp_path / "reports/campaigns/004-confirm.html").read_text()
    assert "004-confirm-protocols" not in old and "No study declares this campaign" in old
    made = (tmp_path / "reports/campaigns/004-confirm-protocols.html").read_text()
    assert "figure 004-confirm-protocols-protocols-throughput" in made and "studies/004-aoe-iscsi.html" in made
    neighbour = (tmp_path / "reports/campaigns/pfsense-confirm-64.html").read_text()
    for name in ("pfsense-confirm-64-udp", "pfsense-confirm-64-cpu"):
        assert f'id="{name}"' in neighbour and f"figure {name}" in neighbour, name
    assert "pfsense-confirm-ping-idle" not in neighbour, "the ping campaign's analysis is not this campaign's"


def test_a_generated_table_reads_as_html_with_true_minus_and_commands_as_typed():
    from perflab.report import latex, texhtml

    frame = pd.DataFrame({"Level": ["a_1", "b"], "$p$": ["0.04", "$<0.001$"],
                          latex.header("Change", "(\\%)"): ["-0.5", "12.25"], "CI": ["[\\num{-1.2}, \\num{3}]", "--"]})
    tex = latex.latex_table(frame, caption=latex.Tex("Throughput with \\texttt{--cpu} in \\%"), label="t", escape=False,
                            align=[frame.columns[2]], notes=["A dash: undefined; $p_\\mathrm{Holm}$ adjusted."])
    [table] = texhtml.tables(tex)
    assert table.caption == "Throughput with <code>--cpu</code> in %"
    assert "<th>Change<br>(%)</th>" in table.table and "<td>−0.5</td>" in table.table
    assert "<td>[−1.2, 3]</td>" in table.table and "<td>–</td>" in table.table and "<td>&lt;0.001</td>" in table.table
    assert table.note == "A dash: undefined; p<sub>Holm</sub> adjusted."
    assert "\\" not in table.table + table.caption + table.note


def test_a_verdict_in_a_generated_table_is_the_word_the_paper_prints_not_its_macro_key(tmp_path):
    from perflab.report import latex, macros

    macros.write(tmp_path / "paper/macros/s-verdicts.tex", {"s/verdict/Q1": "supported", "s/verdict/Q1/ci": "[\\num{-1.5}\\%, 3\\%]"},
                 inputs=[], generator="test")
    frame = pd.DataFrame({"Question": ["Q1", "Q2"], "CI": ["\\plv{s/verdict/Q1/ci}", "--"],
                          "Verdict": ["\\plv{s/verdict/Q1}", "\\plv{s/verdict/Q2}"]})
    tex = tmp_path / "paper/tables/s-verdicts.tex"
    tex.parent.mkdir(parents=True)
    tex.write_text(latex.latex_table(frame, caption="Verdicts", label="t", escape=False))
    built = site._Site(tmp_path, tmp_path / "reports")
    shown = site._tables_html(built, tex, tmp_path / "reports/studies/s.html").split("<details>")[0]
    assert "<td>supported</td>" in shown and "<td>[−1.5%, 3%]</td>" in shown
    assert "<td>??s/verdict/Q2??</td>" in shown and "s/verdict/Q1" not in shown  # a missing value shows as the paper's


def test_a_table_with_two_line_headers_keeps_one_header_row_and_its_body_rows():
    from perflab.report import latex, texhtml

    frame = pd.DataFrame({"Metric": ["Loss (\\%)", ""], latex.header("Mean", "[95\\,\\% CI]"): ["1.3", "2.5"],
                          latex.header("$p$", "(Holm)"): ["0.02", "$<0.001$"]})
    [table] = texhtml.tables(latex.latex_table(frame, caption="c", label="l", escape=False))
    rows = re.findall(r"<tr>(.*?)</tr>", table.table)
    assert len(rows) == 3
    assert rows[0] == "<th>Metric</th><th>Mean<br>[95\u2009% CI]</th><th>p<br>(Holm)</th>"
    assert rows[1] == "<td>Loss (%)</td><td>1.3</td><td>0.02</td>"


def _files(top: Path) -> dict[Path, int]:
    """Every file under ``top`` (links not followed) with its modification time."""
    return {p: p.lstat().st_mtime_ns for p in top.rglob("*") if p.is_file() or p.is_symlink()}


def test_perflab_report_on_a_hostile_project_writes_only_under_reports_and_copies_nothing_from_outside(
        tmp_path, monkeypatch):
    """A fingerprint's host ``../../../../escape/PWN``, a lineage parameter naming files outside the project, links
    in a sample (out of the project, and out of the campaign into the project) and notebook HTML with event handlers:
    `perflab report` writes nothing outside reports/, copies no byte from outside the campaign or the project and
    keeps no handler."""
    from perflab import cli

    root = tmp_path / "w" / "clone"
    root.mkdir(parents=True)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(LIB), os.environ.get("PYTHONPATH")])))
    notebook = make_project(root, samples=3)
    secret = "CANARY-SECRET-7f3a"
    for canary in (tmp_path / "w" / "canary" / "secret.txt", root / "private" / "key.txt"):
        canary.parent.mkdir(parents=True)
        canary.write_text(secret + "\n")
    raw = root / "data/raw/demo"
    evil = json.loads(_fingerprint("h1", "a"))
    evil.update(host="../../../../escape/PWN", facts={**evil["facts"], "cpu.model": "Evil CPU"})
    (raw / "blocks/0/fingerprint-before-evil.json").write_text(json.dumps(evil))
    sample = raw / "samples/b0-p1"
    (sample / "outside").symlink_to(tmp_path / "w" / "canary" / "secret.txt")
    (sample / "in-project").symlink_to(root / "private" / "key.txt")
    leak = json.loads(_fingerprint("h2", "a"))
    leak["facts"]["secret"] = secret
    (tmp_path / "w" / "canary" / "fingerprint.json").write_text(json.dumps(leak))
    (raw / "blocks/1/fingerprint-before-link.json").symlink_to(tmp_path / "w" / "canary" / "fingerprint.json")
    sidecar = root / "paper/figures/demo-throughput.lineage.json"
    record = json.loads(sidecar.read_text())
    record["parameters"]["caption"] = "see ../canary/secret.txt and ../../w/canary/secret.txt"
    sidecar.write_text(json.dumps(record))
    nb = nbformat.read(notebook, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell('<div onmouseover="alert(1)">hover</div>'))
    nb.cells[0].outputs.append(nbformat.v4.new_output("display_data", data={"text/html": (
        '<img src="x" onerror="alert(2)"><svg onload="alert(3)"><circle r="1"/></svg><body onload="alert(4)">'
        '<a href="javascript:alert(5)">click</a><script>alert(6)</script><iframe srcdoc="<script>alert(7)</script>">'
        '</iframe><p style="background:url(javascript:alert(8))">styled</p><img src="data:text/html;base64,PHA+">'
        '<a href="data:text/html;base64,PHA+">data link</a>')}))
    nbformat.write(nb, notebook)
    before = _files(tmp_path)
    monkeypatch.chdir(root)
    assert cli.main(["report", "--out", "reports", str(notebook)]) == 0
    after = _files(tmp_path)
    written = [p for p in after if before.get(p) != after[p]]
    assert written and all(p.is_relative_to(root / "reports") for p in written), \
        [p for p in written if not p.is_relative_to(root / "reports")]
    assert not (tmp_path / "escape").exists() and not (root / "w").exists()
    for path in (root / "reports").rglob("*"):
        assert path.is_dir() or not path.is_symlink(), path
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), f"{path} holds a file from outside"
    assert (root / "reports/machines/escape-PWN-2026-11-22.html").is_file()
    campaign = (root / "reports/campaigns/demo.html").read_text()
    assert "outside <small class=\"bad\">(not published" in campaign and "in-project <small" in campaign
    assert "see ../canary/secret.txt" in campaign  # named as text
    page = (root / "reports/html/demo-throughput.html").read_text()
    assert not re.search(r"<[^>]*\son\w+\s*=", page, re.I), re.findall(r"<[^>]*\son\w+\s*=[^>]*>", page, re.I)
    assert not re.search(r"<(?:script|iframe|svg)\b", page, re.I) and "javascript:" not in page
    assert "data:text/html" not in page and "url(javascript" not in page
    assert "hover" in page and "click" in page and re.search(r'<img[^>]+src="data:image/png;base64,', page)


def test_a_link_planted_in_the_site_directory_stops_the_report_before_it_writes_through_it(tmp_path):
    from perflab.errors import UserError

    root, outside = tmp_path / "clone", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    make_project(root, samples=3, notebook=False)
    (root / "reports/files").mkdir(parents=True)
    (root / "reports/files/data").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UserError, match="resolves outside the site directory"):
        site.build([], root / "reports", root=root)
    assert not any(outside.iterdir())
def test_a_campaign_page_gives_the_steal_per_cell_beside_how_it_was_measured():
    from perflab.report import site

    row = {"steal": {"median": 0.151, "p90": 0.33, "max": 0.42, "n": 80}, "steal_bound": 1.0,
           "steal_cells": {"protocol-aoe": {"median": 0.14, "p90": 0.27, "max": 0.38, "n": 40},
                           "protocol-nbd": {"median": 0.16, "p90": 0.35, "max": 0.42, "n": 40}},
           "cell_words": {"protocol-aoe": "protocol aoe", "protocol-nbd": "protocol nbd"}}
    html = site._steal_table(row)
    assert "The gate's bound: 1 %." in html
    assert "<tr><td>all samples</td><td>80</td><td>15.1</td><td>33.0</td><td>42.0</td></tr>" in html
    assert "<tr><td>protocol nbd</td><td>40</td><td>16.0</td><td>35.0</td><td>42.0</td></tr>" in html, "in words"
    assert site._steal_table({"steal": None}) == ""


def test_a_note_a_family_of_tables_shares_is_shown_whole_without_its_key():
    """The paper says a long shared note once (``\\plshared{key}{text}``); each page of the site shows its text, never
    the key."""
    from perflab.report import latex, texhtml

    long_note = "Change: relative difference of means against the baseline, " * 4
    tex = latex.latex_table(pd.DataFrame({"a": ["1"]}), caption="c", label="l", escape=False,
                            notes=["Frame 64 B.", long_note.strip()])
    assert "\\plshared{" in tex
    [table] = texhtml.tables(tex)
    assert table.note == "Frame 64 B. " + long_note.strip()


def test_a_samples_files_are_grouped_by_their_folder_so_each_hosts_are_told_apart(tmp_path):
    sample = tmp_path / "data/raw/c/samples/s1"
    for name in ("stdout", "meta.json", "monitors/h1/cgroup-after.txt", "monitors/h2/cgroup-after.txt"):
        (sample / name).parent.mkdir(parents=True, exist_ok=True)
        (sample / name).write_text("x")
    built = site._Site(tmp_path, tmp_path / "reports")
    cell = re.sub(r"<a [^>]*>([^<]*)</a>", r"\1", site._sample_files(built, sample, tmp_path / "reports/campaigns/c.html"))
    assert cell == "meta.json, stdout; monitors/h1: cgroup-after.txt; monitors/h2: cgroup-after.txt"
