"""Campaign files: YAML validated against a JSON schema, errors with file, line and field.

A campaign names one benchmark tool, the hosts that play its roles, the factors whose
levels are crossed into cells, and how the cells are repeated and ordered; optionally
independent host groups that each run the whole schedule in parallel, a
settle condition before each sample, setup and teardown steps per cell (each optionally
verified), background loads (noisy neighbours) for some cells, several hosts that play the
measured role at once, ordered phases within every sample, and whether monitors and
fingerprints run. The format is documented field by field in ``docs/campaigns.md``.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import re
import shlex
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Iterator, Mapping

from . import tools
from .errors import FileError
from .tools.base import ParseOnly
from .yamlfile import read_yaml, where as _where


SCHEMA = json.loads(resources.files("perflab").joinpath("schemas/campaign.schema.json").read_text())
#: Columns of the tidy table that a factor must not shadow.
RESERVED = frozenset({"campaign", "run_id", "block", "position", "repetition", "warmup", "metric", "value",
                      "unit", "tool", "host", "group", "source", "cell", "phase"})


#: Role names that commonly appear in campaigns; a target with such a name must be a role of ``hosts``.
COMMON_ROLES = frozenset({"client", "server", "neighbour", "neighbor", "monitor", "load", "target"})
#: ``{name}`` placeholders in setup, teardown and neighbour commands.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


#: Most cells a campaign may plan, and most samples (cells x (warm-ups + repetitions) x groups):
#: checked before anything is expanded, so a typo like 100000 levels fails at once.
MAX_CELLS = 100_000
MAX_SAMPLES = 500_000
#: Parameters (and factors) that are times or counts: a number there must be finite and positive.
POSITIVE = frozenset({"duration", "runtime", "time", "count", "interval", "parallel", "threads", "numjobs",
                      "iodepth", "np", "n", "nb", "p", "q", "length", "size", "bs", "ramp_time", "omit",
                      "timeout", "deadline", "port"})
#: Positive parameters for which 0 means "none" rather than "run forever".
ZERO_OK = frozenset({"ramp_time", "omit"})


class SpecError(FileError, ValueError):
    """A campaign file is invalid; ``str()`` is a list of ``file:line: field: problem`` lines."""


@dataclass(frozen=True)
class Settle:
    """Wait before each sample until the 1-minute load of ``hosts`` (roles or names) is at most ``max_load1``."""

    hosts: tuple[str, ...]
    max_load1: float
    timeout: float = 120.0
    poll: float = 1.0


@dataclass(frozen=True)
class Reconnect:
    """How the runner reconnects to a host whose connection dropped: exponential backoff, capped and bounded.

    Before attempt k it waits ``min(backoff * 2**(k-1), max_backoff)`` seconds; it makes at most
    ``attempts`` attempts and starts none later than ``max_wait`` seconds after the loss.
    ``attempts`` also bounds how many outages one sample may suffer; 0 disables reconnecting.
    """

    attempts: int = 5
    backoff: float = 1.0
    max_backoff: float = 15.0
    max_wait: float = 60.0

    def wait(self, attempt: int) -> float:
        """Seconds to wait before ``attempt`` (counted from 1)."""
        return min(self.backoff * 2 ** (attempt - 1), self.max_backoff)


@dataclass(frozen=True)
class Step:
    """A setup or teardown command run on the host of ``on`` (a role or a host name).

    ``verify``, when given, is a check run on the same host after the step; the step took
    effect only if it exits 0.
    """

    on: str
    run: str
    timeout: float = 60.0
    verify: str | None = None


@dataclass(frozen=True)
class Seat:
    """One of the hosts of a role that several hosts play at once, with the tool parameters it sets for itself."""

    host: str
    set: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Phase:
    """An ordered part of every sample: the measured commands run again with the parameters ``set``."""

    label: str
    set: Mapping[str, Any]


@dataclass(frozen=True)
class Neighbour:
    """A background load run on ``on`` during the cells that match ``cells`` (factor -> levels; empty: all)."""

    on: str
    run: str
    cells: Mapping[str, tuple] = field(default_factory=dict)

    def applies(self, levels: Mapping[str, Any]) -> bool:
        """True when a cell with ``levels`` is one of this load's cells."""
        return all(levels.get(k) in v for k, v in self.cells.items())


#: A placeholder given as the script of a shell or to eval: its value would run as shell code.
_AS_CODE = re.compile(r"(?:^|[\s;&|(`])(?:eval|(?:ba|da|k|z)?sh(?:\s+-[A-Za-z]+)*\s+-[A-Za-z]*c[A-Za-z]*)\s+\{[A-Za-z_]")


def unsafe_placeholders(command: str) -> list[tuple[str, str]]:
    """Placeholders of ``command`` whose quoted value could still run as shell: (name, why) pairs.

    ``fill`` shell-quotes each value, which is safe only for a word outside quotes: inside
    '...' or "..." (e.g. the script of ``sh -c '...'``), in a here-document, or as the
    script of ``sh -c``/``eval``, the quotes are themselves text and the value is code.
    """
    out = []
    quote, heredoc, i = "", False, 0
    while i < len(command):
        ch = command[i]
        if ch == "\\" and quote != "'":
            i += 2
            continue
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif command.startswith("<<", i):
            heredoc = True
        match = PLACEHOLDER.match(command, i)
        if match and (quote or heredoc):
            out.append((match[1], f"inside {'a here-document' if heredoc else 'quotes'}"))
        i += 1
    code = _AS_CODE.search(command)
    if code:
        out.append((PLACEHOLDER.match(command, code.end() - 2)[1], "as the script of a shell or eval"))
    return out


@dataclass(frozen=True)
class ServiceDef:
    """A declared fixture: started on ``on`` once per ``scope`` for the cells it applies to, checked, stopped."""

    name: str
    on: str
    start: str
    ready: str | None = None
    stop: str | None = None
    scope: str = "campaign"
    order: int = 0
    timeout: float = 30.0
    cells: Mapping[str, tuple] = field(default_factory=dict)

    def applies(self, levels: Mapping[str, Any]) -> bool:
        """True when a cell with ``levels`` needs this service."""
        return all(levels.get(k) in v for k, v in self.cells.items())


def label(level: Any) -> Any:
    """The name of a factor level: itself, or the ``label`` of a level that sets several parameters."""
    return level["label"] if isinstance(level, Mapping) else level


def fill(command: str, values: Mapping[str, Any]) -> str:
    """``command`` with each ``{name}`` replaced by the shell-quoted ``values[name]`` (others left alone)."""
    return PLACEHOLDER.sub(lambda m: shlex.quote(str(values[m[1]])) if m[1] in values else m[0], command)


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
    #: The RMIT seed; None until the runner draws one (campaign files without ``seed``).
    seed: int | None
    timeout: float | None
    retries: int
    source: str
    doc: Mapping[str, Any] = field(repr=False)
    settle: Settle | None = None
    setup: tuple[Step, ...] = ()
    teardown: tuple[Step, ...] = ()
    neighbours: tuple[Neighbour, ...] = ()
    monitors: bool = True
    fingerprints: bool = True
    #: Independent role -> host mappings, each running the whole schedule (empty: no groups).
    groups: tuple[Mapping[str, str], ...] = ()
    #: How many groups run at the same time (the size of the thread pool).
    parallel_groups: int = 1
    #: The index of the group this campaign is restricted to (see :meth:`for_group`), else None.
    group: int | None = None
    #: Factor -> level label -> the tool parameters that level sets (only levels given as {label, set}).
    level_sets: Mapping[str, Mapping[Any, Mapping[str, Any]]] = field(default_factory=dict)
    #: Cells left out of the grid: factor -> level label, all pairs matching.
    exclude: tuple[Mapping[str, Any], ...] = ()
    services: tuple[ServiceDef, ...] = ()
    #: Role -> lab link (or ``{factor}``) whose address the role's host is reached at.
    links: Mapping[str, str] = field(default_factory=dict)
    #: Role -> its hosts, for a measured role that several hosts play at once (``hosts`` holds the first).
    concurrent: Mapping[str, tuple[Seat, ...]] = field(default_factory=dict)
    #: The phases every sample runs in order (empty: one unnamed phase).
    phases: tuple[Phase, ...] = ()
    #: What the runner does when a host's connection drops (not part of the design digest).
    reconnect: Reconnect = Reconnect()

    def for_group(self, index: int) -> Campaign:
        """This campaign restricted to group ``index``: its roles on the group's hosts, without other groups."""
        return replace(self, hosts={**self.hosts, **self.groups[index]}, groups=(), parallel_groups=1, group=index)

    def host_of(self, target: str) -> str:
        """The inventory host name of ``target``: a role's host, or ``target`` itself (a host name)."""
        return self.hosts.get(target, target)

    def cell_params(self, levels: Mapping[str, Any]) -> dict[str, Any]:
        """The tool parameters of a cell: fixed params, plain levels, and what labelled levels set."""
        out = dict(self.params)
        for factor, level in levels.items():
            sets = self.level_sets.get(factor)
            if sets is None:
                out[factor] = level
            else:
                out.update(sets[level])
        return out

    def phase_params(self, levels: Mapping[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
        """(phase label, tool parameters) of each phase of a cell's samples, in order; one unnamed phase without phases."""
        params = self.cell_params(levels)
        return [(p.label, {**params, **p.set}) for p in self.phases] or [(None, params)]

    def values(self, levels: Mapping[str, Any], addresses: Mapping[str, str],
               link_addresses: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, Any]:
        """Placeholder values of a cell: its tool parameters, its level labels, ``<role>_address`` and,
        from ``link_addresses`` (role -> link -> address), ``<role>_address_<link>``."""
        per_link = {f"{role}_address_{link}": a for role, table in (link_addresses or {}).items()
                    for link, a in table.items()}
        return {**self.cell_params(levels), **levels, **per_link,
                **{f"{role}_address": a for role, a in addresses.items()}}

    def link_of(self, role: str, levels: Mapping[str, Any]) -> str | None:
        """The lab link ``role`` is reached on in a cell with ``levels`` (None: the host's first link)."""
        link = self.links.get(role)
        if link is not None and link.startswith("{"):
            return str(levels[link[1:-1]])
        return link

    def involved(self) -> list[str]:
        """Every inventory host the campaign touches: its roles' hosts and those named by its steps."""
        names = set(self.hosts.values()) | {name for group in self.groups for name in group.values()}
        names |= {seat.host for seats in self.concurrent.values() for seat in seats}
        names |= {self.host_of(r["on"]) for r in self.doc.get("requires", []) if r["on"] != "all"}
        names |= {self.host_of(t) for t in (self.settle.hosts if self.settle else ())}
        names |= {self.host_of(s.on) for s in (*self.setup, *self.teardown, *self.neighbours, *self.services)}
        return sorted(names)

    def digest(self) -> str:
        """SHA-256 of the campaign's canonical JSON: equal digests mean the same experiment.

        ``reconnect`` is left out: it changes how a lost host is waited for, not what is measured,
        so a campaign can be resumed with another policy.
        """
        design_doc = {k: v for k, v in self.doc.items() if k != "reconnect"}
        return hashlib.sha256(json.dumps(design_doc, sort_keys=True).encode()).hexdigest()


def load(path: str | Path, *, text: str | None = None) -> Campaign:
    """Load and validate a campaign file; raise :class:`SpecError` listing every problem."""
    path = str(path)
    doc, lines = read_yaml(path, SCHEMA, "campaign", text=text, error=SpecError)
    problems = _semantic_problems(doc, lines, path)
    if problems:
        raise SpecError(path, problems)
    settle = doc.get("settle")
    groups = tuple(dict(g) for g in doc.get("groups", []))
    return Campaign(
        name=doc["campaign"], tool=doc["benchmark"]["tool"], params=doc["benchmark"].get("params", {}),
        hosts=_hosts(doc),
        concurrent={role: tuple(_seat(x) for x in value) for role, value in doc.get("hosts", {}).items()
                    if isinstance(value, list)},
        phases=tuple(Phase(p["label"], dict(p["set"])) for p in doc.get("phases", [])),
        factors={k: tuple(label(x) for x in v) for k, v in doc["factors"].items()},
        level_sets={k: {x["label"]: dict(x["set"]) for x in v} for k, v in doc["factors"].items()
                    if any(isinstance(x, Mapping) for x in v)},
        exclude=tuple(dict(e) for e in doc.get("exclude", [])), links=dict(doc.get("links", {})),
        services=tuple(ServiceDef(
            name=d["name"], on=d["on"], start=d["start"], ready=d.get("ready"), stop=d.get("stop"),
            scope=d.get("scope", "campaign"), order=d.get("order", 0), timeout=float(d.get("timeout", 30)),
            cells={k: tuple(v) for k, v in d.get("cells", {}).items()}) for d in doc.get("services", [])),
        crossing=doc.get("crossing", "grid"), repetitions=doc.get("repetitions", 40),
        warmups=doc.get("warmups", 1), design=doc.get("design", "rmit"),
        seed=doc.get("seed", None if doc.get("design", "rmit") == "rmit" else 0),
        timeout=doc.get("timeout"), retries=doc.get("retries", 1), source=path, doc=doc,
        settle=None if settle is None else Settle(
            tuple(settle.get("hosts", sorted(_roles(doc)))), float(settle["max_load1"]),
            float(settle.get("timeout", 120)), float(settle.get("poll", 1))),
        setup=tuple(Step(**st) for st in doc.get("setup", [])),
        teardown=tuple(Step(**st) for st in doc.get("teardown", [])),
        neighbours=tuple(Neighbour(n["on"], n["run"], {k: tuple(v) for k, v in n.get("cells", {}).items()})
                         for n in doc.get("neighbours", [])),
        monitors=doc.get("monitors", True), fingerprints=doc.get("fingerprints", True),
        groups=groups, parallel_groups=doc.get("parallel_groups", len(groups) or 1),
        reconnect=Reconnect(**{k: float(v) if k != "attempts" else v for k, v in doc.get("reconnect", {}).items()}),
    )


def _hosts(doc: Mapping[str, Any]) -> dict[str, str]:
    """Role -> host of a campaign document's ``hosts``; a role several hosts play maps to the first."""
    return {role: _seat(value[0]).host if isinstance(value, list) else value
            for role, value in doc.get("hosts", {}).items()}


def _roles(doc: Mapping[str, Any]) -> dict[str, str]:
    """Every role of a campaign document with its (first) host: those of ``hosts`` and of the first group
    (groups share roles)."""
    return {**_hosts(doc), **(doc.get("groups") or [{}])[0]}


def _seat(item: str | Mapping[str, Any]) -> Seat:
    """A host of a role several hosts play: a plain name, or ``{host, set}``."""
    return Seat(item) if isinstance(item, str) else Seat(item["host"], dict(item.get("set", {})))


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
    """No NaN or infinity anywhere; times and counts (:data:`POSITIVE`) in params and factors are positive."""
    problems = []
    for where, value in _walk(doc):
        dotted = ".".join(map(str, where))
        if isinstance(value, float) and not math.isfinite(value):
            problems.append(f"{path}:{_where(lines, where)}: {dotted}: {value!r} is not a finite number; "
                            f"write a number such as 10")
            continue
        name = where[-2] if where[:1] == ("factors",) and len(where) == 3 else where[-1] if (
            where[:2] == ("benchmark", "params") and len(where) == 3
            or where[:1] == ("factors",) and len(where) == 5 and where[3] == "set"
            or where[:1] == ("phases",) and len(where) == 4 and where[2] == "set"
            or where[:1] == ("hosts",) and len(where) == 5 and where[3] == "set") else None
        if name in POSITIVE and isinstance(value, (int, float)) and not isinstance(value, bool) and (
                value < 0 or (value == 0 and name not in ZERO_OK)):
            problems.append(f"{path}:{_where(lines, where)}: {dotted}: {name} must be "
                            f"{'>= 0' if name in ZERO_OK else '> 0'}; found {value!r}")
    return problems


def _size_problems(doc: dict, lines: dict[tuple, int], path: str) -> list[str]:
    """The planned grid stays below :data:`MAX_CELLS` cells and :data:`MAX_SAMPLES` samples (checked unexpanded)."""
    sizes = [len(levels) for levels in doc["factors"].values()]
    cells = min(sizes) if doc.get("crossing") == "zip" else math.prod(sizes)
    samples = cells * (doc.get("repetitions", 40) + doc.get("warmups", 1)) * max(1, len(doc.get("groups", [])))
    if cells > MAX_CELLS:
        return [f"{path}:{_where(lines, ('factors',))}: factors: {cells} cells "
                f"({' x '.join(map(str, sizes))}) is more than the limit of {MAX_CELLS}; use fewer levels"]
    if samples > MAX_SAMPLES:
        return [f"{path}:{_where(lines, ('repetitions',))}: repetitions: {samples} samples ({cells} cells x "
                f"(warm-ups + repetitions){' x groups' if doc.get('groups') else ''}) is more than the limit of "
                f"{MAX_SAMPLES}; use fewer repetitions or levels"]
    return []


def _semantic_problems(doc: dict, lines: dict[tuple, int], path: str) -> list[str]:
    problems = _number_problems(doc, lines, path) + _size_problems(doc, lines, path)
    tool_name = doc["benchmark"]["tool"]
    try:
        tool = tools.get(tool_name)
    except KeyError as exc:
        return [f"{path}:{_where(lines, ('benchmark', 'tool'))}: benchmark.tool: {exc.args[0]}"]
    if isinstance(tool, tools.base.ParseOnly):
        return [f"{path}:{_where(lines, ('benchmark', 'tool'))}: benchmark.tool: perflab only parses {tool_name}'s "
                f"output (it cannot run it here); run it outside perflab and use `perflab parse {tool_name} FILE`"]
    if "groups" in doc:
        problems += _group_problems(doc, tool.roles, lines, path)
    else:
        missing = [r for r in tool.roles if r not in doc.get("hosts", {})]
        if missing:
            problems.append(f"{path}:{_where(lines, ('hosts',))}: hosts: tool {tool_name} needs role(s) "
                            f"{', '.join(missing)}; add e.g. `{missing[0]}: h1` under hosts (or use groups)")
        if "parallel_groups" in doc:
            problems.append(f"{path}:{_where(lines, ('parallel_groups',))}: parallel_groups: only applies with "
                            f"groups; add groups or remove parallel_groups")
    for name in doc["factors"]:
        if name in RESERVED:
            problems.append(f"{path}:{_where(lines, ('factors', name))}: factors.{name}: {name!r} is a reserved "
                            f"column name; rename the factor")
    if doc.get("crossing") == "zip" and len({len(v) for v in doc["factors"].values()}) > 1:
        problems.append(f"{path}:{_where(lines, ('crossing',))}: crossing: zip needs factors with equally "
                        f"many levels; found {', '.join(f'{k}={len(v)}' for k, v in doc['factors'].items())}")
    problems += _reference_problems(doc, lines, path) + _part_problems(doc, tool, lines, path)
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
        at = f"{path}:{_where(lines, ('hosts', role))}: hosts.{role}"
        if "groups" in doc:
            problems.append(f"{at}: several hosts for one role cannot be combined with groups; give {role} one host "
                            "or drop groups")
        elif role not in measured:
            problems.append(f"{at}: only a role whose command is measured can have several hosts ({tool.name}: "
                            f"{', '.join(dict.fromkeys(measured))}); give {role} one host")
        names = [_seat(x).host for x in value]
        for dup in sorted({n for n in names if names.count(n) > 1}):
            problems.append(f"{at}: host {dup!r} is listed twice; list each host once")
        for k, item in enumerate(value):
            for key in item.get("set", {}) if isinstance(item, Mapping) else ():
                if key in setters:
                    problems.append(f"{path}:{_where(lines, ('hosts', role, k, 'set', key))}: hosts.{role}.{k}.set."
                                    f"{key}: parameter {key} is set by {setters[key]} too; a host may only set "
                                    "parameters no factor sets")
    phases = doc.get("phases", [])
    if phases and tool.name in OWN_PHASES:
        problems.append(f"{path}:{_where(lines, ('phases',))}: phases: {tool.name} runs phases of its own (its rows "
                        "carry a phase column); drop phases or use tool fio with phases")
    labels = [p["label"] for p in phases]
    for dup in sorted({x for x in labels if labels.count(x) > 1}):
        problems.append(f"{path}:{_where(lines, ('phases',))}: phases: label {dup!r} is used twice; give every "
                        "phase its own label")
    seat_keys = {key for value in doc.get("hosts", {}).values() if isinstance(value, list)
                 for item in value if isinstance(item, Mapping) for key in item.get("set", {})}
    for i, phase in enumerate(phases):
        for key in phase["set"]:
            other = setters.get(key) or ("a host under hosts" if key in seat_keys else None)
            if other:
                problems.append(f"{path}:{_where(lines, ('phases', i, 'set', key))}: phases.{i}.set.{key}: parameter "
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
        return [f"{path}:{_where(lines, ('benchmark', 'tool'))}: benchmark.tool: perflab only parses "
                f"{tool.name}'s output and cannot run it; choose a tool that `perflab parse --list` marks runnable"]
    params, factors = doc["benchmark"].get("params", {}), doc["factors"]
    addresses = {role: "198.18.0.1" for role in tool.roles}
    def sets(name: str, level: Any) -> dict[str, Any]:
        return dict(level["set"]) if isinstance(level, Mapping) else {name: level}

    first = _first_sets(doc)
    checked = [((), {**params, **first})] + [(("factors", name, i), {**params, **first, **sets(name, level)})
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
            return [f"{path}:{_where(lines, at)}: {'.'.join(map(str, at))}: {tool.name} cannot use "
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
            problems.append(f"{path}:{_where(lines, ('groups', k))}: groups.{k}: incomplete group: expected roles "
                            f"{', '.join(roles)}; missing {', '.join(missing)}; add e.g. `{missing[0]}: h1` to it")
        for role, host in group.items():
            if owner.setdefault(host, k) != k:
                problems.append(f"{path}:{_where(lines, ('groups', k, role))}: groups.{k}.{role}: host {host!r} is "
                                f"already in group {owner[host]}; groups must use disjoint hosts (independent "
                                f"groups), so give each group its own hosts")
    return problems


def _reference_problems(doc: dict, lines: dict[tuple, int], path: str) -> list[str]:
    """Roles, hosts, factors and placeholders named by settle, setup, teardown and neighbours."""
    problems = []
    roles = _roles(doc)
    names = set(roles.values()) | {name for group in doc.get("groups", []) for name in group.values()}
    sets = [k for levels in doc["factors"].values() for x in levels if isinstance(x, Mapping) for k in x["set"]]
    known = list(dict.fromkeys([*doc["factors"], *doc["benchmark"].get("params", {}), *sets,
                                *(f"{role}_address" for role in roles)]))

    def target(where: tuple, value: str) -> None:
        if value in roles or value in names:
            return
        close = difflib.get_close_matches(value, list(roles), n=1)
        if value in COMMON_ROLES or close:
            hint = f"did you mean {close[0]!r}? " if close else ""
            problems.append(f"{path}:{_where(lines, where)}: {'.'.join(map(str, where))}: {value!r} is not a role "
                            f"of `hosts` (roles: {', '.join(roles)}); {hint}add it under hosts or name an "
                            f"inventory host")

    def command(where: tuple, value: str) -> None:
        for name in PLACEHOLDER.findall(value):
            if name not in known and not any(name.startswith(f"{role}_address_") for role in roles):
                problems.append(f"{path}:{_where(lines, where)}: {'.'.join(map(str, where))}: placeholder "
                                f"{{{name}}} names no factor, benchmark parameter, <role>_address or "
                                f"<role>_address_<link> (known: {', '.join(known) or 'none'})")
        for name, why in unsafe_placeholders(value):
            problems.append(f"{path}:{_where(lines, where)}: {'.'.join(map(str, where))}: placeholder {{{name}}} "
                            f"{why} would let its value run as shell code; put it outside quotes as an argument "
                            f"(it is quoted for you), e.g. sh -c '... \"$1\" ...' sh {{{name}}}")

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
                problems.append(f"{path}:{_where(lines, where)}: {'.'.join(map(str, where))}: unknown factor "
                                f"{factor!r}; factors: {', '.join(doc['factors'])}")
                continue
            labels = [label(x) for x in doc["factors"][factor]]
            for level in levels:
                if level not in labels:
                    problems.append(f"{path}:{_where(lines, where)}: {'.'.join(map(str, where))}: level {level!r} "
                                    f"is not a level of factor {factor} (levels: {', '.join(map(repr, labels))})")
    return problems + _design_problems(doc, lines, path)


def _design_problems(doc: dict, lines: dict[tuple, int], path: str) -> list[str]:
    """Labelled levels, excluded cells and service names that do not fit the factors."""
    problems = []
    for factor, levels in doc["factors"].items():
        labels = [label(x) for x in levels]
        for dup in sorted({str(x) for x in labels if labels.count(x) > 1}):
            problems.append(f"{path}:{_where(lines, ('factors', factor))}: factors.{factor}: level label {dup!r} "
                            "is used twice; give every level its own label")
    for i, item in enumerate(doc.get("exclude", [])):
        for factor, level in item.items():
            where = ("exclude", i, factor)
            if factor not in doc["factors"]:
                problems.append(f"{path}:{_where(lines, where)}: exclude.{i}.{factor}: unknown factor {factor!r}; "
                                f"factors: {', '.join(doc['factors'])}")
            elif level not in [label(x) for x in doc["factors"][factor]]:
                problems.append(f"{path}:{_where(lines, where)}: exclude.{i}.{factor}: {level!r} is not a level of "
                                f"factor {factor} (levels: {', '.join(repr(label(x)) for x in doc['factors'][factor])})")
    if doc.get("exclude") and not problems and doc.get("crossing", "grid") == "grid":
        labels = [[label(x) for x in v] for v in doc["factors"].values()]
        if math.prod(map(len, labels)) <= 100_000 and all(
                any(all(dict(zip(doc["factors"], combo))[k] == v for k, v in e.items()) for e in doc["exclude"])
                for combo in itertools.product(*labels)):
            problems.append(f"{path}:{_where(lines, ('exclude',))}: exclude: leaves no cell to measure; "
                            "remove an item")
    for role, link in doc.get("links", {}).items():
        if role not in _roles(doc):
            problems.append(f"{path}:{_where(lines, ('links', role))}: links.{role}: {role!r} is not a role of hosts "
                            f"(roles: {', '.join(_roles(doc))})")
        if link.startswith("{") and link[1:-1] not in doc["factors"]:
            problems.append(f"{path}:{_where(lines, ('links', role))}: links.{role}: {link} names no factor "
                            f"(factors: {', '.join(doc['factors'])})")
    names = [d["name"] for d in doc.get("services", [])]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"{path}:{_where(lines, ('services',))}: services: two services named {dup!r}; rename one")
    return problems
