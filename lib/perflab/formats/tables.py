"""Data tables: the tidy table (``data/processed/<campaign>.parquet``, its CSV mirror) and tables given on the
command line, read by extension.

The tidy table is written by :func:`perflab.tidy.write` (its columns: ``docs/campaigns.md``,
its parsers' versions in ``parser_version``, its provenance in its lineage record,
:mod:`.lineage`). A CSV is read with pandas' type inference, as the table was typed when
written.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd


def load_parquet(path: str | Path) -> pd.DataFrame:
    """The Parquet table at ``path``."""
    return pd.read_parquet(path)


def load_csv(source: str | Path | bytes) -> pd.DataFrame:
    """The CSV table at ``source`` (a path, or the CSV's bytes), typed by pandas' inference."""
    return pd.read_csv(io.BytesIO(source) if isinstance(source, bytes) else source)


def load(path: str | Path) -> pd.DataFrame:
    """A CSV or Parquet table, by the extension of ``path``."""
    return load_parquet(path) if Path(path).suffix == ".parquet" else load_csv(path)
