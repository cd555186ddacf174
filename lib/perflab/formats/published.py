"""Published data (``data/raw/published/``): digitized tables and the claims CSVs, read as text.

Values are kept as the text the authors printed (``"0.30"`` has two decimals), so every
cell is a string and an empty cell is ``""``.

A claims CSV (``<study>-claims.csv``: one row per statement of the seed text) has the
columns every layout shares, ``claim`` (its id), ``line`` (in the seed text) and ``quote``,
and the columns its analysis reads (``docs/statistics.md``, ``docs/studies.md``).

Claims format history:

- 0 (no ``format`` column): the claims CSVs committed before the column existed (studies
  000, 002 and 003); read as format 1.
- 1: a first column ``format``, 1 on every row (study 004's file).

The ``format`` column is checked and left out of the table a reader gets. Committed files
are never rewritten: a format-0 file stays as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..files import atomic_write
from .versions import FormatError, migrate

if TYPE_CHECKING:  # pandas loads when a table is read, not when a campaign is planned
    import pandas as pd

#: The claims format this perflab writes.
CLAIMS_FORMAT = 1
#: Columns every claims CSV has.
CLAIM_CORE = ("claim", "line", "quote")
#: Format n -> n + 1 (format 0 differs only by the column).
CLAIMS_MIGRATIONS = {0: lambda doc: doc}


def read_table(path: str | Path) -> pd.DataFrame:
    """A published CSV with every cell as text (empty cells ``""``), its path in ``attrs["source"]``."""
    import pandas as pd
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    table.attrs["source"] = str(path)
    return table


def read_claims(path: str | Path) -> pd.DataFrame:
    """A claims CSV, its ``format`` checked and dropped, as text (:func:`read_table`).

    Raises :class:`FormatError` for a format this perflab does not read, a row whose format
    differs from the others', or a file without the columns :data:`CLAIM_CORE`."""
    claims = read_table(path)
    versions = sorted(set(claims["format"])) if "format" in claims.columns else ["0"]
    if len(versions) > 1:
        raise FormatError(f"{path}: column format: rows of formats {versions}; a claims file has one format, "
                          "write it on every row")
    text = versions[0] if versions else str(CLAIMS_FORMAT)
    version = int(text) if text.isdigit() else text
    migrate({}, path, "claims file", CLAIMS_FORMAT, CLAIMS_MIGRATIONS, version=version)
    missing = [c for c in CLAIM_CORE if c not in claims.columns]
    if missing:
        raise FormatError(f"{path}: a claims file has the columns {', '.join(CLAIM_CORE)}; missing "
                          f"{', '.join(missing)}. Add them (docs/studies.md)")
    return claims.drop(columns=["format"], errors="ignore")


def claims_text(claims: pd.DataFrame) -> str:
    """``claims`` as the CSV text of format :data:`CLAIMS_FORMAT` (the ``format`` column first)."""
    import pandas as pd
    return pd.concat([pd.DataFrame({"format": [str(CLAIMS_FORMAT)] * len(claims)}, index=claims.index),
                      claims.drop(columns=["format"], errors="ignore")], axis=1).to_csv(index=False)


def write_claims(path: str | Path, claims: pd.DataFrame) -> Path:
    """Write ``claims`` to ``path`` (atomically) as format :data:`CLAIMS_FORMAT`."""
    return atomic_write(path, claims_text(claims))
