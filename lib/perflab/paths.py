"""Project paths: find the project root so notebooks run the same from JupyterLab and papermill."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from .errors import UserError

log = logging.getLogger(__name__)


class NoProjectError(UserError, FileNotFoundError):
    """The current directory is not inside a perflab project."""


def root(start: str | Path | None = None) -> Path:
    """The nearest directory at or above ``start`` (default: cwd) holding the ``Snakefile``."""
    here = Path(start or os.getcwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "Snakefile").exists():
            return candidate
    raise NoProjectError(f"no Snakefile in {here} or above; run from inside the perflab project")


def enter_root() -> Path:
    """Change to the project root (notebooks open in notebooks/) and return it."""
    top = root()
    os.chdir(top)
    return top


#: Where a notebook template opened by hand writes (ignored by git): never the pipeline's files.
SCRATCH = "scratch"
#: What the pipeline writes, relative to the project root: raw data, tidy tables, the paper's
#: generated files and the review site.
PIPELINE_OUTPUTS = ("data/raw", "data/processed", "paper", "reports")


def outputs(path: str, *, pipeline: bool) -> str:
    """Where a notebook template writes what the pipeline writes to ``path``.

    Run by the pipeline (papermill passes ``pipeline=True``), ``path`` itself. Opened by hand
    (the template's default ``pipeline = False``), a ``path`` at or under one of
    :data:`PIPELINE_OUTPUTS` becomes the same path under ``scratch/``, so a run in JupyterLab
    never overwrites raw data, tidy tables, the paper's files or the report; one line says where
    the outputs go. Any other directory (e.g. ``perflab verify --rebuild``'s scratch) is kept.
    """
    if pipeline:
        return path
    top = root()
    target = Path(path) if Path(path).is_absolute() else top / path
    try:
        rel = target.resolve().relative_to(top)
    except ValueError:
        return path
    if not any(rel == Path(p) or Path(p) in rel.parents for p in PIPELINE_OUTPUTS):
        return path
    moved = (Path(SCRATCH) / rel).as_posix()
    log.warning("opened by hand (pipeline = False): outputs for %s/ go to %s/ instead; the pipeline's files are "
                "left alone (`make reproduce` updates them)", rel.as_posix(), moved)
    return moved
