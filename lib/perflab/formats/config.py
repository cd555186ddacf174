"""The project's configuration (``config/config.yaml``): what the pipeline is given (Snakemake reads it as its
``configfile``) and the title page's ``author``, ``institution`` and ``degree``.

It carries no ``format``: Snakemake reads it too, and its keys are the pipeline's
(``docs/pipeline.md``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def read(path: str | Path) -> dict[str, Any]:
    """The configuration at ``path`` (empty when the file is missing or empty)."""
    path = Path(path)
    doc = yaml.safe_load(path.read_text()) if path.exists() else {}
    return doc or {}
