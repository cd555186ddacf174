"""What users write in YAML (campaigns, lab files, inventories, study declarations, config): one loader,
:func:`perflab.yamlfile.read_yaml` (limits, line numbers, schema, ``format``), and here their JSON schemas.

Each kind's ``format`` versions sit beside its reader (``FORMATS`` in :mod:`perflab.campaign`,
:mod:`perflab.labspec`, :mod:`perflab.inventory`, :mod:`perflab.study`) and its history in its
document (``docs/campaigns.md``, ``docs/lab.md``, ``docs/studies.md``).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any


def schema(kind: str) -> dict[str, Any]:
    """The JSON schema of a declaration ``kind`` (``campaign``, ``lab``, ``study``: ``schemas/<kind>.schema.json``)."""
    return json.loads(resources.files("perflab").joinpath(f"schemas/{kind}.schema.json").read_text())
