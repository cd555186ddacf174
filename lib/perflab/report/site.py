"""The HTML report: every executed notebook rendered with nbconvert, and an index page."""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Sequence

import nbformat
from nbconvert import HTMLExporter

from .. import __version__
from .lineage import atomic_text


def build(notebooks: Sequence[str | Path], out_dir: str | Path) -> Path:
    """Render ``notebooks`` to ``out_dir/html/`` and write ``out_dir/index.html``; return its path."""
    out = Path(out_dir)
    exporter = HTMLExporter()
    items = []
    for nb_path in map(Path, notebooks):
        nb = nbformat.read(nb_path, as_version=4)
        body, _ = exporter.from_notebook_node(nb)
        name = f"{nb_path.parent.name}-{nb_path.stem}.html" if nb_path.stem == "experiment" else f"{nb_path.stem}.html"
        atomic_text(out / "html" / name, body)
        meta = nb.metadata.get("papermill", {})
        params = ", ".join(f"{k}={v!r}" for k, v in (meta.get("parameters") or {}).items())
        items.append(f"<li><a href=\"html/{html.escape(name)}\">{html.escape(nb_path.as_posix())}</a>"
                     f"<br><small>run {html.escape(str(meta.get('start_time', '?')))[:19]}, "
                     f"{float(meta.get('duration') or 0):.1f} s; parameters: {html.escape(params)}</small></li>")
    page = (
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>perflab report</title>"
        "<style>body{font-family:serif;max-width:52em;margin:2em auto;line-height:1.4}li{margin:.6em 0}</style>"
        "</head><body><h1>perflab report</h1>"
        f"<p>Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by perflab {__version__}. "
        "The paper: <a href=\"../paper/main.pdf\">paper/main.pdf</a>. Each notebook below is the executed copy "
        "papermill kept as provenance.</p><h2>Executed notebooks</h2><ul>" + "".join(items) + "</ul></body></html>\n")
    return atomic_text(out / "index.html", page)
