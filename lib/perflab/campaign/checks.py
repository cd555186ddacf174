"""The rules a campaign document must satisfy beyond its JSON schema, each problem a ``file:line: field: problem`` line.

Numbers are finite (a parameter's own range and positivity are its declaration's,
:mod:`perflab.campaign.contracts`); the grid stays below a size limit; the
tool's roles have hosts; factors, roles, links, services and placeholders refer to what
exists; a role several hosts play, phases and host groups fit together; and the tool's
adapter builds its commands for every level.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Iterator, Mapping

from .. import tools
from . import contracts as campaign_contracts
from .values import PLACEHOLDER, label
from ..tools.base import ParseOnly
from ..yamlfile import line_of, nearest

#: Columns of the tidy table that a factor must not shadow.
RESERVED = frozenset({"campaign", "run_id", "block", "position", "repetition", "warmup", "metric", "value",
                      "unit", "tool", "host", "group", "source", "cell", "phase"})
#: Role names that commonly appear in campaigns; a target with such a name must be a role of ``hosts``.
COMMON_ROLES = frozenset({"client", "server", "neighbour", "neighbor", "monitor", "load", "target"})

#: Most cells a campaign may plan, and most samples (cells x (warm-ups + repetitions) x groups):
#: checked before anything is expanded, so a typo like 100000 levels fails at once.
MAX_CELLS = 100_000
MAX_SAMPLES = 500_000


def doc_hosts(doc: Mapping[str, Any]) -> dict[str, str]:
    """Role -> host of a campaign document's ``hosts``; a role several hosts play maps to the first."""
    return {role: seat_fields(value[0])[0] if isinstance(value, list) else value
            for role, value in doc.get("hosts", {}).items()}


def doc_roles(doc: Mapping[str, Any]) -> dict[str, str]:
    """Every role of a campaign document with its (first) host: those of ``hosts`` and of the first group
    (groups share roles)."""
    return {**doc_hosts(doc), **(doc.get("groups") or [{}])[0]}



def seat_fields(item: str | Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The host and the parameters it sets of one host of a role several hosts play: a plain name, or ``{host, set}``."""
    return (item, {}) if isinstance(item, str) else (item["host"], dict(item.get("set", {})))


def _walk(value: Any, where: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every scalar of a document with its path."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, where + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, where + (i,))
    else:
        yield where, value


def _number_problems(doc: dict, lines: dict[tuple, int], path: str) -> list[str]:
    """No NaN or infinity anywhere in the document."""
    return [f"{path}:{line_of(lines, where)}: {'.'.join(map(str, where))}: {value!r} is not a finite number; "
            "write a number such as 10"
            for where, value in _walk(doc) if isinstance(value, float) and not math.isfinite(value)]


def _size_problems(doc: dict, lines: dict[tuple, int], path: str) -> list[str]:
    """The planned grid stays below :data:`MAX_CELLS` cells and :data:`MAX_SAMPLES` samples (checked unexpanded)."""
    sizes = [len(levels) for levels in doc["factors"].values()]
    cells = min(sizes) if doc.get("crossing") == "zip" else math.prod(sizes)
    samples = cells * (doc.get("repetitions", 40) + doc.get("warmups", 1)) * max(1, len(doc.get("groups", [])))
    if cells > MAX_CELLS:
        return [f"{path}:{line_of(lines, ('factors',))}: factors: {cells} cells "
                f"({' x '.join(map(str, sizes))}) is more than the limit of {MAX_CELLS}; use fewer levels"]
    if samples > MAX_SAMPLES:
        return [f"{path}:{line_of(lines, ('repetitions',))}: repetitions: {samples} samples ({cells} cells x "
                f"(warm-ups + repetitions){' x groups' if doc.get('groups') else ''}) is more than the limit of "
                f"{MAX_SAMPLES}; use fewer repetitions or levels"]
    return []


def problems(doc: dict, lines: dict[tuple, int], path: str) -> list[str]:
    """Every problem of a schema-valid campaign document ``doc`` read from ``path`` (empty: none)."""
    problems = _number_problems(doc, lines, path) + _size_problems(doc, lines, path)
    tool_name = doc["benchmark"]["tool"]
    try:
        tool = tools.get(tool_name)
    except KeyError as exc:
        return [f"{path}:{line_of(lines, ('benchmark', 'tool'))}: benchmark.tool: {exc.args[0]}"]
    if isinstance(tool, ParseOnly):
        return [f"{path}:{line_of(lines, ('benchmark', 'tool'))}: benchmark.tool: perflab only parses {tool_name}'s "
                f"output (it cannot run it here); run it outside perflab and use `perflab parse {tool_name} FILE`"]
    if "groups" in doc:
        problems += _group_problems(doc, tool.roles, lines, path)
    else:
        missing = [r for r in tool.roles if r not in doc.get("hosts", {})]
        if missing:
            problems.append(f"{path}:{line_of(lines, ('hosts',))}: hosts: tool {tool_name} needs role(s) "
                            f"{', '.join(missing)}; add e.g. `{missing[0]}: h1` under hosts (or use groups)")
        if "parallel_groups" in doc:
            problems.append(f"{path}:{line_of(lines, ('parallel_groups',))}: parallel_groups: only applies with "
                            f"groups; add groups or remove parallel_groups")
    for name, levels in doc["factors"].items():
        if name in RESERVED:
            problems.append(f"{path}:{line_of(lines, ('factors', name))}: factors.{name}: {name!r} is a reserved "
                            f"column name; rename the factor")
        labelled = [isinstance(x, dict) for x in levels]
        if any(labelled) and not all(labelled):
            at = labelled.index(False)
            problems.append(f"{path}:{line_of(lines, ('factors', name, at))}: factors.{name}[{at}]: a plain level "
                            f"among labelled ones ({{label, set}}); write every level of a factor the same way")
    if doc.get("crossing") == "zip" and len({len(v) for v in doc["factors"].values()}) > 1:
        problems.append(f"{path}:{line_of(lines, ('crossing',))}: crossing: zip needs factors with equally "
                        f"many levels; found {', '.join(f'{k}={len(v)}' for k, v in doc['factors'].items())}")
    problems += _reference_problems(doc, lines, path) + _part_problems(doc, tool, lines, path)
    problems += campaign_contracts.problems(doc, tool, lines, path)
    # a value refused already (not finite) is not also said to be out of its parameter's range
    refused = {p.split(": ", 2)[:2][-1] for p in problems if campaign_contracts.OUT_OF_RANGE not in p}
    problems = [p for p in problems if campaign_contracts.OUT_OF_RANGE not in p or p.split(": ", 2)[1] not in refused]
    return problems or _command_problems(doc, tool, lines, path)


#: Tools whose rows carry their own ``phase`` dimension (IOzone's phases as fio jobs): no campaign phases.
OWN_PHASES = frozenset({"fio_iozone"})


def _part_problems(doc: dict, tool: tools.Tool, lines: dict[tuple, int], path: str) -> list[str]:
    """Roles several hosts play (measured roles only, each host once, no groups) and phases (the tool has
    none of its own; no parameter set twice by a factor, a phase or a host)."""
    problems = []
    try:
        measured = [c.role for c in tool.commands(doc["benchmark"].get("params", {}) | _first_sets(doc),
                                                  {role: "198.18.0.1" for role in tool.roles}) if not c.service]
    except Exception:  # the adapter refuses these parameters: _command_problems says why
        measured = list(tool.roles)
    setters = {name: f"factor {name}" for name, levels in doc["factors"].items()
               if not any(isinstance(x, Mapping) for x in levels)}
    setters |= {k: f"factor {name}" for name, levels in doc["factors"].items() for x in levels
                if isinstance(x, Mapping) for k in x["set"]}
    for role, value in doc.get("hosts", {}).items():
        if not isinstance(value, list):
            continue
        at = f"{path}:{line_of(lines, ('hosts', role))}: hosts.{role}"
        if "groups" in doc:
            problems.append(f"{at}: several hosts for one role cannot be combined with groups; give {role} one host "
                            "or drop groups")
        elif role not in measured:
            problems.append(f"{at}: only a role whose command is measured can have several hosts ({tool.name}: "
                            f"{', '.join(dict.fromkeys(measured))}); give {role} one host")
        names = [seat_fields(x)[0] for x in value]
        for dup in sorted({n for n in names if names.count(n) > 1}):
            problems.append(f"{at}: host {dup!r} is listed twice; list each host once")
        for k, item in enumerate(value):
            for key in item.get("set", {}) if isinstance(item, Mapping) else ():
                if key in setters:
                    problems.append(f"{path}:{line_of(lines, ('hosts', role, k, 'set', key))}: hosts.{role}.{k}.set."
                                    f"{key}: parameter {key} is set by {setters[key]} too; a host may only set "
                                    "parameters no factor sets")
    phases = doc.get("phases", [])
    if phases and tool.name in OWN_PHASES:
        problems.append(f"{path}:{line_of(lines, ('phases',))}: phases: {tool.name} runs phases of its own (its rows "
                        "carry a phase column); drop phases or use tool fio with phases")
    labels = [p["label"] for p in phases]
    for dup in sorted({x for x in labels if labels.count(x) > 1}):
        problems.append(f"{path}:{line_of(lines, ('phases',))}: phases: label {dup!r} is used twice; give every "
                        "phase its own label")
    seat_keys = {key for value in doc.get("hosts", {}).values() if isinstance(value, list)
                 for item in value if isinstance(item, Mapping) for key in item.get("set", {})}
    for i, phase in enumerate(phases):
        for key in phase["set"]:
            other = setters.get(key) or ("a host under hosts" if key in seat_keys else None)
            if other:
                problems.append(f"{path}:{line_of(lines, ('phases', i, 'set', key))}: phases.{i}.set.{key}: parameter "
                                f"{key} is set by {other} too; a phase may only set parameters nothing else varies")
    return problems


def _first_sets(doc: dict) -> dict[str, Any]:
    """The tool parameters the first level of every factor sets."""
    out: dict[str, Any] = {}
    for name, levels in doc["factors"].items():
        out.update(levels[0]["set"] if isinstance(levels[0], Mapping) else {name: levels[0]})
    return out


def _command_problems(doc: dict, tool: tools.Tool, lines: dict[tuple, int], path: str) -> list[str]:
    """The adapter builds its commands for every level of every factor (each varied from the first levels)."""
    if isinstance(tool, ParseOnly):
        return [f"{path}:{line_of(lines, ('benchmark', 'tool'))}: benchmark.tool: perflab only parses "
                f"{tool.name}'s output and cannot run it; choose a tool that `perflab parse --list` marks runnable"]
    params, factors = doc["benchmark"].get("params", {}), doc["factors"]
    addresses = {role: "198.18.0.1" for role in tool.roles}
    def sets(name: str, level: Any) -> dict[str, Any]:
        return dict(level["set"]) if isinstance(level, Mapping) else {name: level}

    first = _first_sets(doc)
    checked: list[tuple[tuple[Any, ...], dict[str, Any]]] = [((), {**params, **first})]
    checked += [(("factors", name, i), {**params, **first, **sets(name, level)})
                for name, levels in factors.items() for i, level in enumerate(levels)]
    checked += [(("phases", i), {**params, **first, **p["set"]}) for i, p in enumerate(doc.get("phases", []))]
    checked += [(("hosts", role, k), {**params, **first, **item["set"]})
                for role, value in doc.get("hosts", {}).items() if isinstance(value, list)
                for k, item in enumerate(value) if isinstance(item, Mapping) and item.get("set")]
    for where, values in checked:
        try:
            tool.commands(values, addresses)
            tool.ready(values, addresses)
            tool.expected_duration(values)
        except Exception as exc:  # an adapter refusing a value: report it against the campaign file
            at = where or ("benchmark", "params")
            return [f"{path}:{line_of(lines, at)}: {'.'.join(map(str, at))}: {tool.name} cannot use "
                    f"{_level_text(where, doc)}: {exc}; fix the value"]
    return []


def _level_text(where: tuple, doc: Mapping[str, Any]) -> str:
    if where[:1] == ("factors",):
        return f"{where[1]}={label(doc['factors'][where[1]][where[2]])!r}"
    if where[:1] == ("phases",):
        return f"phase {doc['phases'][where[1]]['label']!r}"
    if where[:1] == ("hosts",):
        return f"what host {doc['hosts'][where[1]][where[2]]['host']} sets"
    return "these parameters"


def _group_problems(doc: dict, tool_roles: tuple[str, ...], lines: dict[tuple, int], path: str) -> list[str]:
    """Every group names the tool's roles and the same roles as the others; no host is in two groups."""
    problems = []
    groups = doc["groups"]
    roles = sorted(set(tool_roles) | {role for group in groups for role in group})
    owner: dict[str, int] = {}
    for k, group in enumerate(groups):
        missing = [r for r in roles if r not in group]
        if missing:
            problems.append(f"{path}:{line_of(lines, ('groups', k))}: groups.{k}: incomplete group: expected roles "
                            f"{', '.join(roles)}; missing {', '.join(missing)}; add e.g. `{missing[0]}: h1` to it")
        for role, host in group.items():
            if owner.setdefault(host, k) != k:
                problems.append(f"{path}:{line_of(lines, ('groups', k, role))}: groups.{k}.{role}: host {host!r} is "
                                f"already in group {owner[host]}; groups must use disjoint hosts (independent "
                                f"groups), so give each group its own hosts")
    return problems


def _reference_problems(doc: dict, lines: dict[tuple, int], path: str) -> list[str]:
    """Roles, hosts, factors and placeholders named by settle, setup, teardown and neighbours."""
    problems = []
    roles = doc_roles(doc)
    names = set(roles.values()) | {name for group in doc.get("groups", []) for name in group.values()}
    sets = [k for levels in doc["factors"].values() for x in levels if isinstance(x, Mapping) for k in x["set"]]
    known = list(dict.fromkeys([*doc["factors"], *doc["benchmark"].get("params", {}), *sets,
                                *(f"{role}_address" for role in roles)]))

    def target(where: tuple, value: str) -> None:
        if value in roles or value in names:
            return
        close = nearest(value, roles)
        if value in COMMON_ROLES or close:
            hint = f"did you mean {close!r}? " if close else ""
            problems.append(f"{path}:{line_of(lines, where)}: {'.'.join(map(str, where))}: {value!r} is not a role "
                            f"of `hosts` (roles: {', '.join(roles)}); {hint}add it under hosts or name an "
                            f"inventory host")

    def command(where: tuple, value: str) -> None:
        for name in PLACEHOLDER.findall(value):
            if name not in known and not any(name.startswith(f"{role}_address_") for role in roles):
                problems.append(f"{path}:{line_of(lines, where)}: {'.'.join(map(str, where))}: placeholder "
                                f"{{{name}}} names no factor, benchmark parameter, <role>_address or "
                                f"<role>_address_<link> (known: {', '.join(known) or 'none'})")

    for i, host in enumerate(doc.get("settle", {}).get("hosts", [])):
        target(("settle", "hosts", i), host)
    for kind in ("setup", "teardown", "neighbours"):
        for i, item in enumerate(doc.get(kind, [])):
            target((kind, i, "on"), item["on"])
            for field_ in ("run", "verify"):
                if field_ in item:
                    command((kind, i, field_), item[field_])
    for i, item in enumerate(doc.get("requires", [])):
        if item["on"] != "all":
            target(("requires", i, "on"), item["on"])
    for i, item in enumerate(doc.get("services", [])):
        target(("services", i, "on"), item["on"])
        for field_ in ("start", "ready", "stop"):
            if field_ in item:
                command(("services", i, field_), item[field_])
    for kind, i, item in [*(("neighbours", i, n) for i, n in enumerate(doc.get("neighbours", []))),
                          *(("services", i, n) for i, n in enumerate(doc.get("services", [])))]:
        for factor, levels in item.get("cells", {}).items():
            where = (kind, i, "cells", factor)
            if factor not in doc["factors"]:
                problems.append(f"{path}:{line_of(lines, where)}: {'.'.join(map(str, where))}: unknown factor "
                                f"{factor!r}; factors: {', '.join(doc['factors'])}")
                continue
            labels = [label(x) for x in doc["factors"][factor]]
            for level in levels:
                if level not in labels:
                    problems.append(f"{path}:{line_of(lines, where)}: {'.'.join(map(str, where))}: level {level!r} "
                                    f"is not a level of factor {factor} (levels: {', '.join(map(repr, labels))})")
    return problems + _design_problems(doc, lines, path)


def _design_problems(doc: dict, lines: dict[tuple, int], path: str) -> list[str]:
    """Labelled levels, excluded cells and service names that do not fit the factors."""
    problems = []
    for factor, levels in doc["factors"].items():
        labels = [label(x) for x in levels]
        for dup in sorted({str(x) for x in labels if labels.count(x) > 1}):
            problems.append(f"{path}:{line_of(lines, ('factors', factor))}: factors.{factor}: level label {dup!r} "
                            "is used twice; give every level its own label")
    for i, item in enumerate(doc.get("exclude", [])):
        for factor, level in item.items():
            where = ("exclude", i, factor)
            if factor not in doc["factors"]:
                problems.append(f"{path}:{line_of(lines, where)}: exclude.{i}.{factor}: unknown factor {factor!r}; "
                                f"factors: {', '.join(doc['factors'])}")
            elif level not in [label(x) for x in doc["factors"][factor]]:
                problems.append(f"{path}:{line_of(lines, where)}: exclude.{i}.{factor}: {level!r} is not a level of "
                                f"factor {factor} (levels: {', '.join(repr(label(x)) for x in doc['factors'][factor])})")
    if doc.get("exclude") and not problems and doc.get("crossing", "grid") == "grid":
        labels = [[label(x) for x in v] for v in doc["factors"].values()]
        if math.prod(map(len, labels)) <= 100_000 and all(
                any(all(dict(zip(doc["factors"], combo))[k] == v for k, v in e.items()) for e in doc["exclude"])
                for combo in itertools.product(*labels)):
            problems.append(f"{path}:{line_of(lines, ('exclude',))}: exclude: leaves no cell to measure; "
                            "remove an item")
    for role, link in doc.get("links", {}).items():
        if role not in doc_roles(doc):
            problems.append(f"{path}:{line_of(lines, ('links', role))}: links.{role}: {role!r} is not a role of hosts "
                            f"(roles: {', '.join(doc_roles(doc))})")
        if link.startswith("{") and link[1:-1] not in doc["factors"]:
            problems.append(f"{path}:{line_of(lines, ('links', role))}: links.{role}: {link} names no factor "
                            f"(factors: {', '.join(doc['factors'])})")
    names = [d["name"] for d in doc.get("services", [])]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"{path}:{line_of(lines, ('services',))}: services: two services named {dup!r}; rename one")
    return problems
