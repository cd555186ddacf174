"""Raw records on disk: the campaign record, a sample's ``meta.json`` and the ledger's events.

Each record is a dataclass written as plain JSON with a ``format`` version. Every reader
checks the version and refuses one it does not know, naming the file and the versions it
reads, as pyperf does for its JSON. The runner writes these records, the tidy stage and the
benchmarks read them; no other module builds them by hand.

Format history (add a line for every change, and bump the version of that record):

- ``campaign.json`` format 1 (perflab 0.1): ``campaign``, ``design_digest``, ``spec`` (the
  resolved campaign document), ``source`` (the campaign file), ``perflab``, ``python``,
  ``schedule`` (planned run ids in order), ``inventory`` (host -> address, local).
- ``meta.json`` format 1 (perflab 0.1): the run (``run_id``, ``cell``, ``cell_index``,
  ``repetition``, ``warmup``, ``block``, ``position``, ``seed``, ``attempt``), its outcome
  (``status`` ok/failed, ``reason``), ``roles``, the measured ``commands`` (argv, host,
  exit code, start and end), ``settle``, ``neighbours`` running, ``perflab``; with host
  groups also ``group`` and ``group_hosts``.
- ``meta.json`` format 2 (perflab 0.1, campaign ``services``): adds ``services``, the declared
  services running during the sample (host, command, name, scope). Format 1 is still read
  (as ``services: []``).
- ``meta.json`` format 3 (perflab 0.1, several hosts per role, phases, verified setup): each
  entry of ``commands`` names its raw files (``stdout``, ``stderr``: ``stdout`` for the first
  command, ``stdout@<host>`` for another host of its role, ``stdout+<phase>`` for a later
  phase, ``stdout.<role>`` for another role) and, with phases, its ``phase``; ``verified``
  names the ``verify/`` record of the checks that established the sample's cell (None
  without checks). Formats 1 and 2 are still read (their output is ``stdout``/``stderr``).
- ``meta.json`` format 4 (perflab 0.1, quiet machine): adds ``contention``, the machine's
  contention during the measured commands and whether the sample is ``contended``
  (:func:`perflab.hosts.contention.delta`, its own ``format`` key). Formats 1 to 3 are still read
  (as ``contention: null``: not recorded).
- ``verify/<time>-c<cell>[-g<group>].json`` format 1 (perflab 0.1): the ``verify`` checks run
  after a cell's setup (or teardown) steps: ``campaign``, ``kind``, ``cell``, ``cell_index``,
  ``levels``, ``group`` and ``checks`` (per step: ``step``, ``host``, ``run``, ``verify``,
  ``exit_code``, ``started_utc``, ``stdout``, ``stderr``; outputs are decoded as UTF-8 with
  ``surrogateescape``, so ``text.encode("utf-8", "surrogateescape")`` gives the bytes back).
- ledger event format 1 (perflab 0.1): one JSON object per line of ``ledger.jsonl`` with
  ``t``, ``run_id``, ``state`` (running/done/failed), ``attempt`` and, for failures,
  ``reason``. Lines written before the field existed carry no ``format``; they are format 1.
- ledger event format 2 (perflab 0.1, tamper evidence): adds ``prev``, the link of the hash
  chain (:func:`perflab.ledger.chain`: the SHA-256 of the line before it, or for the first
  event of format 2 the SHA-256 of ``campaign.json``'s bytes followed by the ledger's earlier
  bytes) and, for ``done`` and ``failed`` events, ``files``: the SHA-256 of each file of the
  stored sample (or failed attempt), by its path inside the sample's directory. Format 1 is
  still read (no chain: ``prev`` and ``files`` are None).
- ``gaps/<host>-<time>.json`` format 1 (perflab 0.1, campaign ``reconnect``): a host's lost
  connection: ``campaign``, ``host``, ``address``, ``group``, ``lost_at`` and ``lost_utc``,
  ``lost`` (the message: what was running), ``attempts`` (per reconnection attempt: ``waited``
  seconds before it, ``at``, ``error`` or null), ``back_at`` (null when the host stayed away),
  ``outcome`` (reconnected, gave up, refused), ``policy`` (the ``reconnect`` values),
  ``stopped`` (processes of the campaign's registry killed on the host once it was back),
  ``perflab``.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from .versions import FormatError, refuse

#: Format versions this perflab writes (and the only ones it reads).
CAMPAIGN_FORMAT = 1
SAMPLE_FORMAT = 4
LEDGER_FORMAT = 2
GAP_FORMAT = 1
VERIFY_FORMAT = 1
#: Older formats a reader still accepts, per record.
_READS = {"campaign record": {1}, "sample record": {1, 2, 3, 4}, "ledger event": {1, 2}, "gap record": {1},
          "verify record": {1}}


class RecordError(FormatError):
    """A raw record is of an unknown format or misses a field; the message names the file."""


def _check(kind: str, data: Mapping[str, Any], where: str) -> None:
    version = data.get("format", 1 if kind == "ledger event" else None)
    known = _READS[kind]
    if version not in known:
        raise refuse(where, kind, version, known, error=RecordError)


@functools.cache
def _fields(cls: type) -> tuple[frozenset[str], tuple[str, ...]]:
    """A record class's field names, and those without a default (asked once per class: tidy reads every sample)."""
    return (frozenset(f.name for f in fields(cls)),
            tuple(f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING))


def _build(cls: type, data: Mapping[str, Any], where: str, kind: str) -> Any:
    names, required = _fields(cls)
    missing = [name for name in required if name not in data]
    if missing:
        raise RecordError(f"{kind} lacks field(s) {', '.join(missing)}; the file is damaged or not perflab's", file=where)
    return cls(**{k: v for k, v in data.items() if k in names})


def _dumps(record: Any) -> str:
    return json.dumps(asdict(record), indent=1, default=str) + "\n"


@dataclass(frozen=True)
class CampaignRecord:
    """What a campaign directory holds: the resolved campaign, its design digest and the planned schedule."""

    campaign: str
    design_digest: str
    spec: dict[str, Any]
    source: str
    perflab: str
    python: str
    schedule: list[str]
    inventory: dict[str, dict[str, Any]]
    format: int = CAMPAIGN_FORMAT

    def to_json(self) -> str:
        """The record as written to ``campaign.json``."""
        return _dumps(self)


@dataclass(frozen=True)
class SampleMeta:
    """One stored attempt of a planned run: where it sits in the design, what ran, and how it ended."""

    campaign: str
    run_id: str
    tool: str
    cell: dict[str, Any]
    cell_index: int
    repetition: int
    warmup: bool
    block: int
    position: int
    seed: int | None
    attempt: int
    status: str
    reason: str | None
    roles: dict[str, str]
    commands: list[dict[str, Any]]
    settle: dict[str, Any] | None
    neighbours: list[dict[str, str]]
    perflab: str
    group: int | None = None
    group_hosts: dict[str, str] | None = None
    services: list[dict[str, str]] = field(default_factory=list)
    #: The ``verify/`` record of the checks that established this sample's cell (None: no checks).
    verified: str | None = None
    #: The machine's contention during the measured commands (None: not recorded, formats 1 to 3).
    contention: dict[str, Any] | None = None
    format: int = SAMPLE_FORMAT

    def outputs(self) -> list[dict[str, Any]]:
        """The entries of ``commands`` whose output the tool parses: its first command's role, on every host
        and in every phase, each with its ``stdout`` and ``stderr`` file names (formats 1 and 2: ``stdout``)."""
        named = [c for c in self.commands if "stdout" in c]
        if not named:  # formats 1 and 2 name no files: the first command's output is stdout
            return [{**(self.commands[0] if self.commands else {}), "stdout": "stdout", "stderr": "stderr"}]
        return [c for c in named if c.get("role") == named[0].get("role")]

    def to_json(self) -> str:
        """The record as written to ``meta.json`` (group fields only for grouped campaigns)."""
        data = asdict(self)
        if self.group is None:
            data.pop("group"), data.pop("group_hosts")
        return json.dumps(data, indent=1, default=str) + "\n"


@dataclass(frozen=True)
class VerifyRecord:
    """The checks (``verify``) run after a cell's setup or teardown steps, with their outputs."""

    campaign: str
    kind: str
    cell: str
    cell_index: int
    levels: dict[str, Any]
    group: int | None
    checks: list[dict[str, Any]]
    format: int = VERIFY_FORMAT

    def to_json(self) -> str:
        """The record as written under ``verify/``."""
        return _dumps(self)


@dataclass(frozen=True)
class LedgerEvent:
    """One state change of a planned run in ``ledger.jsonl``."""

    t: float
    run_id: str
    state: str
    attempt: int | None = None
    reason: str | None = None
    #: SHA-256 of each file of the stored sample or failed attempt (``done``/``failed``; None: format 1).
    files: dict[str, str] | None = None
    #: The hash chain's link to the event before (None: format 1, no chain; see :func:`perflab.ledger.chain`).
    prev: str | None = None
    format: int = LEDGER_FORMAT

    def to_line(self) -> str:
        """The event as one JSON line (no ``reason`` unless failed, no ``files`` unless a sample was stored)."""
        data = asdict(self)
        for key in ("reason", "files"):
            if data[key] is None:
                data.pop(key)
        return json.dumps(data) + "\n"


@dataclass(frozen=True)
class HostGap:
    """A host whose connection dropped during a run: when, what ran, each reconnection attempt, the outcome."""

    campaign: str
    host: str
    address: str
    group: int | None
    lost_at: float
    lost_utc: str
    lost: str
    attempts: list[dict[str, Any]]
    back_at: float | None
    outcome: str
    policy: dict[str, float]
    stopped: list[str]
    perflab: str
    format: int = GAP_FORMAT

    def to_json(self) -> str:
        """The record as written to ``gaps/<host>-<time>.json``."""
        return _dumps(self)


def _read(path: str | Path, cls: type, what: str, text: str | None = None) -> Any:
    """Read the JSON record at ``path`` (or parse its ``text``, already read), check its kind and version,
    and build ``cls`` from it."""
    where = str(path)
    data = _load(path, text)
    _check(what, data, where)
    return _build(cls, data, where, what)


def read_campaign(path: str | Path, text: str | None = None) -> CampaignRecord:
    """Read and check a ``campaign.json`` (``text``: its content, when the caller has read it already)."""
    return _read(path, CampaignRecord, "campaign record", text)


def read_sample(path: str | Path, text: str | None = None) -> SampleMeta:
    """Read and check a sample's ``meta.json`` (``text``: its content, when the caller has read it already)."""
    return _read(path, SampleMeta, "sample record", text)


def read_gap(path: str | Path) -> HostGap:
    """Read and check a ``gaps/<host>-<time>.json``."""
    return _read(path, HostGap, "gap record")


def read_verify(path: str | Path) -> VerifyRecord:
    """Read and check a ``verify/`` record."""
    return _read(path, VerifyRecord, "verify record")


def parse_event(line: str, where: str) -> LedgerEvent:
    """Parse one ledger line (``where`` is ``file:line`` for errors)."""
    data = json.loads(line)
    if not isinstance(data, dict):
        raise RecordError("a ledger line must be a JSON object", file=where)
    _check("ledger event", data, where)
    return _build(LedgerEvent, data, where, "ledger event")


def event_object(line: str | bytes) -> dict[str, Any] | None:
    """A ledger line's JSON object as written, unchecked (None when the line is none: torn or not JSON); the hash
    chain reads lines so, whatever their format."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _load(path: str | Path, text: str | None = None) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text() if text is None else text, parse_constant=lambda c: math.nan)
    except json.JSONDecodeError as exc:
        raise RecordError(f"not valid JSON ({exc.msg}); raw records are never edited, restore the original file",
                          file=path, line=exc.lineno) from None
    if not isinstance(data, dict):
        raise RecordError("expected a JSON object", file=path)
    return data
