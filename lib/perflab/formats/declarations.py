"""What users write in YAML (campaigns, lab files, inventories, study declarations): each kind's name, the
``format`` versions read and its JSON schema, read by the one loader, :func:`perflab.yamlfile.read_yaml`
(limits, line numbers, schema, ``format``).

Each kind's format history is in its document (``docs/campaigns.md``, ``docs/lab.md``,
``docs/studies.md``, ``docs/inventory.md``); what a document means is checked by its module
(:mod:`perflab.campaign`, :mod:`perflab.labspec`, :mod:`perflab.inventory`, :mod:`perflab.study`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from ..yamlfile import read_yaml


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """The JSON schema ``schemas/<name>.schema.json`` of the package."""
    return json.loads(resources.files("perflab").joinpath(f"schemas/{name}.schema.json").read_text())


@dataclass(frozen=True)
class Kind:
    """A kind of YAML file users write: its name (as messages say it), the format versions read, its schema and
    whether a file must state its ``format`` (else a file without it is format 1)."""

    name: str
    formats: frozenset[int]
    schema_name: str | None = None
    format_required: bool = False

    def schema(self) -> dict[str, Any]:
        """The kind's JSON schema (an empty one when it has none)."""
        return schema(self.schema_name) if self.schema_name else {}

    def read(self, path: str | Path, *, text: str | None = None,
             error: Callable[[str, list[str]], Exception] | None = None) -> tuple[dict[str, Any], dict[tuple, int]]:
        """Read a file of this kind through the one YAML loader: its document and the line of each key path."""
        return read_yaml(path, self.schema(), self.name, text=text, formats=self.formats,
                         format_required=self.format_required, error=error)


CAMPAIGN = Kind("campaign", frozenset({1}), "campaign")
LAB = Kind("lab", frozenset({1}), "lab", format_required=True)
STUDY = Kind("study", frozenset({1}), "study", format_required=True)
#: Perflab's inventories (Ansible's carry no ``format``, read as they are by :mod:`perflab.inventory`).
INVENTORY = Kind("inventory", frozenset({1}))
