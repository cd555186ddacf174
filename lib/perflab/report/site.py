"""The review site: static HTML a reviewer reads without running anything, and can copy on its own.

``reports/index.html`` links to a page per declared study (its campaigns, published data,
analyses and chapter, from ``studies/*/study.yaml``), per campaign, per machine (a distinct
host fingerprint, named by host name and the date it was first seen), and to every executed
notebook rendered by nbconvert. A campaign page shows what the study declarations say was
made from it (each analysis reading it: figures, tables as HTML, notebook), how it was
measured (:func:`perflab.evidence.sentence`: its window, overlaps, contention), its lineage with
links down to raw files and manifests, the fingerprint differences between and within
blocks, whether the raw files still match the manifest, and links to the raw samples, the
manifest, the processed table (Parquet; its CSV mirror only when asked: ``csv``) and every lineage sidecar.

Every file a page links to is copied into ``<out>/files/`` under its project path, and so is every
file a shown manifest lists (a campaign's raw data, the published data), whole, so that
``sha256sum -c MANIFEST.sha256`` passes in the copy as it does in ``data/raw/``. Raw files are copies,
never links to the committed ones. The notebook pages carry no scripts, so the site
works when ``reports/`` is copied on its own (``file://`` or any static web server).
:func:`footprint` measures it against the raw data (``perflab report`` prints both).

The site stays in its folder: every page and copy it writes resolves inside ``<out>``
(:meth:`_Site.target`), a name from data (a host in a fingerprint, a campaign, a
notebook) is made a safe file name (:func:`page_name`) before it becomes a path, and a
file is published only when it resolves inside the project and, for raw data, inside its own
campaign directory (:meth:`_Site.source`: a symbolic link out of it is named, not
followed). A notebook's HTML passes an allow-list sanitizer (``nh3``, :func:`sanitize`):
no script, event handler or ``javascript:`` URL survives. A search page (``search.html``, a static index in
``search-index.js``, no external library) finds studies, campaigns, machines and figures.
"""

from __future__ import annotations

import functools
import html
import json
import os
import re
import shutil
import stat
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Sequence

import nbformat
import nh3
from nbconvert import HTMLExporter

from .. import __version__, campaign, evidence, store, study as study_mod, verify
from ..campaign import values as campaign_values
from ..errors import UserError
from ..formats import fingerprints, records
from . import macros, texhtml
from .lineage import atomic_text, chain, fingerprint_id

#: Sample directories listed per campaign page before the list is cut short.
MAX_SAMPLES = 500
#: Where the copies of linked project files go, under the site directory.
FILES_DIR = "files"

_CSS = ("body{font-family:Georgia,serif;max-width:62em;margin:2em auto;padding:0 1em;line-height:1.45;color:#222}"
        "h1,h2,h3{font-family:Helvetica,Arial,sans-serif}nav{font-size:.9em;margin-bottom:1em;display:flex;"
        "justify-content:space-between;gap:1em}nav form{margin:0}"
        "img{max-width:100%;border:1px solid #ddd}figure{margin:1.5em 0}figcaption{font-size:.9em}"
        "table{border-collapse:collapse;font-size:.9em;margin:.5em 0}td,th{border-bottom:1px solid #ddd;"
        "padding:.2em .6em;text-align:left;vertical-align:top}table.tex th{border-bottom:2px solid #444;"
        "vertical-align:bottom}table.tex td{font-variant-numeric:tabular-nums}"
        "pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:.8em}.note{font-size:.85em;color:#333}"
        "footer{margin-top:2em}.ok{color:#1a7f37}.bad{color:#b42318;font-weight:bold}small{color:#555}"
        "#results li{margin:.3em 0}")

_SEARCH_JS = """// perflab review site search: a static index (search-index.js), no external library.
(function () {
  var params = new URLSearchParams(window.location.search);
  var query = (params.get("q") || "").trim().toLowerCase();
  var box = document.getElementById("q");
  var list = document.getElementById("results");
  var count = document.getElementById("count");
  if (box) { box.value = params.get("q") || ""; }
  if (!query || !list) { return; }
  var words = query.split(/\\s+/);
  var hits = (window.PERFLAB_SEARCH || []).filter(function (item) {
    var text = (item.title + " " + item.kind + " " + item.text).toLowerCase();
    return words.every(function (w) { return text.indexOf(w) >= 0; });
  });
  count.textContent = hits.length + " result" + (hits.length === 1 ? "" : "s") + " for \\u201c" + query + "\\u201d";
  hits.forEach(function (item) {
    var li = document.createElement("li");
    var a = document.createElement("a");
    a.href = item.url; a.textContent = item.title;
    var kind = document.createElement("small");
    var text = item.text.length > 160 ? item.text.slice(0, 160).replace(/\\s+\\S*$/, "") + " \\u2026" : item.text;
    kind.textContent = " (" + item.kind + ") " + text;
    li.appendChild(a); li.appendChild(kind); list.appendChild(li);
  });
})();
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def page_name(text: str) -> str:
    """``text`` (a host, campaign or notebook name from data) as a file name: letters, digits, ``_`` and ``-``,
    every other run of characters ``-`` (``../../escape/PWN`` -> ``escape-PWN``)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "unnamed"


@dataclass
class _Machine:
    """One distinct host fingerprint: its identity (host and facts' hash), label and page, and where it was seen."""

    ident: str
    host: str
    #: How a reader names it: host name and the date its fingerprint was first collected (and the time,
    #: when the host had several fingerprints that day).
    label: str
    page: Path
    uses: list[tuple[Path, dict]] = field(default_factory=list)
    campaigns: set[str] = field(default_factory=set)


class _Site:
    """Paths and links of one site build: ``root`` is the project, ``out`` the site directory.

    Links to project files go to their copies under ``out/files/``; :meth:`copy` makes the
    copies once every page is written. ``studies`` are the project's declared studies (empty,
    with ``study_error`` set, when the declarations do not load).
    """

    def __init__(self, root: Path, out: Path, csv: bool = False) -> None:
        self.root, self.out, self.csv = root, out, csv
        try:
            self.studies = study_mod.discover(root) if (root / study_mod.STUDIES_DIR).is_dir() else []
            self.study_error = ""
        except study_mod.StudyError as exc:
            self.studies, self.study_error = [], str(exc)
        self.copied: set[Path] = set()
        self.search: list[dict[str, str]] = []
        #: The paper's inline values (``\\plv`` keys), which generated tables may print.
        self.values = macros.read(sorted((root / "paper/macros").glob("*.tex")))

    def target(self, path: Path) -> Path:
        """``path``, a file the site writes, once it is known to resolve inside ``out`` (else :class:`UserError`)."""
        if not Path(os.path.normpath(path)).is_relative_to(self.out) or not path.resolve().is_relative_to(self.out):
            raise UserError(f"{path} resolves outside the site directory {self.out} (a symbolic link in it?); "
                            "nothing is written there: remove the link or the directory and rerun perflab report")
        return path

    def named(self, kind: str, name: str) -> Path:
        """The page of a study, campaign or machine ``name`` (from data: :func:`page_name`) under ``out/kind/``."""
        return self.out / kind / f"{page_name(name)}.html"

    def source(self, target: Path) -> Path | None:
        """``target``'s path relative to the project when it may be published, else None: it must resolve inside
        the project, and a file under ``data/raw/<dir>/`` inside that directory (a symbolic link in a campaign's
        raw data is not followed out of the campaign)."""
        full = target if target.is_absolute() else self.root / target
        lexical = Path(os.path.normpath(full))
        if not lexical.is_relative_to(self.root) or lexical == self.root:
            return None
        rel, real = lexical.relative_to(self.root), full.resolve()
        home = self.root / Path(*rel.parts[:3]) if rel.parts[:2] == ("data", "raw") and len(rel.parts) > 3 \
            else self.root
        return rel if real.is_relative_to(home.resolve()) else None

    def href(self, target: Path, page: Path) -> str | None:
        """The relative URL from ``page`` (under ``out``) to ``target`` (absolute, or relative to the project);
        None for a project file that may not be published (:meth:`source`)."""
        target = target if target.is_absolute() else self.root / target
        if not Path(os.path.normpath(target)).is_relative_to(self.out):
            rel = self.source(target)
            if rel is None:
                return None
            self.copied.add(rel)
            target = self.out / FILES_DIR / rel
        return Path(os.path.relpath(target, page.parent)).as_posix()

    def link(self, target: Path, page: Path, text: str | None = None) -> str:
        """An ``<a>`` from ``page`` to ``target``; its text alone, marked, when ``target`` may not be published."""
        url = self.href(target, page)
        if url is None:
            return (f"{_e(text or target.name)} <small class=\"bad\">(not published: outside the project, or a "
                    "symbolic link out of its campaign)</small>")
        return f"<a href=\"{_e(url)}\">{_e(text or target.name)}</a>"

    def whole(self, directory: Path, names: Iterable[str]) -> list[str]:
        """Publish every file ``names`` (a manifest's paths, relative to ``directory``) lists, linked from a page
        or not, so that the copy of ``directory`` is whole; return the names that may not be published."""
        left = []
        for name in names:
            rel = self.source(directory / name)
            if rel is None or not (self.root / rel).is_file():
                left.append(name)
            else:
                self.copied.add(rel)
        return left

    def links(self, targets: Iterable[Path], page: Path) -> str:
        """Links to the existing ``targets``, comma-separated (or a dash)."""
        found = [self.link(t, page) for t in targets if (self.root / t).exists()]
        return ", ".join(found) or "&ndash;"

    def index(self, title: str, kind: str, page: Path, text: str = "") -> None:
        """Add a page (or an anchor on it) to the search index."""
        self.search.append({"title": title, "kind": kind, "text": text,
                            "url": Path(os.path.relpath(page, self.out)).as_posix()})

    def page(self, path: Path, title: str, body: str) -> Path:
        """Write a site page at ``path`` with the navigation bar (index link, search box)."""
        home = Path(os.path.relpath(self.out / "index.html", path.parent)).as_posix()
        search = Path(os.path.relpath(self.out / "search.html", path.parent)).as_posix()
        back = "<span></span>" if path == self.out / "index.html" else f"<a href=\"{_e(home)}\">&larr; review site index</a>"
        nav = (f"<nav>{back}<form action=\"{_e(search)}\">"
               "<input id=\"q\" name=\"q\" type=\"search\" placeholder=\"search studies, campaigns, figures\" "
               "size=\"32\"> <button>Search</button></form></nav>")
        return atomic_text(self.target(path), f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                                 f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>{nav}"
                                 f"<h1>{_e(title)}</h1>{body}<footer><small>perflab {_e(__version__)}, "
                                 f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}</small></footer>"
                                 "</body></html>\n")

    def copy(self) -> int:
        """Copy every published project file into ``out/files/`` (unchanged copies are kept); remove stale copies."""
        base = self.out / FILES_DIR
        for rel in sorted(self.copied):
            src, dst = self.root / rel, base / rel
            if self.source(src) != rel or not src.is_file():  # checked again: the file may have changed since
                continue
            self.target(dst)
            if dst.is_file() and dst.stat().st_size == src.stat().st_size and \
                    dst.stat().st_mtime_ns == src.stat().st_mtime_ns:
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.unlink(missing_ok=True)
            shutil.copy2(src, dst)
        if base.is_dir():
            for path in sorted(base.rglob("*"), reverse=True):
                if path.is_symlink() or (path.is_file() and path.relative_to(base) not in self.copied):
                    path.unlink()
                elif path.is_dir() and not any(path.iterdir()):
                    path.rmdir()
        return len(self.copied)


def footprint(path: Path) -> tuple[int, int]:
    """The bytes and number of the regular files under ``path`` (symbolic links not followed), counted as a copy
    of it elsewhere would hold them."""
    size = count = 0
    for folder, _, names in os.walk(path):
        for name in names:
            st = os.lstat(os.path.join(folder, name))
            if stat.S_ISREG(st.st_mode):
                size, count = size + st.st_size, count + 1
    return size, count


#: The site's size budget: its bytes over the committed raw data's (``perflab report`` warns above it).
MAX_RATIO = 1.5


def size_note(out: Path, raw: Path) -> tuple[str, str]:
    """The line ``perflab report`` prints about the site at ``out`` against the raw data at ``raw`` (both
    :func:`footprint`), and a warning naming the site's three largest parts when it is over :data:`MAX_RATIO` times
    the raw data (else an empty string)."""
    size, files = footprint(out)
    raw_size, raw_files = footprint(raw) if raw.is_dir() else (0, 0)
    ratio = f"{size / raw_size:.2f} x" if raw_size else "no"
    line = (f"site: {size / 1e6:,.1f} MB in {files:,} files, {ratio} the raw data (data/raw: {raw_size / 1e6:,.1f} MB "
            f"in {raw_files:,} files); a copy of it elsewhere holds that much")
    if not raw_size or size <= MAX_RATIO * raw_size:
        return line, ""
    parts = sorted(((footprint(p)[0], f"{p.name}/") if p.is_dir() else (p.lstat().st_size, p.name)
                    for p in out.iterdir()), reverse=True)
    largest = ", ".join(f"{name} {part / 1e6:,.1f} MB" for part, name in parts[:3])
    return line, (f"warning: the site is {size / raw_size:.2f} x the raw data, over its budget of {MAX_RATIO} x "
                  f"(docs/report.md); its largest parts: {largest}. It is complete and true; it is heavier to "
                  "hand over than it should be")


#: The media types an image embedded in a notebook page may have (a ``data:`` URL of another type is removed).
_IMAGE_DATA = re.compile(r"^data:image/(?:png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*$")
#: The style properties an element of a notebook output may set (pandas' tables set a few); no ``url()``.
_STYLE_PROPERTIES = {"text-align", "vertical-align", "white-space", "font-weight", "font-style", "color",
                     "background-color", "border", "border-collapse", "padding", "margin", "width", "max-width",
                     "height", "display"}


def _attribute(tag: str, name: str, value: str) -> str | None:
    """nh3's attribute filter: an image's ``src`` only as an embedded PNG, JPEG or GIF, no other ``data:`` URL."""
    if tag == "img" and name == "src":
        return value if _IMAGE_DATA.match(value) else None
    return None if value.strip().lower().startswith("data:") else value


def sanitize(fragment: str) -> str:
    """An HTML fragment (a notebook page's body) through an allow-list: nh3's default tags and attributes plus
    ``class``, ``id`` and safe ``style`` properties, images only embedded; no script, ``<style>``, event handler
    (``onerror``, ``onload`` ...), form or ``javascript:`` URL is kept."""
    return nh3.clean(fragment, attributes={**{tag: set(names) for tag, names in nh3.ALLOWED_ATTRIBUTES.items()},
                                           "*": {"class", "id", "style", "title", "lang"}},
                     attribute_filter=_attribute, url_schemes=set(nh3.ALLOWED_URL_SCHEMES) | {"data"},
                     filter_style_properties=_STYLE_PROPERTIES)


#: The notebook pages' shared stylesheet (nbconvert's ``lab`` styles, about 260 kB), under ``out/html/``: written once,
#: not inlined in every page.
NOTEBOOK_CSS = "notebook.css"


@functools.cache
def _notebook_frame() -> tuple[str, str]:
    """The styles (the ``<style>`` blocks' text) and the ``<body>`` tag of nbconvert's ``lab`` page, taken from an
    empty notebook (the template's, no data's)."""
    page, _ = HTMLExporter(template_name="lab").from_notebook_node(nbformat.v4.new_notebook())
    body = re.search(r"<body[^>]*>", page, re.I)
    return "\n".join(re.findall(r"<style[^>]*>(.*?)</style>", page, re.S | re.I)), body[0] if body else "<body>"


def _notebooks(site: _Site, notebooks: Sequence[Path]) -> dict[Path, Path]:
    """Render each executed notebook (relative to the project) to ``out/html/``; return notebook -> page.

    nbconvert's page loads require.js and MathJax from the network; the site's copy has no
    scripts (outputs are images and text), so it reads the same offline. The page's body
    passes :func:`sanitize`; its styles are the template's (:func:`_notebook_frame`), in one stylesheet
    (:data:`NOTEBOOK_CSS`) every page links.
    """
    exporter, pages = HTMLExporter(template_name="lab", embed_images=True), {}
    style, body_tag = _notebook_frame()
    if notebooks:
        atomic_text(site.target(site.out / "html" / NOTEBOOK_CSS), style)
    for nb_path in notebooks:
        nb = nbformat.read(site.root / nb_path, as_version=4)
        body, _ = exporter.from_notebook_node(nb)
        found = re.search(r"<body[^>]*>(.*)</body>", body, re.S | re.I)
        name = f"{nb_path.parent.name}-{nb_path.stem}" if nb_path.stem == "experiment" else nb_path.stem
        page = site.out / "html" / f"{page_name(name)}.html"
        home = Path(os.path.relpath(site.out / "index.html", page.parent)).as_posix()
        back = f"<p style=\"padding:.5em 1em\"><a href=\"{_e(home)}\">&larr; review site index</a></p>"
        pages[nb_path] = atomic_text(site.target(page), (
            f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(nb_path.as_posix())}</title>"
            f"<link rel=\"stylesheet\" href=\"{NOTEBOOK_CSS}\"></head>{body_tag}{back}"
            f"{sanitize(found[1] if found else body)}</body></html>\n"))
        site.index(nb_path.as_posix(), "notebook", page, "executed notebook")
    return pages


def _notebook_items(site: _Site, pages: dict[Path, Path], page: Path) -> str:
    items = []
    for nb_path, html_page in pages.items():
        meta = nbformat.read(site.root / nb_path, as_version=4).metadata.get("papermill", {})
        params = ", ".join(f"{k}={v!r}" for k, v in (meta.get("parameters") or {}).items())
        items.append(f"<li>{site.link(html_page, page, nb_path.as_posix())} "
                     f"({site.link(nb_path, page, 'ipynb')})"
                     f"<br><small>run {_e(str(meta.get('start_time', '?'))[:19])}, "
                     f"{float(meta.get('duration') or 0):.1f} s; parameters: {_e(params)}</small></li>")
    return "<ul>" + "".join(items) + "</ul>" if items else "<p>No executed notebook in this build.</p>"


def _records(cdir: Path, pattern: str) -> list[Path]:
    """The files of campaign ``cdir`` matching ``pattern`` that resolve inside it (a link out of it is not read)."""
    home = cdir.resolve()
    return [p for p in sorted(cdir.glob(pattern)) if p.resolve().is_relative_to(home) and p.is_file()]


def _fingerprints(cdir: Path) -> list[tuple[str, dict]]:
    """(path relative to the campaign, fingerprint) of every stored host fingerprint."""
    return [(p.relative_to(cdir).as_posix(), fingerprints.read(p))
            for p in _records(cdir, "blocks/*/fingerprint-*.json")]


def _differences(site: _Site, cdir: Path, page: Path) -> str:
    rows = []
    for path in sorted(_records(cdir, "blocks/*/differences*.json"), key=lambda p: (int(p.parent.name), p.name)
                       if p.parent.name.isdigit() else (0, p.name)):
        record = fingerprints.read_differences(path)
        block = site.link(path, page, f"block {record.get('block')}")
        for kind in ("since_previous_block", "changed", "between_hosts_before", "between_hosts_after"):
            for d in record.get(kind, []):
                rows.append(f"<tr><td>{block}</td>"
                            f"<td>{_e(kind.replace('_', ' '))}</td><td>{_e(', '.join(d.get('hosts', [])))}</td>"
                            f"<td><code>{_e(d.get('key'))}</code></td><td>{_e(d.get('before'))}</td>"
                            f"<td>{_e(d.get('after'))}</td></tr>")
    if not rows:
        n = len(_records(cdir, "blocks/*/differences*.json"))
        return f"<p>No fingerprint differences in {n} compared block(s).</p>"
    return ("<table><tr><th>block</th><th>kind</th><th>hosts</th><th>fact</th><th>before / first host</th>"
            "<th>after / second host</th></tr>" + "".join(rows) + "</table>")


_TOKEN = re.compile(r"\bhost (?P<host>[\w.-]+-[0-9a-f]{12})\b|(?<![\w/.-])(?P<path>(?:[\w.+-]+/)+[\w.+-]*[\w+-])")


def _lineage(site: _Site, output: Path, page: Path, machines: dict[str, _Machine]) -> str:
    """The ``perflab lineage`` chain of a generated file, folded, with every path and host linked."""
    try:
        lines = chain(output.relative_to(site.root), site.root)
    except (FileNotFoundError, ValueError, KeyError, json.JSONDecodeError):
        return ""

    def token(m: re.Match) -> str:
        if m.group("host"):
            machine = machines.get(m.group("host"))
            return "host " + (site.link(machine.page, page, machine.label) if machine else _e(m.group("host")))
        full = site.root / m.group("path")
        if site.source(full) is None:  # outside the project (a parameter's text, say): named, never opened
            return _e(m.group("path"))
        if full.is_dir() and (full / store.MANIFEST).exists():
            return site.link(full / store.MANIFEST, page, m.group("path"))
        return site.link(full, page, m.group("path")) if full.is_file() else _e(m.group("path"))

    out = []
    for line in lines:
        last, parts = 0, []
        for m in _TOKEN.finditer(line):
            parts += [_e(line[last:m.start()]), token(m)]
            last = m.end()
        out.append("".join(parts) + _e(line[last:]))
    return f"<details><summary>how it was made (lineage)</summary><pre>{chr(10).join(out)}</pre></details>"


def _tables_html(site: _Site, tex: Path, page: Path) -> str:
    """A generated table file as HTML tables with their captions and notes (the LaTeX source folded below)."""
    found = texhtml.tables(macros.resolve(tex.read_text(), site.values))
    shown = "".join(f"<figure><figcaption>{t.caption}</figcaption>{t.table}"
                    + (f"<p class=\"note\">{t.note}</p>" if t.note else "") + "</figure>" for t in found)
    return (shown or "<p>(no tabular found)</p>") + \
        f"<details><summary>LaTeX source as included in the paper</summary><pre>{_e(tex.read_text())}</pre></details>"


def _outputs(site: _Site, analysis: study_mod.Analysis, page: Path, machines: dict[str, _Machine]) -> str:
    """What one declared analysis made: its figure, tables, inline values, each with links and lineage."""
    parts = []
    outputs = {k: site.root / v for k, v in analysis.outputs.items() if k != "notebook"}
    for png in outputs.values():
        if png.suffix != ".png" or not png.exists():
            continue
        stem, url = png.with_suffix(""), site.href(png, page)
        if url is None:
            continue
        parts.append(f"<figure><img src=\"{_e(url)}\" alt=\"figure {_e(stem.name)}\">"
                     f"<figcaption>{_e(stem.name)}: "
                     f"{site.links([stem.with_suffix('.pdf'), png, stem.with_name(stem.name + '.lineage.json')], page)}"
                     f"</figcaption>{_lineage(site, png, page, machines)}</figure>")
        site.index(f"figure {stem.name}", "figure", page,
                   f"{analysis.study} {analysis.campaign or ''} {analysis.parameters.get('caption', '')}")
    for tex in outputs.values():
        if tex.suffix != ".tex" or not tex.exists() or tex.parent.name != "tables":
            continue
        parts.append(f"<h4>Table {_e(tex.stem)} &mdash; {site.links([tex, tex.with_name(f'{tex.stem}.lineage.json')], page)}"
                     f"</h4>{_tables_html(site, tex, page)}{_lineage(site, tex, page, machines)}")
    macros = [p for p in outputs.values() if p.suffix == ".tex" and p.parent.name == "macros" and p.exists()]
    if macros:
        parts.append("<p>Inline values: " + site.links(
            [p for m in macros for p in (m, m.with_name(f"{m.stem}.lineage.json"))], page) + "</p>")
    return "".join(parts) or "<p>No figure or table yet: run the pipeline (<code>make reproduce</code>).</p>"


def _analysis_section(site: _Site, a: study_mod.Analysis, nb_pages: dict[Path, Path], page: Path,
                      machines: dict[str, _Machine], level: str = "h3") -> str:
    nb = Path(a.outputs["notebook"])
    reads = ", ".join(site.link(site.named("campaigns", c), page, c)
                      if (site.root / "data/raw" / c / "campaign.json").exists() else _e(c) for c in a.reads)
    return (f"<{level} id=\"{_e(a.name)}\">{_e(a.name)}</{level}><p><small>template {_e(a.notebook)}"
            + (f"; reads {reads}" if reads else "") + "</small></p>"
            + _notebook_items(site, {nb: nb_pages[nb]} if nb in nb_pages else {}, page)
            + _outputs(site, a, page, machines))


def _sample_files(site: _Site, sample: Path, page: Path) -> str:
    """Links to a sample directory's files, grouped by their folder in it (``monitors/h1: cgroup-after.txt, ...``), so
    that files of the same name on several hosts are told apart."""
    folders: dict[str, list[Path]] = {}
    for f in sorted(sample.rglob("*")):
        if f.is_file():
            folders.setdefault(f.parent.relative_to(sample).as_posix(), []).append(f.relative_to(site.root))
    return "; ".join(("" if folder == "." else f"{_e(folder)}: ") + site.links(files, page)
                     for folder, files in sorted(folders.items(), key=lambda item: (item[0] != ".", item[0])))


def _steal_table(row: dict) -> str:
    """The steal during a campaign's samples, for the campaign and per cell (:func:`perflab.evidence.site_rows`)."""
    if not row.get("steal"):
        return ""
    lines = [("all samples", row["steal"]), *((row["cell_words"][cell] if cell else "(one cell)", spread)
                                              for cell, spread in row["steal_cells"].items())]
    body = "".join(f"<tr><td>{_e(name)}</td><td>{s['n']}</td>"
                   + "".join(f"<td>{100 * s[k]:.1f}</td>" for k in ("median", "p90", "max")) + "</tr>"
                   for name, s in lines)
    bound = "" if row.get("steal_bound") is None else f" The gate's bound: {row['steal_bound']:g} %."
    return (f"<p>Steal (the CPU time the hypervisor took from this machine) during the samples, in percent.{bound}"
            "</p><table><tr><th>cell</th><th>samples</th><th>median</th><th>p90</th><th>max</th></tr>"
            f"{body}</table>")


def _campaign_page(site: _Site, cdir: Path, nb_pages: dict[Path, Path], owner: study_mod.Study | None,
                   machines: dict[str, _Machine], measured: dict | None) -> Path:
    name = cdir.name
    page = site.named("campaigns", name)
    spec = records.read_campaign(cdir / "campaign.json").spec
    manifest = store.read_manifest(cdir)
    problems = store.verify(cdir) + [f"{n}: not published here (a symbolic link out of its campaign, or not a "
                                     "file), so the copy below lacks it" for n in site.whole(cdir, manifest)]
    status = (f"<p class=\"ok\">All {len(manifest):,} raw files match {site.link(cdir / store.MANIFEST, page)}, "
              f"and this site holds a copy of each: <code>cd {_e(FILES_DIR)}/data/raw/{_e(name)} &amp;&amp; "
              f"sha256sum -c --quiet {store.MANIFEST}</code> in the site's folder checks it.</p>"
              if not problems else f"<p class=\"bad\">{len(problems)} raw file(s) do not match "
              f"{site.link(cdir / store.MANIFEST, page)}:</p><ul>"
              + "".join(f"<li>{_e(p)}</li>" for p in problems) + "</ul>")
    factors = "; ".join(f"{_e(k)}: {_e(', '.join(str(campaign_values.label(level)) for level in v))}"
                        for k, v in spec.get("factors", {}).items())
    analyses = [a for s in site.studies for a in s.analyses if name in a.reads]
    samples = sorted(p for p in (cdir / "samples").iterdir() if not p.name.startswith(".")) \
        if (cdir / "samples").is_dir() else []
    failed = sorted(p for p in (cdir / "failed").iterdir() if not p.name.startswith(".")) \
        if (cdir / "failed").is_dir() else []
    sample_rows = "".join(f"<tr><td>{_e(s.name)}</td><td>{_sample_files(site, s, page)}</td></tr>"
                          for s in [*samples[:MAX_SAMPLES], *failed[:MAX_SAMPLES]])
    more = f"<p>{len(samples) - MAX_SAMPLES} more samples are in the directory.</p>" if len(samples) > MAX_SAMPLES else ""
    used = sorted((m for m in machines.values() if name in m.campaigns), key=lambda m: m.label)
    processed = site.root / "data/processed"
    experiment = {p: v for p, v in nb_pages.items() if p == cdir.relative_to(site.root) / "experiment.ipynb"}
    declared = (f"<p>Declared by study {site.link(site.named('studies', owner.id), page, owner.id)} "
                f"({_e(owner.title)}).</p>" if owner else
                "<p class=\"bad\">No study declares this campaign (<code>studies/*/study.yaml</code>).</p>")
    body = (
        declared + f"<p>Tool <b>{_e(spec.get('benchmark', {}).get('tool', '?'))}</b>, design "
        f"<b>{_e(spec.get('design', campaign.DEFAULT_DESIGN))}</b>, factors {factors or '&ndash;'}; "
        f"{len(samples)} samples stored, {len(failed)} failed attempts kept as evidence.</p>{status}"
        + (f"<h2>How it was measured</h2><p>{_e(measured['sentence'])}</p>{_steal_table(measured)}" if measured else "")
        + "<h2>Analyses made from this campaign</h2>"
        + ("<p>As the study declarations say: each analysis that reads this campaign, its executed notebook "
           "(the description, the tests chosen and why, and the assumption checks), figures and tables.</p>"
           + "".join(_analysis_section(site, a, nb_pages, page, machines) for a in analyses)
           if analyses else "<p>The study declarations name no analysis of this campaign.</p>")
        + "<h2>Experiment</h2>" + _notebook_items(site, experiment, page)
        + "<h2>Machines</h2><p>" + (", ".join(site.link(m.page, page, m.label) for m in used) or "none recorded")
        + "</p>" + _differences(site, cdir, page)
        + "<h2>Processed data</h2><p>" + site.links(
            [processed / f"{name}{ext}" for ext in (".parquet", *((".csv",) if site.csv else ()), ".quarantine.csv",
                                                    ".lineage.json")], page)
        + "</p><h2>Raw data</h2><p>" + site.links(
            [cdir / n for n in (store.MANIFEST, "campaign.json", "ledger.jsonl", "experiment.ipynb")], page)
        + f"</p><p>Ledger hash chain: <code>{_e(verify.head(cdir))}</code> (<code>perflab verify</code> checks "
          f"the chain and prints its head).</p>{more}<table><tr><th>sample</th><th>files</th></tr>{sample_rows}</table>")
    site.index(f"campaign {name}", "campaign", page,
               f"{owner.id if owner else ''} {spec.get('benchmark', {}).get('tool', '')} {factors}")
    return site.page(page, f"Campaign {name}", body)


def _machines(site: _Site, campaigns: Sequence[Path]) -> dict[str, _Machine]:
    """Every distinct fingerprint, named by host and first date (``h1-2026-11-22``), and by the time of day too
    when the host had several that day (``h1-2026-11-22-1405``)."""
    seen: dict[str, list[tuple[Path, dict]]] = defaultdict(list)
    for cdir in campaigns:
        for rel, fp in _fingerprints(cdir):
            seen[fingerprint_id(fp)].append((cdir / rel, fp))
    first = {ident: min(str(fp.get("collected_at", "?")) for _, fp in uses) for ident, uses in seen.items()}
    host = {ident: str(uses[0][1].get("host", "unknown")) for ident, uses in seen.items()}
    per_day: dict[tuple[str, str], int] = defaultdict(int)
    for ident in seen:
        per_day[host[ident], first[ident][:10]] += 1
    machines: dict[str, _Machine] = {}
    taken: dict[str, int] = defaultdict(int)
    for ident in sorted(seen, key=lambda i: (first[i], i)):
        date, clock = first[ident][:10], first[ident][11:16]
        several = per_day[host[ident], date] > 1 and len(clock) == 5
        name = page_name(f"{host[ident]}-{date}" + (f"-{clock.replace(':', '')}" if several else ""))
        label = f"{host[ident]}, {date}" + (f" {clock}" if several else "")
        taken[name] += 1
        if taken[name] > 1:  # several fingerprints of the host in the same minute
            name, label = f"{name}-{taken[name]}", f"{label} ({taken[name]})"
        machines[ident] = _Machine(ident, host[ident], label, site.named("machines", name), seen[ident],
                                   {p.relative_to(site.root / "data/raw").parts[0] for p, _ in seen[ident]})
    return machines


def _when(stamp: str) -> str:
    """A fingerprint's ISO time stamp as a reader reads it, to the second in UTC (``2026-11-26 03:23:42 UTC``); a
    stamp that does not parse as it is."""
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    return (moment.astimezone(timezone.utc) if moment.tzinfo else moment).strftime("%Y-%m-%d %H:%M:%S UTC")


def _machine_pages(site: _Site, machines: dict[str, _Machine]) -> None:
    for m in machines.values():
        page, fp = m.page, m.uses[0][1]
        first_seen = _when(min(str(f.get("collected_at", "?")) for _, f in m.uses))
        facts = "".join(f"<tr><td><code>{_e(k)}</code></td><td>"
                        + ("<small>not recorded</small>" if v is None else _e(v)) + "</td></tr>"
                        for k, v in sorted(fp.get("facts", {}).items()))
        versions = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in sorted(fp.get("versions", {}).items()))
        where = "".join(f"<li>{site.link(path, page, path.relative_to(site.root / 'data/raw').as_posix())} "
                        f"<small>collected {_e(_when(str(f.get('collected_at', '?'))))}</small></li>" for path, f in m.uses)
        used = ", ".join(site.link(site.named("campaigns", c), page, c) for c in sorted(m.campaigns))
        body = (f"<p>Host <b>{_e(m.host)}</b> ({_e(fp.get('address', '?'))}), first fingerprinted on {_e(first_seen)}. "
                f"Every block run on a machine with identical facts links here (fingerprint <code>{_e(m.ident)}"
                f"</code>, the SHA-256 of its facts).</p><h2>Campaigns run on it</h2><p>{used}</p>"
                f"<h2>Facts</h2><table>{facts}</table><h2>Tool versions</h2>"
                f"<table>{versions or '<tr><td>none recorded</td></tr>'}</table>"
                f"<h2>Fingerprints with these facts ({len(m.uses)})</h2><ul>{where}</ul>")
        site.index(f"machine {m.label}", "machine", page, f"{m.host} {fp.get('facts', {}).get('cpu.model', '')} "
                   + " ".join(sorted(m.campaigns)))
        site.page(page, f"Machine {m.label}", body)


def _studies(site: _Site, nb_pages: dict[Path, Path], campaign_pages: dict[str, Path], index: Path,
             machines: dict[str, _Machine]) -> str:
    """A page per declared study (studies/*/study.yaml); returns the index section linking them."""
    if site.study_error:
        return f"<p class=\"bad\">The study declarations do not load: {_e(site.study_error)}</p>"
    if not site.studies:
        return "<p>None declared.</p>"
    pub = site.root / study_mod.PUBLISHED_DIR
    problems = store.verify(pub) + [f"{n}: not published here, so the copy lacks it"
                                    for n in site.whole(pub, store.read_manifest(pub))] \
        if (pub / store.MANIFEST).exists() else [f"no {store.MANIFEST}"]
    items = []
    for s in site.studies:
        page = site.named("studies", s.id)
        status = ""
        if s.published:
            status = (f"<p class=\"ok\">All published files match {site.link(pub / store.MANIFEST, page)}.</p>"
                      if not problems else "<p class=\"bad\">" + _e("; ".join(problems)) + "</p>")
        origin = sorted(p for p in pub.glob(f"{s.id}-ORIGIN.md")) or ([pub / "ORIGIN.md"] if s.published else [])
        runs = "".join(f"<li>{site.link(campaign_pages[c.id], page, c.id) if c.id in campaign_pages else _e(c.id)}"
                       f" ({site.link(site.root / c.file, page, c.file)}"
                       f"{'' if c.id in campaign_pages else '; not measured yet'}"
                       f"{f'; {_e(c.role)}: decides no question' if c.role else ''})</li>" for c in s.campaigns)
        analyses = "".join(_analysis_section(site, a, nb_pages, page, machines) for a in s.analyses)
        body = (f"<p>Declared in {site.link(site.root / s.declaration, page, s.declaration)}"
                + (f"; source: <code>{_e(s.source)}</code>" if s.source else "")
                + (f"; chapter {site.link(site.root / s.chapter, page, s.chapter)}" if s.chapter else "")
                + ".</p><h2>Campaigns</h2>" + (f"<ul>{runs}</ul>" if runs else "<p>None.</p>")
                + "<h2>Published data (digitized)</h2>"
                + (status + f"<p>{site.links([site.root / f for f in s.published] + origin, page)}</p>"
                   if s.published else "<p>None.</p>")
                + "<h2>Analyses</h2>" + (analyses or "<p>None.</p>"))
        site.index(f"study {s.id}", "study", page, f"{s.title} " + " ".join(c.id for c in s.campaigns)
                   + " " + " ".join(a.name for a in s.analyses))
        site.page(page, f"Study {s.id}: {s.title}", body)
        items.append(f"<li>{site.link(page, index, s.id)}: {_e(s.title)}"
                     f"{' (demonstration)' if s.demo else ''}</li>")
    return "<ul>" + "".join(items) + "</ul>"


def _search_page(site: _Site) -> Path:
    """``search.html`` with the static index ``search-index.js`` and the script ``search.js``."""
    items = {(i["kind"], i["title"]): i for i in reversed(site.search)}  # a figure on two pages: its first
    atomic_text(site.target(site.out / "search-index.js"), "window.PERFLAB_SEARCH = "
                + json.dumps([items[k] for k in sorted(items)], indent=0) + ";\n")
    atomic_text(site.target(site.out / "search.js"), _SEARCH_JS)
    body = ("<p id=\"count\">Type words in the box above: every study, campaign, machine, figure and notebook "
            "whose name or description holds all of them is listed.</p><ul id=\"results\"></ul>"
            "<script src=\"search-index.js\"></script><script src=\"search.js\"></script>")
    return site.page(site.out / "search.html", "Search the review site", body)


def build(notebooks: Sequence[str | Path], out_dir: str | Path, *, root: str | Path = ".", csv: bool = False) -> Path:
    """Build the review site for the project at ``root`` into ``out_dir``; return the index page. The processed
    tables are shipped as Parquet; with ``csv`` their CSV mirrors (``perflab tidy --csv``) too, where they exist."""
    root = Path(root).resolve()
    out = Path(out_dir)
    out = (out if out.is_absolute() else Path.cwd() / out).resolve()
    site = _Site(root, out, csv)
    nb_pages = _notebooks(site, [Path(os.path.relpath(Path(p).resolve(), root)) for p in notebooks])
    campaigns = sorted(p for p in (root / "data/raw").iterdir() if (p / "campaign.json").exists()) \
        if (root / "data/raw").is_dir() else []
    machines = _machines(site, campaigns)
    _machine_pages(site, machines)
    owners = {c.id: s for s in site.studies for c in s.campaigns}
    measured = {row["campaign"]: row for row in evidence.site_rows(evidence.collect(root / "data/raw", root))}
    index = out / "index.html"
    rows, campaign_pages = [], {}
    for cdir in campaigns:
        page = campaign_pages[cdir.name] = _campaign_page(site, cdir, nb_pages, owners.get(cdir.name), machines,
                                                          measured.get(cdir.name))
        n = len([p for p in (cdir / "samples").glob("*") if not p.name.startswith(".")])
        owner = owners.get(cdir.name)
        rows.append(f"<tr><td>{site.link(page, index, cdir.name)}</td><td>{n}</td><td>"
                    + (site.link(site.named("studies", owner.id), index, owner.id) if owner else "&ndash;")
                    + "</td></tr>")
    paper = root / "paper/main.pdf"
    machine_rows = "".join(f"<tr><td>{site.link(m.page, index, m.label)}</td><td>"
                           + ", ".join(site.link(site.named("campaigns", c), index, c) for c in sorted(m.campaigns))
                           + "</td></tr>" for m in sorted(machines.values(), key=lambda m: m.label))
    body = (
        "<p>Everything below is generated from the raw data by the pipeline; every file linked here is a copy "
        "under <code>files/</code>, so this directory can be read on its own. The paper: "
        + (site.link(paper, index, "paper/main.pdf") if paper.exists() else "not built yet (<code>make reproduce</code>)")
        + ". To check that no raw byte, processed table or generated output was altered, run "
          "<code>perflab verify</code> in the project; <code>perflab lineage FILE</code> prints how a figure or "
          "table was made.</p>"
        "<h2>Studies</h2>" + _studies(site, nb_pages, campaign_pages, index, machines)
        + "<h2>Campaigns</h2>" + (f"<table><tr><th>campaign</th><th>samples</th><th>study</th></tr>{''.join(rows)}"
                                  "</table>" if rows else "<p>No campaign has raw data yet.</p>")
        + "<h2>Machines</h2><p>One page per distinct host fingerprint, named by host and the date it was first "
          "collected.</p>" + (f"<table><tr><th>machine</th><th>campaigns</th></tr>{machine_rows}</table>"
                              if machine_rows else "<p>None recorded.</p>")
        + "<h2>Executed notebooks</h2><p>Each is the executed copy papermill kept as provenance.</p>"
        + _notebook_items(site, nb_pages, index))
    _search_page(site)
    site.page(index, "perflab review site", body)
    site.copy()
    return index
