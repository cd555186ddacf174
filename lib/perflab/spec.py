"""Campaign files: YAML validated against a JSON schema, errors with file, line and field.

A campaign names one benchmark tool, the hosts that play its roles, the factors whose
levels are crossed into cells, and how the cells are repeated and ordered.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import jsonschema
import yaml

from . import tools

SCHEMA = json.loads(resources.files("perflab").joinpath("schemas/campaign.schema.json").read_text())
#: Columns of the tidy table that a factor must not shadow.
RESERVED = frozenset({"campaign", "run_id", "block", "position", "repetition", "warmup", "metric", "value",
                      "unit", "tool", "host", "source", "cell"})


class SpecError(ValueError):
    """A campaign file is invalid; ``str()`` is a list of ``file:line: field: problem`` lines."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path, self.problems = path, problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class Campaign:
    """A validated campaign, with the document it came from."""

    name: str
    tool: str
    params: Mapping[str, Any]
    hosts: Mapping[str, str]
    factors: Mapping[str, tuple]
    crossing: str
    repetitions: int
    warmups: int
    design: str
    seed: int
    timeout: float | None
    retries: int
    source: str
    doc: Mapping[str, Any] = field(repr=False)

    def digest(self) -> str:
        """SHA-256 of the campaign's canonical JSON: equal digests mean the same experiment."""
        return hashlib.sha256(json.dumps(self.doc, sort_keys=True).encode()).hexdigest()


def _line_map(node: yaml.Node, path: tuple = (), out: dict | None = None) -> dict[tuple, int]:
    """Map every path in a composed YAML document to its 1-based line number."""
    out = {} if out is None else out
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            out[path + (key.value,)] = key.start_mark.line + 1
            _line_map(value, path + (key.value,), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, path + (i,), out)
    return out


def _where(lines: dict[tuple, int], path: tuple) -> int:
    while path not in lines and path:
        path = path[:-1]
    return lines.get(path, 1)


def _explain(err: jsonschema.ValidationError) -> str:
    schema = err.schema if isinstance(err.schema, dict) else {}
    if err.validator == "enum":
        return f"got {err.instance!r}; allowed: {', '.join(map(repr, err.validator_value))}"
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed))
        return f"unknown field(s) {', '.join(map(repr, extra))}; allowed: {', '.join(allowed)}"
    hint = f" ({schema['description']})" if "description" in schema else ""
    return err.message + hint


def load(path: str | Path, *, text: str | None = None) -> Campaign:
    """Load and validate a campaign file; raise :class:`SpecError` listing every problem."""
    path = str(path)
    if text is None:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise SpecError(path, [f"{path}: cannot read campaign file: {exc.strerror}"]) from None
    try:
        node = yaml.compose(text)
        doc = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 1
        raise SpecError(path, [f"{path}:{line}: not valid YAML: {exc.problem}"]) from None
    if not isinstance(doc, dict):
        raise SpecError(path, [f"{path}:1: expected a mapping of campaign fields; found {type(doc).__name__}"])
    lines = _line_map(node)
    problems = []
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for err in sorted(validator.iter_errors(doc), key=lambda e: _where(lines, tuple(e.absolute_path))):
        where = ".".join(map(str, err.absolute_path)) or "(top level)"
        problems.append(f"{path}:{_where(lines, tuple(err.absolute_path))}: {where}: {_explain(err)}")
    if problems:
        raise SpecError(path, problems)
    problems += _semantic_problems(doc, lines, path)
    if problems:
        raise SpecError(path, problems)
    return Campaign(
        name=doc["campaign"], tool=doc["benchmark"]["tool"], params=doc["benchmark"].get("params", {}),
        hosts=doc["hosts"], factors={k: tuple(v) for k, v in doc["factors"].items()},
        crossing=doc.get("crossing", "grid"), repetitions=doc.get("repetitions", 40),
        warmups=doc.get("warmups", 1), design=doc.get("design", "rmit"), seed=doc.get("seed", 0),
        timeout=doc.get("timeout"), retries=doc.get("retries", 1), source=path, doc=doc,
    )


def _semantic_problems(doc: dict, lines: dict[tuple, int], path: str) -> list[str]:
    problems = []
    tool_name = doc["benchmark"]["tool"]
    try:
        tool = tools.get(tool_name)
    except KeyError as exc:
        return [f"{path}:{_where(lines, ('benchmark', 'tool'))}: benchmark.tool: {exc.args[0]}"]
    missing = [r for r in tool.roles if r not in doc["hosts"]]
    if missing:
        problems.append(f"{path}:{_where(lines, ('hosts',))}: hosts: tool {tool_name} needs role(s) "
                        f"{', '.join(missing)}; add e.g. `{missing[0]}: h1` under hosts")
    for name in doc["factors"]:
        if name in RESERVED:
            problems.append(f"{path}:{_where(lines, ('factors', name))}: factors.{name}: {name!r} is a reserved "
                            f"column name; rename the factor")
    if doc.get("crossing") == "zip" and len({len(v) for v in doc["factors"].values()}) > 1:
        problems.append(f"{path}:{_where(lines, ('crossing',))}: crossing: zip needs factors with equally "
                        f"many levels; found {', '.join(f'{k}={len(v)}' for k, v in doc['factors'].items())}")
    return problems
