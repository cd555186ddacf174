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

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from .. import tools
from . import checks as campaign_checks
from .checks import doc_hosts, doc_roles, seat_fields
from .values import Text, label
from ..formats import declarations
from ..yamlfile import SpecError, line_of

#: Campaign file formats this reader knows (a file without ``format`` is format 1).
FORMATS = declarations.CAMPAIGN.formats
SCHEMA = declarations.CAMPAIGN.schema()


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



@dataclass(frozen=True)
class Cell:
    """One combination of factor levels."""

    index: int
    levels: Mapping[str, Any]

    @property
    def slug(self) -> str:
        """A short readable id, e.g. ``parallel-4``."""
        raw = "_".join(f"{k}-{v}" for k, v in self.levels.items())
        return slug_text(raw)[:80] or f"cell{self.index}"


def slug_text(text: object) -> str:
    """``text`` as a cell's slug holds it: letters, digits, '_', '.' and '-' (``stress+net`` -> ``stressnet``)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "", str(text))


def cells(factors: Mapping[str, tuple], crossing: str = "grid",
          exclude: tuple[Mapping[str, Any], ...] = ()) -> list[Cell]:
    """The cells of a design: the cross product of the factors' levels, or their zip, less the ``exclude``d ones.

    A cell is excluded when it matches every factor -> level pair of one ``exclude`` item.
    """
    names = list(factors)
    combos = zip(*factors.values()) if crossing == "zip" else itertools.product(*factors.values())
    kept = [dict(zip(names, combo)) for combo in combos]
    kept = [levels for levels in kept if not any(all(levels[k] == v for k, v in e.items()) for e in exclude)]
    return [Cell(i, levels) for i, levels in enumerate(kept)]


#: The design of a campaign whose document names none (docs/campaigns.md): randomized multiple interleaved trials.
DEFAULT_DESIGN = "rmit"

#: Keys of a campaign document that do not change what is measured, left out of its design digest:
#: the reconnect policy and the permissions a campaign grants (scratch, text, programs).
NOT_DESIGN = frozenset({"reconnect", "quiet", "scratch", "text", "programs"})
#: Hosts of the flat lab are named h1 .. hN.
LAB_HOST = re.compile(r"h([1-9][0-9]*)\Z")


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
    #: Names whose values are free text: commands see them only as ``PERFLAB_<NAME>`` (see ``campaign_values``).
    text: frozenset[str] = frozenset()
    #: Bytes of stdout and of stderr a measured command may write; beyond them the sample fails (None: no cap).
    max_output: int | None = None

    def cells(self) -> list[Cell]:
        """The campaign's cells, in design order (before any schedule)."""
        return cells(self.factors, self.crossing, self.exclude)

    def planned(self) -> dict[str, Any]:
        """What the campaign plans, as ``perflab plan``, the paper's planned values and the tidy table's lineage
        show it: name, tool, design, seed (None until drawn), repetitions, warm-ups, fixed parameters, factor
        levels, cells and samples (cells x (warm-ups + repetitions) x groups)."""
        n = len(self.cells())
        return {"campaign": self.name, "tool": self.tool, "design": self.design, "seed": self.seed,
                "repetitions": self.repetitions, "warmups": self.warmups, "params": dict(self.params),
                "factors": {k: list(v) for k, v in self.factors.items()}, "cells": n,
                "samples": n * (self.warmups + self.repetitions) * max(1, len(self.groups))}

    def lab_hosts(self) -> int:
        """How many hosts the flat lab (h1 .. hN) needs for this campaign: every host it touches, and at least
        the highest N it names, and at least 2."""
        names = self.involved()
        numbered = [int(m[1]) for m in map(LAB_HOST.match, names) if m]
        return max(2, len(names), *numbered)

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
        out = {**self.cell_params(levels), **levels, **per_link,
               **{f"{role}_address": a for role, a in addresses.items()}}
        return {k: Text(v) if k in self.text else v for k, v in out.items()}

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
        requires: list[Mapping[str, Any]] = self.doc.get("requires", [])
        names |= {self.host_of(r["on"]) for r in requires if r["on"] != "all"}
        names |= {self.host_of(t) for t in (self.settle.hosts if self.settle else ())}
        placed: tuple[Step | Neighbour | ServiceDef, ...] = (*self.setup, *self.teardown, *self.neighbours,
                                                              *self.services)
        names |= {self.host_of(s.on) for s in placed}
        return sorted(names)

    def digest(self) -> str:
        """SHA-256 of the campaign's canonical JSON: equal digests mean the same experiment.

        :data:`NOT_DESIGN` is left out: the reconnect and quiet policies change how a lost host or a
        busy machine is waited for, and scratch, text and programs what the campaign may do, not
        what is measured, so a campaign can be resumed with another policy or a permission it lacked.
        """
        # `format` was called `version` before: hashed under that name, a campaign keeps its digest
        design_doc = {"version" if k == "format" else k: v for k, v in self.doc.items() if k not in NOT_DESIGN}
        return hashlib.sha256(json.dumps(design_doc, sort_keys=True).encode()).hexdigest()



def load(path: str | Path, *, text: str | None = None) -> Campaign:
    """Load and validate a campaign file; raise :class:`SpecError` listing every problem."""
    path = str(path)
    doc, lines = declarations.CAMPAIGN.read(path, text=text)
    problems = campaign_checks.problems(doc, lines, path)
    if problems:
        raise SpecError(path, problems)
    spec = from_doc(doc, path)
    if problems := _too_long(spec, lines):
        raise SpecError(path, problems)
    return spec


#: Seconds a sample may be expected to take at most (the tool's estimate; also the most ``timeout`` may say): a
#: week, far beyond any benchmark run, and within what a timer can wait for.
MAX_SAMPLE_SECONDS = 7 * 86400


def _too_long(spec: Campaign, lines: Mapping[tuple, int]) -> list[str]:
    """A problem for a ``timeout`` above :data:`MAX_SAMPLE_SECONDS` and per cell whose samples the tool expects to
    take longer (values within their parameters' ranges can still multiply into that: dd's ``bs`` times ``count``)."""
    tool = tools.get(spec.tool)
    out = []
    if spec.timeout is not None and spec.timeout > MAX_SAMPLE_SECONDS:
        out.append(f"{spec.source}:{line_of(lines, ('timeout',))}: timeout: {spec.timeout:g} s is more than a week "
                   f"({MAX_SAMPLE_SECONDS} s); give a sample at most that")
    for cell in spec.cells():
        for phase, params in spec.phase_params(cell.levels):
            seconds = tool.expected_duration(params)
            if not seconds <= MAX_SAMPLE_SECONDS:
                where = f"cell {cell.slug}" + (f", phase {phase}" if phase else "")
                out.append(f"{spec.source}:{line_of(lines, ('benchmark', 'params'))}: benchmark.params: {tool.name} "
                           f"would take {seconds:.3g} s per sample in {where}, more than a week "
                           f"({MAX_SAMPLE_SECONDS} s); choose parameters for a shorter run")
                break
    return out


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def from_doc(doc: Mapping[str, Any], source: str) -> Campaign:
    """The campaign of a document already checked (a campaign file's, or the one a raw ``campaign.json``
    recorded); nothing is checked again, so a record keeps reading under newer, stricter checks."""
    path = source
    settle = doc.get("settle")
    design = doc.get("design", DEFAULT_DESIGN)
    groups = tuple(dict(g) for g in doc.get("groups", []))
    reconnect: dict[str, Any] = {k: float(v) if k != "attempts" else v for k, v in doc.get("reconnect", {}).items()}
    return Campaign(
        name=doc["campaign"], tool=doc["benchmark"]["tool"], params=doc["benchmark"].get("params", {}),
        hosts=doc_hosts(doc),
        concurrent={role: tuple(Seat(*seat_fields(x)) for x in value) for role, value in doc.get("hosts", {}).items()
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
        # counts as ints: the schema's "integer" also admits a float with no fraction (2.0, -0.0)
        crossing=doc.get("crossing", "grid"), repetitions=int(doc.get("repetitions", 40)),
        warmups=int(doc.get("warmups", 1)), design=design,
        # a randomized order draws its seed at the first run unless one is given; a fixed order needs none
        seed=_int_or_none(doc.get("seed", None if design == "rmit" else 0)),
        timeout=doc.get("timeout"), retries=int(doc.get("retries", 1)), source=path, doc=doc,
        settle=None if settle is None else Settle(
            tuple(settle.get("hosts", sorted(doc_roles(doc)))), float(settle["max_load1"]),
            float(settle.get("timeout", 120)), float(settle.get("poll", 1))),
        setup=tuple(Step(**st) for st in doc.get("setup", [])),
        teardown=tuple(Step(**st) for st in doc.get("teardown", [])),
        neighbours=tuple(Neighbour(n["on"], n["run"], {k: tuple(v) for k, v in n.get("cells", {}).items()})
                         for n in doc.get("neighbours", [])),
        monitors=doc.get("monitors", True), fingerprints=doc.get("fingerprints", True),
        groups=groups, parallel_groups=int(doc.get("parallel_groups", len(groups) or 1)),
        reconnect=Reconnect(**reconnect),
        text=frozenset(doc.get("text", ())), max_output=_int_or_none(doc.get("max_output")),
    )

