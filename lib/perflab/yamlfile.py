"""Reading the YAML files users write (campaigns, lab files, inventories, study declarations, config), safely.

Every file kind is read here, with YAML 1.2 booleans (``on:``, ``yes`` stay strings) and
unique keys, and with limits checked before anything is built: the file's size, NUL bytes,
nesting depth (counted on the parser's event stream, so linear in the file) and the number
of nodes the document has once its aliases are expanded (an alias bomb is refused, not
expanded). A file that breaks a limit or is not YAML is a one-line error naming the file
and line; the document comes with a map from field paths to line numbers, so later errors
name the line too. :func:`read_yaml` also checks a JSON schema (:func:`schema_problems`): a key the
schema does not know is reported at its own line with the nearest valid name.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Mapping

import yaml

from .errors import FileError

#: Largest YAML file read (bytes); the largest campaign of the studies is under 10 KiB.
MAX_BYTES = 4 << 20
#: Deepest nesting of mappings and sequences; campaigns nest about 6 deep.
MAX_DEPTH = 64
#: Most nodes a document may have with its aliases expanded (what a reader walking it would see).
MAX_NODES = 200_000


class YamlFileError(FileError):
    """A YAML file cannot be read, is not YAML, or breaks a limit; one ``file:line: problem`` line."""


class YamlSyntaxError(YamlFileError):
    """A file within the limits that is not YAML (which a reader of several formats may try as another)."""


class SpecError(YamlFileError, ValueError):
    """A YAML file (campaign, study, lab ...) is invalid; ``str()`` is a list of ``file:line: field: problem`` lines."""


def _import_jsonschema() -> Any:
    """jsonschema, imported without the optional libraries of its format checkers.

    The schemas assert no ``format``, yet ``import jsonschema`` imports every format library
    it finds, and ``rfc3987_syntax`` compiles a grammar (~1.5 s, paid by every ``perflab``
    command). They are hidden during this import only: other code still imports them, but
    jsonschema's format checkers in this process lack the formats they provide.
    """
    hidden = [name for name in ("fqdn", "idna", "rfc3987", "rfc3986_validator", "rfc3987_syntax",
                                "rfc3339_validator", "webcolors", "jsonpointer", "uri_template", "isoduration")
              if name not in sys.modules]
    sys.modules.update(dict.fromkeys(hidden))  # type: ignore[arg-type]  # None: "not importable"
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

_FastLoader: type[_Loader]
if yaml.__with_libyaml__:
    class _CLoader(yaml.cyaml.CParser, _Loader):  # type: ignore[misc,name-defined]
        """:class:`_Loader` on libyaml's parser, 10x faster (the Snakefile reads every campaign at start-up)."""

        def __init__(self, stream: str) -> None:
            yaml.cyaml.CParser.__init__(self, stream)  # type: ignore[attr-defined]
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    _FastLoader = _CLoader
else:
    _FastLoader = _Loader


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


def _check_limits(loader_class: type, text: str, path: str) -> None:
    """Walk the parser's events once: refuse nesting deeper than :data:`MAX_DEPTH` and more than
    :data:`MAX_NODES` nodes with aliases expanded, before any node is built."""
    loader = loader_class(text)
    sizes: dict[str, int] = {}  # anchor -> its node's expanded size
    open_: list[list] = []  # per open collection: [anchor, expanded size so far]
    total = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent, yaml.CollectionStartEvent)):
                if isinstance(event, yaml.AliasEvent):
                    size = sizes.get(event.anchor or "", 1)
                else:
                    size = 1
                total += size
                line = event.start_mark.line + 1 if event.start_mark else 1
                if total > MAX_NODES:
                    raise YamlFileError(path, [f"{path}:{line}: more than {MAX_NODES} nodes with aliases expanded "
                                               "(an alias bomb or a huge list); split the file or write it plainly"])
                if isinstance(event, yaml.CollectionStartEvent):
                    if len(open_) >= MAX_DEPTH:
                        raise YamlFileError(path, [f"{path}:{line}: nested deeper than {MAX_DEPTH} levels; "
                                                   "flatten the document"])
                    open_.append([event.anchor, 1])
                    continue
                if open_:
                    open_[-1][1] += size
                if isinstance(event, yaml.ScalarEvent) and event.anchor:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, size = open_.pop()
                if anchor:
                    sizes[anchor] = size
                if open_:
                    open_[-1][1] += size
    finally:
        loader.dispose()


def _parse(loader_class: type, text: str) -> tuple[yaml.Node | None, Any]:
    """Parse ``text`` once: its node (for line numbers) and the document constructed from it."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        return node, None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def load(path: str | Path, kind: str, *, text: str | None = None) -> tuple[Any, dict[tuple, int]]:
    """Read the YAML ``kind`` file ``path`` (or ``text`` given for it) within the limits; the document and its lines.

    Raises :class:`YamlFileError` (one line naming file and line) for a file that cannot be
    read, is too large, holds a NUL byte, is not YAML, nests too deep or expands too far.
    """
    path = str(path)
    if text is None:
        try:
            size = Path(path).stat().st_size
            if size > MAX_BYTES:
                raise YamlFileError(path, [f"{path}: {size} bytes, more than the {MAX_BYTES} allowed in "
                                           f"{kind} files; is it the right file?"])
            text = Path(path).read_text()
        except OSError as exc:
            raise YamlFileError(path, [f"{path}: cannot read {kind} file: {exc.strerror}"]) from None
        except UnicodeDecodeError as exc:
            raise YamlFileError(path, [f"{path}: byte {exc.start} is not UTF-8 text; {kind} files are text"]) from None
    if len(text) > MAX_BYTES:
        raise YamlFileError(path, [f"{path}: {len(text)} characters, more than the {MAX_BYTES} allowed "
                                   f"in {kind} files; is it the right file?"])
    if "\0" in text:
        line = text.count("\n", 0, text.index("\0")) + 1
        raise YamlFileError(path, [f"{path}:{line}: a NUL byte; {kind} files are text, remove it"])
    try:
        try:
            _check_limits(_FastLoader, text, path)
            node, doc = _parse(_FastLoader, text)
        except yaml.YAMLError:  # the pure-Python parser words the problem as users have seen it
            _check_limits(_Loader, text, path)
            node, doc = _parse(_Loader, text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise YamlSyntaxError(path, [f"{path}:{line}: not valid YAML: {exc.problem or exc.context}"]) from None
    except yaml.YAMLError as exc:  # a reader error: a character YAML does not allow
        raise YamlSyntaxError(path, [f"{path}: not valid YAML: {exc}"]) from None
    except RecursionError:  # not reached within MAX_DEPTH; kept so that no input can show a traceback
        raise YamlFileError(path, [f"{path}: nested too deep to read; flatten the document"]) from None
    except ValueError:  # an integer of more digits than Python converts (sys.get_int_max_str_digits())
        digits = re.search(r"\d{%d,}" % (sys.get_int_max_str_digits() + 1), text)
        line = text.count("\n", 0, digits.start()) + 1 if digits else 1
        raise YamlFileError(path, [f"{path}:{line}: a number of more than {sys.get_int_max_str_digits()} digits; "
                                   "write a number of sensible size"]) from None
    return doc, ({} if node is None else _line_map(node))


#: How many names a message lists when none of them is close to a misspelled one (the rest are counted).
LISTED = 8


def nearest(name: object, names: Iterable[str]) -> str | None:
    """The one of ``names`` closest to the misspelled ``name`` (difflib's similarity of at least 0.7: one letter
    wrong, missing or added in a name of four or more), or None."""
    close = difflib.get_close_matches(str(name), [str(n) for n in names], n=1, cutoff=0.7)
    return close[0] if close else None


def did_you_mean(name: object, names: Iterable[str]) -> str:
    """What to write instead of the unknown ``name``: "did you mean 'repetitions'?" for the nearest of ``names``,
    else the names themselves, briefly (the first :data:`LISTED` in their order, the rest counted)."""
    names = [str(n) for n in names]
    if (close := nearest(name, names)) is not None:
        return f"did you mean {close!r}?"
    if not names:
        return "remove it"
    more = f", ... ({len(names)} in all)" if len(names) > LISTED else ""
    return f"remove it or use one of {', '.join(names[:LISTED])}{more}"


def _explain(err: Any) -> str:
    schema = err.schema if isinstance(err.schema, dict) else {}
    if err.validator == "enum":
        return f"got {err.instance!r}; allowed: {', '.join(map(repr, err.validator_value))}"
    hint = f" ({schema['description']})" if "description" in schema else ""
    return str(err.message) + hint


def _unknown_keys(err: Any) -> list[Any]:
    """The keys an ``additionalProperties: false`` error is about (none for any other error)."""
    schema = err.schema if isinstance(err.schema, dict) else {}
    if err.validator != "additionalProperties" or err.validator_value is not False or not isinstance(err.instance, dict):
        return []
    patterns = list(schema.get("patternProperties", {}))
    return [key for key in err.instance if key not in schema.get("properties", {})
            and not (isinstance(key, str) and any(re.search(p, key) for p in patterns))]


def _key_line(lines: Mapping[tuple, int], where: tuple, key: Any) -> int:
    """The line of the key ``key`` of the mapping at ``where`` (the mapping's line when the key is not found)."""
    for written in (key, str(key), str(key).lower()):  # YAML keys may be true, 1, ...: the map holds them as written
        if where + (written,) in lines:
            return lines[where + (written,)]
    return line_of(lines, where)


def schema_problems(doc: Any, schema: Mapping[str, Any], lines: Mapping[tuple, int], path: str) -> list[str]:
    """One ``file:line: field: problem`` line per violation of ``schema`` by ``doc``, in file order.

    A key the schema does not allow is reported at its own line with the nearest allowed name
    (:func:`did_you_mean`); a key of the wrong form (``propertyNames``) at its own line too.
    """
    validator = jsonschema.Draft202012Validator(schema)
    found: list[tuple[int, str]] = []
    for err in validator.iter_errors(doc):
        where = tuple(err.absolute_path)
        keys = _unknown_keys(err)
        if keys:
            allowed = list(err.schema.get("properties", {}))
            for key in keys:
                at = _key_line(lines, where, key)
                found.append((at, f"{path}:{at}: {'.'.join(map(str, (*where, key)))}: unknown field; "
                                  f"{did_you_mean(key, allowed)}"))
            continue
        line = line_of(lines, where)
        if "propertyNames" in err.absolute_schema_path:  # the error is about a key: name it, at its line
            line, where = _key_line(lines, where, err.instance), (*where, err.instance)
        found.append((line, f"{path}:{line}: {'.'.join(map(str, where)) or '(top level)'}: {_explain(err)}"))
    return [text for _, text in sorted(found, key=lambda item: item[0])]


def format_problem(doc: Mapping[str, Any], lines: Mapping[tuple, int], path: str, kind: str,
                   formats: Collection[int], *, required: bool = True) -> str | None:
    """The problem with a document's ``format`` (the version of its file format), or None when it is one of ``formats``.

    Every file kind and record carries ``format``; a reader names the file, says what it
    found and which versions it reads. Unless ``required``, a document without ``format`` is
    of the first of ``formats`` (campaigns written before the key existed).
    """
    if "format" not in doc:
        if not required:
            return None
        return (f"{path}:1: format: missing; {kind} files start with `format: {max(formats)}` (the version of "
                "their format); add that line")
    found = doc["format"]
    if isinstance(found, bool) or found not in formats:
        return (f"{path}:{line_of(lines, ('format',))}: format: {kind} format {found!r}; this perflab reads format "
                f"{' or '.join(map(str, sorted(formats)))}: write `format: {max(formats)}` or use the perflab that "
                "wrote the file")
    return None


def read_yaml(path: str | Path, schema: Mapping[str, Any], kind: str, *, text: str | None = None,
              formats: Collection[int] = (), format_required: bool = False,
              error: Callable[[str, list[str]], Exception] | None = None) -> tuple[dict[str, Any], dict[tuple, int]]:
    """Read a YAML ``kind`` file (campaign, study, lab ...) with :func:`load` and check it against ``schema``.

    With ``formats``, the file's ``format`` is checked first: one of them, or absent when not
    ``format_required`` (then it is the first). Returns the document and a map from field
    paths to line numbers; raises ``error(path, problems)`` (default :class:`SpecError`) with
    one ``file:line: field: problem`` line per problem.
    """
    error = error or SpecError
    path = str(path)
    try:
        doc, lines = load(path, kind, text=text)
    except YamlFileError as exc:
        raise error(path, exc.problems) from None
    if not isinstance(doc, dict):
        raise error(path, [f"{path}:1: expected a mapping of {kind} fields; found {type(doc).__name__}"])
    if formats and (problem := format_problem(doc, lines, path, kind, formats, required=format_required)):
        raise error(path, [problem])
    problems = schema_problems(doc, schema, lines, path)
    if problems:
        raise error(path, problems)
    return doc, lines
