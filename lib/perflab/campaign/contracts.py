"""A campaign against its contracts: the tool's declared parameters, factors that something uses, safe values.

Every name a campaign sets (``benchmark.params``, a plain factor, what a labelled level, a
phase or a host sets) is a parameter the tool declares (``tools.base.Param``) or a
placeholder some command uses; every factor is used by the tool, a command, a service's or
neighbour's ``cells`` or a link. A value reaches a command line only as one token of the
safe alphabet (:func:`is_safe`): a number, a word, a size, an address, a relative path, or an
absolute path under one of the campaign's ``scratch`` locations. A name the campaign lists
under ``text`` may hold any text; it reaches commands only as the environment variable
``PERFLAB_<NAME>`` (:func:`env_name`), never as a placeholder. A parameter or option that
runs a program is refused unless the campaign lists it under ``programs``, and a path a
tool writes stays relative (the sample's working directory) or inside ``scratch``.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterator, Mapping

from .values import (ABSOLUTE_PATH, NUMBER, PLACEHOLDER, READABLE_DEVICES, SIZE, SYSTEM_DIRS, env_name, inside, is_safe,
                     label)
from ..tools.base import PARAM_TYPES, Param, Tool
from ..yamlfile import line_of, nearest

def _safe_text(value: Any) -> str:
    """How a refused value reads in a message: short, on one line."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Checker:
    """The contract checks of one campaign document (see the module docstring)."""

    def __init__(self, doc: Mapping[str, Any], tool: Tool, lines: Mapping[tuple, int], path: str) -> None:
        self.doc, self.tool, self.lines, self.path = doc, tool, lines, path
        self.scratch = list(doc.get("scratch", []))
        self.text = set(doc.get("text", []))
        self.programs = set(doc.get("programs", []))
        commands = [text for _, text in _commands(doc)]
        #: Names commands use: as {name}, or (text) as $PERFLAB_<NAME>.
        self.placeholders = _placeholders(doc) | {n for n in self.text if any(env_name(n) in c for c in commands)}
        self.problems: list[str] = []

    def add(self, where: tuple, message: str) -> None:
        self.problems.append(f"{self.path}:{line_of(self.lines, where)}: {'.'.join(map(str, where))}: {message}")

    def nearest(self, name: str, extra: tuple[str, ...] = ()) -> str:
        names = [p.name for p in self.tool.params] + sorted(self.placeholders) + list(extra)
        close = nearest(name, names)
        return f"did you mean {close!r}?" if close else "remove it"

    def run(self) -> list[str]:
        for i, root in enumerate(self.scratch):
            if not ABSOLUTE_PATH.match(root) or ".." in root.split("/") or root.rstrip("/") == "" or any(
                    inside(root, [d]) for d in SYSTEM_DIRS):
                self.add(("scratch", i), f"{root!r} cannot be scratch: give an absolute path of a directory or device "
                                        "the campaign may overwrite (not /, not a system directory)")
        named = set(self.doc["factors"]) | {name for _, name, _ in _settings(self.doc)}
        for i, name in enumerate(self.doc.get("text", [])):
            if name not in named:
                self.add(("text", i), f"{name} names no factor or parameter of this campaign; remove it")
        for name in sorted(self.text):
            if (param := self.tool.param(name)) is not None:
                self.add(("text",), f"{name} is a parameter of {self.tool.name}; a tool parameter reaches the tool's "
                                    f"command line, so it takes {PARAM_TYPES[param.type]}, not text")
        for i, name in enumerate(self.doc.get("programs", [])):
            if not any(name == p.name or name in p.programs for p in self.tool.params if p.programs):
                self.add(("programs", i), f"{name!r} is no {self.tool.name} parameter or option that runs a program "
                                          f"({', '.join(_program_names(self.tool)) or 'it has none'}); remove it")
        for name, levels in self.doc["factors"].items():
            self.factor(name, levels)
        for where, name, value in _settings(self.doc):
            self.value(where, name, value)
        return self.problems

    def factor(self, name: str, levels: list[Any]) -> None:
        """A factor is used: by the tool, by what its levels set, by a placeholder, a ``cells`` filter or a link."""
        labelled = any(isinstance(x, Mapping) for x in levels)
        used = (labelled or self.tool.param(name) is not None or name in self.placeholders
                or name in _filters(self.doc) or f"{{{name}}}" in self.doc.get("links", {}).values())
        if not used:
            self.add(("factors", name), f"factor {name} is used by no {self.tool.name} parameter, command, setup "
                                        f"step, service, neighbour or link, so its levels would plan identical cells; "
                                        f"{self.nearest(name)}")
            return
        param = None if labelled else self.tool.param(name)  # a label is a placeholder value, never a parameter
        for i, level in enumerate(levels):
            where = ("factors", name, i, "label") if isinstance(level, Mapping) else ("factors", name, i)
            if param is None:
                self.plain(where, name, label(level))
            else:
                self.typed(where, param, level)

    def value(self, where: tuple, name: str, value: Any) -> None:
        """A value set for ``name``: a declared parameter's type, or a placeholder's safe token, or text."""
        param = self.tool.param(name)
        if param is None and name not in self.placeholders and name not in self.text:
            self.add(where, f"{self.tool.name} has no parameter {name!r} and no command uses {{{name}}}; "
                            f"{self.nearest(name)}")
        elif param is None:
            self.plain(where, name, value)
        else:
            self.typed(where, param, value)

    def plain(self, where: tuple, name: str, value: Any) -> None:
        if name in self.text:
            if "\0" in str(value):
                self.add(where, "text may not hold a NUL byte")
        elif not is_safe(value, self.scratch):
            self.add(where, _unsafe(value, self.scratch) + f"; or list {name} under text to pass it to commands "
                            f"as the environment variable ${env_name(name)}")

    def typed(self, where: tuple, param: Param, value: Any) -> None:
        """``value`` fits ``param``'s declared type, positivity, range, choices, programs and scratch."""
        kind, name = param.type, param.name
        if value is None:
            return
        if kind == "program":
            if name not in self.programs:
                self.add(where, f"parameter {name} runs a program; list {name} under programs if the campaign "
                                "means to run one")
            return
        if kind == "options":
            if not isinstance(value, Mapping):
                self.add(where, f"parameter {name} takes {PARAM_TYPES[kind]}; found {_safe_text(value)}")
                return
            for key, item in value.items():
                at = (*where, key)
                if not (isinstance(key, str) and re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]*", key)):
                    self.add(at, f"option name {_safe_text(key)} is not a word of letters, digits, _ and -")
                elif not is_safe(item, self.scratch):
                    self.add(at, _unsafe(item, self.scratch))
                elif _runs_program(param, key, item) and key not in self.programs:
                    self.add(at, f"{self.tool.name} option {key}={item} runs a program; list {key} under programs "
                                 "if the campaign means to run one")
            return
        ok = {"int": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or bool(
                  isinstance(v, str) and re.fullmatch(r"-?\d+", v)),
              "number": lambda v: (isinstance(v, (int, float)) and not isinstance(v, bool)) or bool(
                  isinstance(v, str) and NUMBER.match(v)),
              "size": lambda v: (isinstance(v, (int, float)) and not isinstance(v, bool)) or bool(
                  isinstance(v, str) and SIZE.match(v)),
              "bool": lambda v: isinstance(v, bool) or v in (0, 1),
              "word": lambda v: is_safe(v) and not (isinstance(v, str) and v.startswith("/")),
              "path": lambda v: isinstance(v, str) and (v in READABLE_DEVICES or is_safe(v, self.scratch)),
              "write-path": lambda v: isinstance(v, str) and ":" not in v and is_safe(v, self.scratch)}[kind]
        if not ok(value):
            hint = (_unsafe(value, self.scratch) if kind in ("path", "write-path") and isinstance(value, str)
                    and ":" not in value else f"parameter {name} takes {PARAM_TYPES[kind]}; found {_safe_text(value)}")
            self.add(where, hint)
        elif (negative := param.not_positive(value)) is not None:
            self.add(where, negative)
        elif (outside := _outside(param, value)) is not None:
            self.add(where, f"parameter {name} is {outside}, {OUT_OF_RANGE} {param.span()} ({param.doc}); give "
                            "a value in that range")
        elif param.choices and value not in param.choices:
            self.add(where, f"parameter {name} takes one of {', '.join(map(str, param.choices))}; found "
                            f"{_safe_text(value)}")
        elif _runs_program(param, None, value) and name not in self.programs:
            self.add(where, f"{name}={value} makes {self.tool.name} run a program; list {name} under programs if "
                            "the campaign means to run one")


#: What a message about a value outside its parameter's range says (campaign_checks keeps one problem per value).
OUT_OF_RANGE = "outside its range"
#: Multipliers of a size's unit suffix (binary, as the tools read them).
_SIZE_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}


def _outside(param: Param, value: Any) -> str | None:
    """``value`` as a message says it when it lies outside ``param``'s range (NaN and infinities too), else None."""
    if param.range is None:
        return None
    try:
        text = str(value).strip()
        if isinstance(value, str) and param.type == "size":
            number, suffix = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtTpP]?)\D*", text).groups()  # type: ignore[union-attr]
            magnitude: float = float(number) * _SIZE_UNITS[suffix.lower()]
        else:  # a whole number compares exactly, whatever its size
            magnitude = int(value) if isinstance(value, int) or param.type == "int" else float(value)
    except (ValueError, OverflowError):  # more digits than Python converts, or beyond a float
        text, magnitude = "too large a number", math.inf
    low, high = param.range
    if low <= magnitude <= high:  # False for NaN
        return None
    return text if len(text) <= 30 else f"{text[:12]}...({len(text)} characters)"


def _unsafe(value: Any, scratch: list[str]) -> str:
    """Why ``value`` cannot reach a command line, and what to do."""
    if isinstance(value, str) and ABSOLUTE_PATH.match(value) and ".." not in value.split("/"):
        return (f"{value} is outside the campaign's scratch locations ({', '.join(scratch) or 'none'}); add the "
                "directory or device it may use under scratch")
    return (f"{_safe_text(value)} is not a safe command-line token (a number, or a word of letters, digits and "
            ". _ - + : , @ % / that starts with a letter, digit or _, or a path)")


def _runs_program(param: Param, key: str | None, value: Any) -> bool:
    """True when ``value`` (of option ``key`` of an options parameter) makes ``param`` run a program."""
    if "*" in param.programs:
        return True
    head = str(value).split(":")[0]
    return (key if key is not None else head) in param.programs or f"{key}={head}" in param.programs


def _program_names(tool: Tool) -> list[str]:
    """The names a campaign may list under ``programs`` for ``tool``."""
    out = []
    for p in tool.params:
        if p.programs:
            out += [p.name] if p.type in ("program", "word") else [x.split("=")[0] for x in sorted(p.programs)]
    return list(dict.fromkeys(out))


def _settings(doc: Mapping[str, Any]) -> Iterator[tuple[tuple, str, Any]]:
    """(where, name, value) of every value a campaign sets by name: params, labelled levels, phases, hosts."""
    for key, value in doc["benchmark"].get("params", {}).items():
        yield ("benchmark", "params", key), key, value
    for factor, levels in doc["factors"].items():
        for i, level in enumerate(levels):
            if isinstance(level, Mapping):
                for key, value in level["set"].items():
                    yield ("factors", factor, i, "set", key), key, value
    for i, phase in enumerate(doc.get("phases", [])):
        for key, value in phase["set"].items():
            yield ("phases", i, "set", key), key, value
    for role, seats in doc.get("hosts", {}).items():
        for k, seat in enumerate(seats if isinstance(seats, list) else []):
            for key, value in (seat.get("set", {}) if isinstance(seat, Mapping) else {}).items():
                yield ("hosts", role, k, "set", key), key, value


def _commands(doc: Mapping[str, Any]) -> Iterator[tuple[tuple, str]]:
    """(where, text) of every command template of a campaign."""
    for kind, fields in (("setup", ("run", "verify")), ("teardown", ("run", "verify")), ("neighbours", ("run",)),
                         ("services", ("start", "ready", "stop"))):
        for i, item in enumerate(doc.get(kind, [])):
            for name in fields:
                if item.get(name):
                    yield (kind, i, name), item[name]


def _placeholders(doc: Mapping[str, Any]) -> set[str]:
    """Every ``{name}`` a command template of the campaign uses."""
    return {name for _, text in _commands(doc) for name in PLACEHOLDER.findall(text)}


def _filters(doc: Mapping[str, Any]) -> set[str]:
    """Factors that a neighbour's or service's ``cells`` filter names."""
    return {f for kind in ("neighbours", "services") for item in doc.get(kind, []) for f in item.get("cells", {})}


def problems(doc: Mapping[str, Any], tool: Tool, lines: Mapping[tuple, int], path: str) -> list[str]:
    """Every way the schema-valid campaign ``doc`` breaks the contracts of :mod:`perflab.campaign.contracts`."""
    out = _Checker(doc, tool, lines, path).run()
    text = set(doc.get("text", []))
    for where, command in _commands(doc):
        for name in sorted(set(PLACEHOLDER.findall(command)) & text):
            out.append(f"{path}:{line_of(lines, where)}: {'.'.join(map(str, where))}: {name} is text, which never "
                       f"becomes command text; use the environment variable \"${env_name(name)}\" instead of {{{name}}}")
    return out
