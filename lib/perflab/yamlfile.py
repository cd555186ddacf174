"""YAML files: parsed once with YAML 1.2 booleans and unique keys, mapped to line numbers, checked against a JSON schema.

Every file kind perflab reads as YAML (campaigns, studies, labs) goes through :func:`read_yaml`;
its errors are ``file:line: field: problem`` lines.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Mapping

import yaml


def _import_jsonschema() -> Any:
    """jsonschema, imported without the optional libraries of its format checkers.

    The campaign schema asserts no ``format``, yet ``import jsonschema`` imports every
    format library it finds, and ``rfc3987_syntax`` compiles a grammar (~1.5 s, paid by every
    ``perflab`` command). They are hidden during this import only: other code still imports
    them, but jsonschema's format checkers in this process lack the formats they provide.
    """
    hidden = [name for name in ("fqdn", "idna", "rfc3987", "rfc3986_validator", "rfc3987_syntax",
                                "rfc3339_validator", "webcolors", "jsonpointer", "uri_template", "isoduration")
              if name not in sys.modules]
    sys.modules.update(dict.fromkeys(hidden))
    try:
        import jsonschema
    finally:
        for name in hidden:
            del sys.modules[name]
    return jsonschema


jsonschema = _import_jsonschema()


class _Loader(yaml.SafeLoader):
    """YAML 1.2 booleans: only true/false are booleans, so ``on:``, ``off``, ``yes`` and ``no`` stay strings."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))


def _unique_mapping(loader: _Loader, node: yaml.MappingNode) -> dict:
    """A mapping whose keys are unique (YAML 1.2 requires it; PyYAML would keep the last silently)."""
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`: merged keys may be overridden
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {seen[key]}); keep one", key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        except TypeError:
            raise yaml.constructor.ConstructorError(None, None, f"unhashable key {key!r}",
                                                    key_node.start_mark) from None
    return loader.construct_mapping(node, deep=True)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


if yaml.__with_libyaml__:
    class _FastLoader(yaml.cyaml.CParser, _Loader):
        """:class:`_Loader` on libyaml's parser, 10x faster (the Snakefile reads every campaign at start-up)."""

        def __init__(self, stream: str) -> None:
            yaml.cyaml.CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
else:
    _FastLoader = _Loader



class SpecError(ValueError):
    """A YAML file (campaign, study, lab ...) is invalid; ``str()`` is a list of ``file:line: field: problem`` lines."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path, self.problems = path, problems
        super().__init__("\n".join(problems))



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


def line_of(lines: Mapping[tuple, int], path: tuple) -> int:
    """The line of ``path`` in a file, or of its nearest enclosing field that has one (1 for none)."""
    while path not in lines and path:
        path = path[:-1]
    return lines.get(path, 1)


def _explain(err: jsonschema.ValidationError) -> str:
    """What a schema violation found and what was allowed, in words."""
    schema = err.schema if isinstance(err.schema, dict) else {}
    if err.validator == "enum":
        return f"got {err.instance!r}; allowed: {', '.join(map(repr, err.validator_value))}"
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed), key=repr)  # YAML keys may be true, 1, ...
        return f"unknown field(s) {', '.join(map(repr, extra))}; allowed: {', '.join(allowed)}"
    hint = f" ({schema['description']})" if "description" in schema else ""
    return err.message + hint


def _parse(loader_class: type, text: str) -> tuple[yaml.Node | None, Any]:
    """Parse ``text`` once: its node (for line numbers) and the document constructed from it."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        return node, None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def read_yaml(path: str | Path, schema: Mapping[str, Any], kind: str, *,
              text: str | None = None, formats: tuple[int, ...] | None = None) -> tuple[dict[str, Any], dict[tuple, int]]:
    """Read a YAML ``kind`` file (campaign, study, lab ...) and check it against ``schema``.

    Returns the document and a map from field paths to line numbers; raises
    :class:`SpecError` with one ``file:line: field: problem`` line per schema violation.
    With ``formats``, the file's ``format`` key (absent: the first of ``formats``) is checked
    first: a format this reader does not know is one line, before any schema noise.
    """
    path = str(path)
    if text is None:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise SpecError(path, [f"{path}: cannot read {kind} file: {exc.strerror}"]) from None
    try:
        try:
            node, doc = _parse(_FastLoader, text)
        except yaml.YAMLError:  # the pure-Python parser words the problem as users have seen it
            node, doc = _parse(_Loader, text)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 1
        raise SpecError(path, [f"{path}:{line}: not valid YAML: {exc.problem}"]) from None
    if not isinstance(doc, dict):
        raise SpecError(path, [f"{path}:1: expected a mapping of {kind} fields; found {type(doc).__name__}"])
    lines = _line_map(node)
    found = doc.get("format", formats[0]) if formats else None
    if formats and found not in formats:
        raise SpecError(path, [f"{path}:{line_of(lines, ('format',))}: format: {kind} format {found!r}; this perflab "
                               f"reads format {' or '.join(map(str, formats))}: write `format: {formats[-1]}` or use "
                               "the perflab that wrote the file"])
    problems = schema_problems(doc, schema, lines, path)
    if problems:
        raise SpecError(path, problems)
    return doc, lines


def schema_problems(doc: Any, schema: Mapping[str, Any], lines: Mapping[tuple, int], path: str) -> list[str]:
    """One ``file:line: field: problem`` line per violation of ``schema`` by ``doc``, in file order."""
    validator = jsonschema.Draft202012Validator(schema)
    out = []
    for err in sorted(validator.iter_errors(doc), key=lambda e: line_of(lines, tuple(e.absolute_path))):
        where = ".".join(map(str, err.absolute_path)) or "(top level)"
        out.append(f"{path}:{line_of(lines, tuple(err.absolute_path))}: {where}: {_explain(err)}")
    return out

