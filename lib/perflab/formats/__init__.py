"""File formats: one module per kind of file perflab writes or reads, each with its ``format``.

Every module names its format version, reads with a check (a version it does not know is
refused with the file and what to do, :mod:`.versions`), migrates older versions on reading
(the file on disk is never rewritten) and writes through :func:`perflab.files.atomic_write`.
No other module parses a project file (``tests/test_architecture.py`` holds the rule).

- :mod:`.records`: raw records (``campaign.json``, a sample's ``meta.json``, ledger events,
  gaps, ``verify/`` records).
- :mod:`.fingerprints`: host fingerprints (``blocks/<n>/fingerprint-*.json``).
- :mod:`.claims`: the published claims CSVs (``data/raw/published/<study>-claims.csv``).
- :mod:`.versions`: the version check, migrations and JSON every reader shares.
"""
