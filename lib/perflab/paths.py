"""Project paths: find the project root so notebooks run the same from JupyterLab and papermill."""

from __future__ import annotations

import os
from pathlib import Path


def root(start: str | Path | None = None) -> Path:
    """The nearest directory at or above ``start`` (default: cwd) holding the ``Snakefile``."""
    here = Path(start or os.getcwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "Snakefile").exists():
            return candidate
    raise FileNotFoundError(f"no Snakefile in {here} or above; run from inside the perflab project")


def enter_root() -> Path:
    """Change to the project root (notebooks open in notebooks/) and return it."""
    top = root()
    os.chdir(top)
    return top
