"""Notebook templates' parameter contracts: what each ``notebooks/*.ipynb`` accepts, declared in its metadata.

A template's ``metadata.perflab.parameters`` maps each parameter of its ``parameters`` cell
to ``type`` (one of :data:`TYPES`, or a list of them), ``default`` (the cell's value),
``required`` (the pipeline or the study must give it) and ``doc`` (a sentence). A study
declaration's analysis is checked against it when the study is loaded (``perflab studies
list``, ``snakemake -n``, the pipeline) and by ``perflab plan`` of a campaign the study
declares: an unknown parameter is refused with the nearest declared name, a value of another
type with the declared one. The declarations mirror the
parameters cell (``tests/test_templates.py`` fails when they drift apart).

A parameter is data, never code: papermill writes each value into the notebook as Python
source, and only JSON's types (text, numbers, booleans, null, lists and mappings with text
keys) are written as literals. Any other value YAML can build (``!!binary`` bytes, a
``!!set``, a date or timestamp, ``!!omap`` pairs, ``.nan``) is refused at any depth
(:func:`not_data`), before a notebook sees it.
"""

from __future__ import annotations

import ast
import datetime
import io
import math
import tokenize
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from .formats import notebooks
from .yamlfile import did_you_mean

#: Declared type -> the Python types a value of it may have (YAML gives these).
TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
                                      "list": (list,), "mapping": (dict,), "null": (type(None),),
                                      "any": (object,)}


def parameters_cell(notebook: Mapping[str, Any]) -> str:
    """The source of a notebook's cell tagged ``parameters`` (papermill's convention); empty when it has none."""
    for cell in notebook.get("cells", []):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            return "".join(cell["source"])
    return ""


def from_cell(source: str) -> dict[str, tuple[Any, str]]:
    """Each ``name = literal  # comment`` of a parameters cell: name -> (default, comment), in order."""
    comments = {tok.start[0]: tok.string.lstrip("# ").strip()
                for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT}
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = (ast.literal_eval(node.value), comments.get(node.lineno, ""))
    return out


_PLAIN = "is not plain data (text, a finite number, true/false, null, or a list or mapping of those)"


def _kind(value: Any) -> str:
    """What a value that is not plain data is, as its YAML author wrote it, and what to write instead."""
    if isinstance(value, (bytes, bytearray)):
        return f"a !!binary value (bytes) {_PLAIN}; write text"
    if isinstance(value, (set, frozenset)):
        return f"a !!set {_PLAIN}; write a list"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return f"a date or timestamp ({value.isoformat()}) {_PLAIN}; quote it to give it as text"
    if isinstance(value, tuple):
        return f"an !!omap or !!pairs entry {_PLAIN}; write a mapping"
    if isinstance(value, float):
        return f"{value} {_PLAIN}; write a number"
    return f"a {type(value).__name__} {_PLAIN}"


def not_data(value: Any, where: tuple = ()) -> tuple[tuple, str] | None:
    """The first part of ``value`` that is not plain JSON data, as (path below ``where``, what it is); None when
    all of it is: text, finite numbers, booleans, null, lists of those and mappings of text keys to those."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (where, _kind(value))
    if isinstance(value, list):
        return next((found for i, item in enumerate(value) if (found := not_data(item, (*where, i)))), None)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return (*where, key), f"the key {key!r} is not text; quote it"
            if found := not_data(item, (*where, key)):
                return found
        return None
    return where, _kind(value)


def papermill_yaml(parameters: Mapping[str, Any]) -> str:
    """``parameters`` as the one-line YAML of papermill's ``-y`` option (the pipeline's papermill call); ValueError
    for a value that is not plain data (:func:`not_data`), which papermill would write as code."""
    if found := not_data(dict(parameters)):
        raise ValueError(f"notebook parameter {'.'.join(map(str, found[0]))}: {found[1]}")
    return yaml.safe_dump(dict(parameters), default_flow_style=True, width=1 << 20).strip()


def type_of(value: Any) -> str:
    """The declared type name of a default value."""
    if isinstance(value, bool):
        return "boolean"
    for name in ("integer", "number", "string", "list", "mapping", "null"):
        if isinstance(value, TYPES[name]):
            return name
    return "any"


def _fits(value: Any, types: str | list[str]) -> bool:
    names = [types] if isinstance(types, str) else types
    for name in names:
        if name == "any" or (isinstance(value, TYPES[name]) and not (isinstance(value, bool) and name != "boolean")):
            return True
    return False


def declared(meta: Mapping[str, Any]) -> dict[str, dict[str, Any]] | None:
    """A template's declared parameters (from ``metadata.perflab``), or None when it declares none."""
    params = meta.get("parameters")
    return params if isinstance(params, dict) else None


def problems(template: str, meta: Mapping[str, Any], given: Mapping[str, Any],
             at: Callable[..., str]) -> list[str]:
    """One line per parameter in ``given`` that template ``template`` does not declare or declares another type for,
    or that is not plain data (:func:`not_data`).

    ``at(name, *path)`` is the location of a parameter or a part of it (``file:line: analyses.N.parameters.name``).
    """
    params = declared(meta)
    if params is None:
        return [f"{at('')}: template {template} declares no parameters (metadata perflab.parameters); declare them "
                "(docs/studies.md)"]
    out = []
    for name, value in given.items():
        spec = params.get(str(name))
        found = not_data(value)
        if found:
            out.append(f"{at(str(name), *found[0])}: {found[1]}")
        elif spec is None:
            out.append(f"{at(str(name))}: template {template} has no parameter {name!r}; {did_you_mean(name, params)}")
        elif not _fits(value, spec["type"]):
            types = spec["type"] if isinstance(spec["type"], str) else " or ".join(spec["type"])
            out.append(f"{at(str(name))}: template {template} expects {types} ({spec['doc']}); found {value!r}")
    return out


def declaration(notebook: str | Path) -> dict[str, dict[str, Any]]:
    """The declaration a template's parameters cell implies, keeping the types and ``required`` it already declares.

    A new parameter gets the type of its default and its comment as ``doc``; an existing
    declaration keeps its (possibly wider) type and its ``required``.
    """
    nb = notebooks.read(notebook)
    old = declared(nb.get("metadata", {}).get("perflab", {})) or {}
    out = {}
    for name, (default, comment) in from_cell(parameters_cell(nb)).items():
        before = old.get(name, {})
        out[name] = {"type": before.get("type", type_of(default)), "default": default,
                     "required": before.get("required", False), "doc": comment or before.get("doc", "")}
    return out
