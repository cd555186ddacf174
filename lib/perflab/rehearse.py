"""Rehearsal: a campaign's every cell once, at the shortest durations, into scratch, never as evidence.

Before hours on a researcher's machines, ``perflab run CAMPAIGN --rehearse`` checks that the
campaign can start every cell on the inventory's hosts: it asks the hosts (the preflight) what
each cell needs, names every cell whose needs are missing in one line and skips it, then runs
the other cells once (no warm-up, no retry) with the tool's durations and sizes cut to the
shortest (:data:`SHORTEST`) into a scratch directory (default :data:`DEFAULT_ROOT`), never
under ``data/raw``. Its ``campaign.json`` carries ``rehearsal`` (``evidence: false``, the
campaign file it rehearsed, the cells skipped and why), and a study never reads it as data
unless a test copies it there on purpose.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, TextIO

from . import campaign as campaign_mod
from .hosts import preflight
from .inventory import HostEntry
from .campaign import Campaign
from .errors import UserError

#: Where a rehearsal writes when no ``--raw`` is given (``scratch/`` is ignored by git).
DEFAULT_ROOT = "scratch/rehearsal"

#: Tool parameter -> its shortest value in a rehearsal (applied only where the campaign's is longer).
SHORTEST: dict[str, Any] = {"duration": 1, "runtime": 1, "time": 1, "interval": 1, "omit": 0, "ramp_time": 0,
                            "count": 3, "n": 400, "size": "16M"}

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)i?[bB]?$")


class RehearsalError(UserError, ValueError):
    """A rehearsal the user asked for cannot be made (e.g. into ``data/raw``); one line."""


@dataclass
class Outcome:
    """What a rehearsal did: the campaign it ran (None when every cell was skipped) and the cells skipped."""

    campaign: Campaign | None
    raw_dir: Path | None
    #: Cell slug -> the preflight's problems that made it skip.
    skipped: dict[str, list[str]] = field(default_factory=dict)
    complete: bool = False
    failed: list[str] = field(default_factory=list)


def _bytes(value: Any) -> float | None:
    m = _SIZE.match(str(value))
    if not m:
        return None
    return float(m.group(1)) * 1024 ** ("kmgt".find(m.group(2).lower()) + 1) if m.group(2) else float(m.group(1))


def _shorter(name: str, value: Any) -> Any:
    """``value`` of parameter ``name`` cut to :data:`SHORTEST` when it is longer, else unchanged."""
    if name not in SHORTEST or isinstance(value, bool):
        return value
    short = SHORTEST[name]
    if name == "size":
        have, want = _bytes(value), _bytes(short)
        if have is None or want is None or have <= want:
            return value
        return int(want) if isinstance(value, int) else short  # a size in bytes stays a number (blockproto's)
    return short if isinstance(value, (int, float)) and value > short else value


def shortened_doc(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The campaign document of a rehearsal: one repetition, no warm-up or retry, shortest durations and sizes."""
    out = copy.deepcopy(dict(doc))
    params = out["benchmark"].get("params", {})
    out["benchmark"]["params"] = {k: _shorter(k, v) for k, v in params.items()}
    for name, levels in out["factors"].items():
        for level in levels:
            if isinstance(level, dict):
                level["set"] = {k: _shorter(k, v) for k, v in level["set"].items()}
        if len(levels) == 1 and not isinstance(levels[0], dict):
            levels[0] = _shorter(name, levels[0])
    for phase in out.get("phases", []):
        if isinstance(phase, dict) and isinstance(phase.get("set"), dict):
            phase["set"] = {k: _shorter(k, v) for k, v in phase["set"].items()}
    out.update(repetitions=1, warmups=0, retries=0)
    out.pop("timeout", None)
    if out.get("settle"):
        out["settle"] = {**out["settle"], "timeout": min(float(out["settle"].get("timeout", 120)), 5.0)}
    return out


def _applies(item: Mapping[str, Any], levels: Mapping[str, Any]) -> bool:
    return all(str(levels.get(f)) in map(str, want) for f, want in item.get("cells", {}).items())


def cell_problems(campaign: Campaign, hosts: Mapping[str, Any]) -> dict[str, list[str]]:
    """Cell slug -> what its hosts lack (empty list: ready), from one preflight round trip per requirement.

    The tool's own programs and every requirement without ``cells`` concern all cells; a
    requirement with ``cells`` only the cells it selects.
    """
    def asked(doc_changes: dict[str, Any]) -> dict[str, preflight.Needs]:
        return preflight.needs(dataclasses.replace(campaign, doc={**campaign.doc, **doc_changes}))

    common = [p for name, n in asked({"requires": []}).items() if name in hosts
              for p in preflight.missing(hosts[name], n)]
    implicit = asked({"requires": [], "devices": {}})
    per_item = []
    for item in campaign.doc.get("requires", []):
        found = []
        for name, n in asked({"requires": [item], "devices": {}}).items():
            n.commands -= implicit.get(name, preflight.Needs()).commands
            if name in hosts:
                found += preflight.missing(hosts[name], n)
        per_item.append((item, found))
    out = {}
    for cell in campaign.cells():
        out[cell.slug] = common + [p for item, found in per_item if _applies(item, cell.levels) for p in found]
    return out


def _refuse_evidence_root(raw_root: Path) -> None:
    parts = raw_root.resolve().parts
    if any(parts[i] == "data" and parts[i + 1].startswith("raw") for i in range(len(parts) - 1)):
        raise RehearsalError(f"--raw {raw_root}: a rehearsal is not evidence and never goes under data/raw*; "
                             f"give a scratch directory (default {DEFAULT_ROOT})")


def rehearse(campaign: Campaign, entries: Mapping[str, HostEntry], raw_root: str | Path = DEFAULT_ROOT, *,
             stream: TextIO | None = None) -> Outcome:
    """Rehearse ``campaign`` on ``entries`` into ``raw_root``: skip (one line each) the cells whose needs are missing."""
    from . import runner
    from .hosts import remote  # Fabric: only when something runs

    out = stream or sys.stdout
    raw_root = Path(raw_root)
    _refuse_evidence_root(raw_root)
    missing = [n for n in campaign.involved() if n not in entries]
    if missing:
        raise RehearsalError(f"{campaign.source}: hosts {', '.join(missing)} are not in the inventory "
                             f"(it has {', '.join(sorted(entries))}); name them there")
    with remote.connect(entries, campaign.involved()) as hosts:
        problems = cell_problems(campaign, hosts)
    skipped = {slug: p for slug, p in problems.items() if p}
    for slug, p in skipped.items():
        print(f"rehearsal: skip cell {slug}: {'; '.join(p)}", file=out, flush=True)
    cells = campaign.cells()
    if len(skipped) == len(cells):
        print(f"rehearsal of {campaign.name}: every cell skipped; nothing ran", file=out, flush=True)
        return Outcome(None, None, skipped)
    doc = shortened_doc(campaign.doc)
    exclude = list(doc.get("exclude", [])) + [dict(c.levels) for c in cells if c.slug in skipped]
    if exclude:
        doc["exclude"] = exclude
    # The requirements of skipped cells were asked above; the runner's own preflight asks the others again.
    doc["requires"] = [i for i in doc.get("requires", [])
                       if not any(_applies(i, c.levels) for c in cells if c.slug in skipped)]
    short = campaign_mod.load(campaign.source, text=json.dumps(doc, indent=1))
    short = dataclasses.replace(short, doc={**short.doc, "rehearsal": {
        "evidence": False, "of": str(campaign.source), "design_digest": campaign.digest(),
        "skipped": {slug: p for slug, p in skipped.items()}}})
    summary = runner.run(short, entries, raw_root, stream=out)
    print(f"rehearsal of {campaign.name}: {summary.already_done + summary.done} of {summary.planned} cells ran "
          f"once into {summary.raw_dir} (not evidence), {len(skipped)} skipped, {len(summary.failed)} failed",
          file=out, flush=True)
    return Outcome(short, summary.raw_dir, skipped, summary.complete, list(summary.failed))
