"""The review site: static HTML a reviewer reads without running anything.

``reports/index.html`` links to a page per declared study (its campaigns, published data,
analyses and chapter, from ``studies/*/study.yaml``), per campaign and per host
fingerprint ("machine"), and to every executed notebook rendered by nbconvert. A
campaign page shows the figures (PNG), the generated tables with their lineage, the
fingerprint differences between and within blocks, whether the raw files still match
the manifest, and links to the raw samples, the manifest, the processed CSVs and every
lineage sidecar. Links are relative, so the site works from a checkout (``file://``)
or any static web server rooted at the project.
"""

from __future__ import annotations

import html
import json
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Sequence

import nbformat
from nbconvert import HTMLExporter

from .. import __version__, store, study as study_mod
from .lineage import atomic_text, chain, fingerprint_id

#: Sample directories listed per campaign page before the list is cut short.
MAX_SAMPLES = 500

_CSS = ("body{font-family:Georgia,serif;max-width:60em;margin:2em auto;padding:0 1em;line-height:1.45;color:#222}"
        "h1,h2,h3{font-family:Helvetica,Arial,sans-serif}nav{font-size:.9em;margin-bottom:1em}"
        "img{max-width:100%;border:1px solid #ddd}figure{margin:1.5em 0}figcaption{font-size:.9em}"
        "table{border-collapse:collapse;font-size:.9em}td,th{border-bottom:1px solid #ddd;padding:.2em .6em;"
        "text-align:left;vertical-align:top}pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:.8em}"
        "footer{margin-top:2em}.ok{color:#1a7f37}.bad{color:#b42318;font-weight:bold}small{color:#555}")


def _e(value: object) -> str:
    return html.escape(str(value))


def _page(title: str, body: str, *, home: str | None) -> str:
    nav = f"<nav><a href=\"{_e(home)}\">&larr; review site index</a></nav>" if home else ""
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<style>{_CSS}</style></head><body>{nav}<h1>{_e(title)}</h1>{body}"
            f"<footer><small>perflab {_e(__version__)}, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}</small></footer></body></html>\n")


class _Site:
    """Paths and links of one site build: ``root`` is the project, ``out`` the site directory."""

    def __init__(self, root: Path, out: Path) -> None:
        self.root, self.out = root, out

    def link(self, target: Path, page: Path, text: str | None = None) -> str:
        """An ``<a>`` from ``page`` (a file under ``out``) to ``target`` (absolute or under root)."""
        href = os.path.relpath(target if target.is_absolute() else self.root / target, page.parent)
        return f"<a href=\"{_e(Path(href).as_posix())}\">{_e(text or target.name)}</a>"

    def links(self, targets: Iterable[Path], page: Path) -> str:
        """Links to the existing ``targets``, comma-separated (or a dash)."""
        found = [self.link(t, page) for t in targets if (self.root / t).exists()]
        return ", ".join(found) or "&ndash;"


def _notebooks(site: _Site, notebooks: Sequence[Path]) -> dict[Path, Path]:
    """Render each executed notebook to ``out/html/``; return notebook -> page."""
    exporter, pages = HTMLExporter(), {}
    for nb_path in notebooks:
        nb = nbformat.read(nb_path, as_version=4)
        body, _ = exporter.from_notebook_node(nb)
        name = f"{nb_path.parent.name}-{nb_path.stem}.html" if nb_path.stem == "experiment" else f"{nb_path.stem}.html"
        pages[nb_path] = atomic_text(site.out / "html" / name, body)
    return pages


def _notebook_items(site: _Site, pages: dict[Path, Path], page: Path) -> str:
    items = []
    for nb_path, html_page in pages.items():
        meta = nbformat.read(site.root / nb_path, as_version=4).metadata.get("papermill", {})
        params = ", ".join(f"{k}={v!r}" for k, v in (meta.get("parameters") or {}).items())
        items.append(f"<li>{site.link(html_page, page, nb_path.as_posix())} "
                     f"(<a href=\"{_e(Path(os.path.relpath(site.root / nb_path, page.parent)).as_posix())}\">ipynb</a>)"
                     f"<br><small>run {_e(str(meta.get('start_time', '?'))[:19])}, "
                     f"{float(meta.get('duration') or 0):.1f} s; parameters: {_e(params)}</small></li>")
    return "<ul>" + "".join(items) + "</ul>" if items else "<p>None.</p>"


def _fingerprints(cdir: Path) -> list[tuple[str, dict]]:
    """(path relative to the campaign, fingerprint) of every stored host fingerprint."""
    return [(p.relative_to(cdir).as_posix(), json.loads(p.read_text()))
            for p in sorted(cdir.glob("blocks/*/fingerprint-*.json"))]


def _differences(site: _Site, cdir: Path, page: Path) -> str:
    rows = []
    for path in sorted(cdir.glob("blocks/*/differences*.json"), key=lambda p: (int(p.parent.name), p.name)
                       if p.parent.name.isdigit() else (0, p.name)):
        record = json.loads(path.read_text())
        block = site.link(path, page, f"block {record.get('block')}")
        for kind in ("since_previous_block", "changed", "between_hosts_before", "between_hosts_after"):
            for d in record.get(kind, []):
                rows.append(f"<tr><td>{block}</td>"
                            f"<td>{_e(kind.replace('_', ' '))}</td><td>{_e(', '.join(d.get('hosts', [])))}</td>"
                            f"<td><code>{_e(d.get('key'))}</code></td><td>{_e(d.get('before'))}</td>"
                            f"<td>{_e(d.get('after'))}</td></tr>")
    if not rows:
        n = len(list(cdir.glob("blocks/*/differences*.json")))
        return f"<p>No fingerprint differences in {n} compared block(s).</p>"
    return ("<table><tr><th>block</th><th>kind</th><th>hosts</th><th>fact</th><th>before / first host</th>"
            "<th>after / second host</th></tr>" + "".join(rows) + "</table>")


def _lineage(site: _Site, output: Path) -> str:
    """The ``perflab lineage`` chain of a generated file, folded, or nothing without a sidecar."""
    try:
        lines = chain(output.relative_to(site.root), site.root)
    except (FileNotFoundError, ValueError, KeyError, json.JSONDecodeError):
        return ""
    return f"<details><summary>how it was made (lineage)</summary><pre>{_e(chr(10).join(lines))}</pre></details>"


def _named(folder: Path, name: str, suffix: str) -> list[Path]:
    """Files of ``folder`` named ``<name><suffix>`` or ``<name>-*<suffix>`` (an analysis' or a campaign's outputs)."""
    return sorted({*folder.glob(f"{name}{suffix}"), *folder.glob(f"{name}-*{suffix}")})


def _outputs(site: _Site, campaign: str, page: Path) -> str:
    parts = []
    for png in _named(site.root / "paper/figures", campaign, ".png"):
        stem = png.with_suffix("")
        parts.append(f"<figure><img src=\"{_e(Path(os.path.relpath(png, page.parent)).as_posix())}\" "
                     f"alt=\"figure {_e(stem.name)}\"><figcaption>{_e(stem.name)}: "
                     f"{site.links([stem.with_suffix('.pdf'), stem.with_suffix('.png'), stem.with_name(stem.name + '.lineage.json')], page)}"
                     f"</figcaption>{_lineage(site, png)}</figure>")
    tables = _named(site.root / "paper/tables", campaign, ".tex")
    if tables:
        parts.append("<h3>Tables (LaTeX as included in the paper)</h3>")
    for tex in tables:
        sidecar = tex.with_name(f"{tex.stem}.lineage.json")
        parts.append(f"<details><summary>{_e(tex.stem)} &mdash; {site.links([tex, sidecar], page)}</summary>"
                     f"<pre>{_e(tex.read_text())}</pre>{_lineage(site, tex)}</details>")
    macros = _named(site.root / "paper/macros", campaign, ".tex")
    if macros:
        parts.append("<p>Inline values: " + site.links(
            [p for m in macros for p in (m, m.with_name(f"{m.stem}.lineage.json"))], page) + "</p>")
    return "".join(parts) or "<p>No figure or table yet: run the pipeline (<code>make reproduce</code>).</p>"


def _campaign_page(site: _Site, cdir: Path, nb_pages: dict[Path, Path]) -> Path:
    name = cdir.name
    page = site.out / "campaigns" / f"{name}.html"
    record = json.loads((cdir / "campaign.json").read_text())
    spec = record.get("spec", {})
    problems = store.verify(cdir)
    manifest = store.read_manifest(cdir)
    status = (f"<p class=\"ok\">All {len(manifest)} raw files match {site.link(cdir / store.MANIFEST, page)}.</p>"
              if not problems else f"<p class=\"bad\">{len(problems)} raw file(s) do not match "
              f"{site.link(cdir / store.MANIFEST, page)}:</p><ul>"
              + "".join(f"<li>{_e(p)}</li>" for p in problems) + "</ul>")
    factors = "; ".join(f"{_e(k)}: {_e(', '.join(map(str, v)))}" for k, v in spec.get("factors", {}).items())
    analyses = {nb: p for nb, p in nb_pages.items() if nb.stem.startswith(name) or nb.parent.name == name}
    samples = sorted(p for p in (cdir / "samples").iterdir() if not p.name.startswith(".")) \
        if (cdir / "samples").is_dir() else []
    failed = sorted(p for p in (cdir / "failed").iterdir() if not p.name.startswith(".")) \
        if (cdir / "failed").is_dir() else []
    sample_rows = "".join(
        f"<tr><td>{_e(s.name)}</td><td>{site.links(sorted(f.relative_to(site.root) for f in s.rglob('*') if f.is_file()), page)}</td></tr>"
        for s in [*samples[:MAX_SAMPLES], *failed[:MAX_SAMPLES]])
    more = f"<p>{len(samples) - MAX_SAMPLES} more samples are in the directory.</p>" if len(samples) > MAX_SAMPLES else ""
    hosts = sorted({fingerprint_id(fp) for _, fp in _fingerprints(cdir)})
    processed = site.root / "data/processed"
    body = (
        f"<p>Tool <b>{_e(spec.get('benchmark', {}).get('tool', record.get('tool', '?')))}</b>, design "
        f"<b>{_e(spec.get('design', '?'))}</b>, factors {factors or '&ndash;'}; "
        f"{len(samples)} samples stored, {len(failed)} failed attempts kept as evidence.</p>{status}"
        "<h2>Figures and tables</h2>" + _outputs(site, name, page)
        + "<h2>Analysis and assumption checks</h2><p>The executed notebooks show the description, the tests "
          "chosen and why, and the normality, serial-dependence, trend and outlier checks per level "
          "(also the <code>-checks</code> table above).</p>" + _notebook_items(site, analyses, page)
        + "<h2>Host fingerprints</h2><p>Machines (one page per distinct fingerprint): "
        + (", ".join(site.link(site.out / "machines" / f"{h}.html", page, h) for h in hosts) or "none recorded")
        + "</p>" + _differences(site, cdir, page)
        + "<h2>Processed data</h2><p>" + site.links(
            [processed / f"{name}{ext}" for ext in (".csv", ".quarantine.csv", ".lineage.json", ".parquet")], page)
        + "</p><h2>Raw data</h2><p>" + site.links(
            [cdir / n for n in (store.MANIFEST, "campaign.json", "ledger.jsonl", "experiment.ipynb")], page)
        + f"</p>{more}<table><tr><th>sample</th><th>files</th></tr>{sample_rows}</table>")
    atomic_text(page, _page(f"Campaign {name}", body, home="../index.html"))
    return page


def _machine_pages(site: _Site, campaigns: Sequence[Path]) -> dict[str, Path]:
    seen: dict[str, list[tuple[Path, dict]]] = defaultdict(list)
    for cdir in campaigns:
        for rel, fp in _fingerprints(cdir):
            seen[fingerprint_id(fp)].append((cdir / rel, fp))
    pages = {}
    for ident, uses in sorted(seen.items()):
        page = site.out / "machines" / f"{ident}.html"
        fp = uses[0][1]
        facts = "".join(f"<tr><td><code>{_e(k)}</code></td><td>{_e(v)}</td></tr>"
                        for k, v in sorted(fp.get("facts", {}).items()))
        versions = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in sorted(fp.get("versions", {}).items()))
        where = "".join(f"<li>{site.link(path, page, path.relative_to(site.root / 'data/raw').as_posix())} "
                        f"<small>collected {_e(f.get('collected_at', '?'))}</small></li>" for path, f in uses)
        body = (f"<p>Host <b>{_e(fp.get('host'))}</b> ({_e(fp.get('address', '?'))}); fingerprint "
                f"<code>{_e(ident)}</code>: the SHA-256 of its facts, so every block run on an identical "
                f"machine links here.</p><h2>Facts</h2><table>{facts}</table><h2>Tool versions</h2>"
                f"<table>{versions or '<tr><td>none recorded</td></tr>'}</table>"
                f"<h2>Fingerprints with these facts ({len(uses)})</h2><ul>{where}</ul>")
        pages[ident] = atomic_text(page, _page(f"Machine {ident}", body, home="../index.html"))
    return pages


def _studies(site: _Site, nb_pages: dict[Path, Path], campaign_pages: dict[str, Path], index: Path) -> str:
    """A page per declared study (studies/*/study.yaml); returns the index section linking them."""
    try:
        found = study_mod.discover(site.root) if (site.root / study_mod.STUDIES_DIR).is_dir() else []
    except study_mod.StudyError as exc:
        return f"<p class=\"bad\">The study declarations do not load: {_e(exc)}</p>"
    if not found:
        return "<p>None declared.</p>"
    pub = site.root / study_mod.PUBLISHED_DIR
    problems = store.verify(pub) if (pub / store.MANIFEST).exists() else [f"no {store.MANIFEST}"]
    items = []
    for s in found:
        page = site.out / "studies" / f"{s.id}.html"
        status = ""
        if s.published:
            status = (f"<p class=\"ok\">All published files match {site.link(pub / store.MANIFEST, page)}.</p>"
                      if not problems else "<p class=\"bad\">" + _e("; ".join(problems)) + "</p>")
        origin = sorted(p for p in pub.glob(f"{s.id}-ORIGIN.md")) or ([pub / "ORIGIN.md"] if s.published else [])
        runs = "".join(f"<li>{site.link(campaign_pages[c.id], page, c.id) if c.id in campaign_pages else _e(c.id)}"
                       f" ({site.link(site.root / c.file, page, c.file)}"
                       f"{'' if c.id in campaign_pages else '; not measured yet'})</li>" for c in s.campaigns)
        analyses = "".join(
            f"<h3>{_e(a.name)} <small>({_e(a.notebook)}"
            f"{', campaign ' + _e(a.campaign) if a.campaign else ''})</small></h3>"
            + _notebook_items(site, {Path(a.outputs['notebook']): nb_pages[Path(a.outputs['notebook'])]}
                              if Path(a.outputs["notebook"]) in nb_pages else {}, page)
            + _outputs(site, a.name, page) for a in s.analyses)
        body = (f"<p>Declared in {site.link(site.root / s.declaration, page, s.declaration)}"
                + (f"; source: <code>{_e(s.source)}</code>" if s.source else "")
                + (f"; chapter {site.link(site.root / s.chapter, page, s.chapter)}" if s.chapter else "")
                + ".</p><h2>Campaigns</h2>" + (f"<ul>{runs}</ul>" if runs else "<p>None.</p>")
                + "<h2>Published data (digitized)</h2>"
                + (status + f"<p>{site.links([site.root / f for f in s.published] + origin, page)}</p>"
                   if s.published else "<p>None.</p>")
                + "<h2>Analyses</h2>" + (analyses or "<p>None.</p>"))
        atomic_text(page, _page(f"Study {s.id}: {s.title}", body, home="../index.html"))
        items.append(f"<li>{site.link(page, index, s.id)}: {_e(s.title)}"
                     f"{' (demonstration)' if s.demo else ''}</li>")
    return "<ul>" + "".join(items) + "</ul>"


def build(notebooks: Sequence[str | Path], out_dir: str | Path, *, root: str | Path = ".") -> Path:
    """Build the review site for the project at ``root`` into ``out_dir``; return the index page."""
    root = Path(root).resolve()
    out = Path(out_dir)
    out = (out if out.is_absolute() else Path.cwd() / out).resolve()
    site = _Site(root, out)
    nb_paths = [Path(os.path.relpath(Path(p).resolve(), root)) for p in notebooks]
    nb_pages = _notebooks(site, [root / p for p in nb_paths])
    nb_pages = {p: nb_pages[root / p] for p in nb_paths}
    campaigns = sorted(p for p in (root / "data/raw").iterdir() if (p / "campaign.json").exists()) \
        if (root / "data/raw").is_dir() else []
    machines = _machine_pages(site, campaigns)
    index = out / "index.html"
    rows, campaign_pages = [], {}
    for cdir in campaigns:
        page = campaign_pages[cdir.name] = _campaign_page(site, cdir, nb_pages)
        n = len([p for p in (cdir / "samples").glob("*") if not p.name.startswith(".")])
        rows.append(f"<tr><td>{site.link(page, index, cdir.name)}</td><td>{n}</td></tr>")
    body = (
        f"<p>Everything below is generated from the raw data by the pipeline. The paper: "
        f"{site.link(root / 'paper/main.pdf', index, 'paper/main.pdf')}. To check that no raw byte, processed "
        "table or generated output was altered, run <code>perflab verify</code> in the project; "
        "<code>perflab lineage FILE</code> prints how a figure or table was made.</p>"
        "<h2>Studies</h2>" + _studies(site, nb_pages, campaign_pages, index)
        + "<h2>Campaigns</h2>" + (f"<table><tr><th>campaign</th><th>samples</th></tr>{''.join(rows)}</table>"
                                  if rows else "<p>No campaign has raw data yet.</p>")
        + "<h2>Machines</h2><p>One page per distinct host fingerprint: "
        + (", ".join(site.link(p, index, ident) for ident, p in machines.items()) or "none recorded") + "</p>"
        + "<h2>Executed notebooks</h2><p>Each is the executed copy papermill kept as provenance.</p>"
        + _notebook_items(site, nb_pages, index))
    return atomic_text(index, _page("perflab review site", body, home=None))
