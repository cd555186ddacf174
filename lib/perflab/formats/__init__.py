"""File formats: one module per kind of file perflab writes or reads, each with its ``format``.

Every module names its format version, reads with a check (a version it does not know is
refused with the file and what to do, :mod:`.versions`), migrates older versions on reading
(the file on disk is never rewritten) and writes through :func:`perflab.files.atomic_write`.
No other module parses a project file (``tests/test_architecture.py`` holds the rule).

- :mod:`.records`: raw records (``campaign.json``, a sample's ``meta.json``, ledger events,
  gaps, ``verify/`` records).
- :mod:`.fingerprints`: host fingerprints and a block's differences (``blocks/<n>/``).
- :mod:`.quiet`: the quiet gate's record before a block.
- :mod:`.questions`: the frozen questions record (``questions.json``).
- :mod:`.published`: published tables and the claims CSVs (``data/raw/published/``).
- :mod:`.tables`: the tidy table and tables given on the command line.
- :mod:`.lineage`: lineage sidecars (``*.lineage.json``).
- :mod:`.findings`: verify findings (path apart from problem).
- :mod:`.declarations`: what users write in YAML (campaigns, lab files, inventories, study
  declarations), read by the one YAML loader (:mod:`perflab.yamlfile`).
- :mod:`.config`, :mod:`.notebooks`, :mod:`.labstate`, :mod:`.locks`, :mod:`.crate`: the
  project configuration, notebook templates, a lab's state file, lock files, an RO-Crate's
  metadata.
- :mod:`.versions`: the version check, migrations and JSON every reader shares
  (``load_json(path, kind, current, migrations)``, asv's ``load_json``/``update_json`` idea).
"""
