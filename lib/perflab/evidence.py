"""The evidence a campaign's raw data gives about how it was measured: alone, the hypervisor's steal, monitored.

For every committed campaign (``data/raw/<campaign>/``) :func:`collect` gathers from the
samples' ``meta.json`` and the blocks' gate records:

- its measurement window (first command's start to last command's end, UTC);
- the samples whose measured commands ran while a sample of another committed campaign
  ran (``overlapping``; per other campaign in ``overlapping_with``): a study's campaigns
  must have none, since all labs of a machine share its CPUs, memory and disks;
- its contention statistics (meta format 4, :mod:`perflab.hosts.contention`), every record
  format judged the same way (:func:`perflab.hosts.contention.classify`): how many samples carry a
  record, how many are ``contended`` and why (steal beyond its bound; CPU outside the lab
  that is not the lab's kernel work beyond its bound), the median and largest CPU used outside
  the lab, the median of it that was the lab's kernel work and of the rest (contention format 2
  on; format 1 cannot tell them apart), the steal during samples (median, 90th percentile and
  largest, for the campaign and per cell) and the gates' waits and the steal they saw;
  campaigns measured before the record existed say so;
- whether monitors ran (samples with a ``monitors/`` directory);
- its cells (from the planned schedule) and how many hold at least
  :data:`~perflab.study.MIN_N` good samples: a study's evidence campaign (one not
  declared ``role: pilot`` or ``calibration``) needs them in
  :data:`~perflab.study.MIN_FULL_CELLS` of its cells.

``perflab verify`` prints :func:`lines` and fails for a study campaign with overlapping
samples or too few samples per cell (:func:`failures`); the paper has :func:`sentence` per campaign through
:func:`macro_values`, and each chapter a table of its campaigns with the heads of their ledgers' hash chains
(:mod:`perflab.report.evidence`, :func:`perflab.ledger.chain`); the review site shows :func:`site_rows`. Before two runs of a campaign are
compared, :func:`host_changes` lists the host facts (:data:`perflab.hosts.fingerprint.MATCH_KEYS`) that differ between
their first fingerprints and :func:`contention_changes` where their steal or CPU used outside the lab differ by
more than the campaign's quiet bounds: two runs on different hosts, or on one host under different platform
noise, measure different machines, and ``perflab compare-runs`` refuses them unless told.
"""

from __future__ import annotations

import bisect
import fnmatch
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import ledger
from .hosts import fingerprint
from .formats import fingerprints, quiet, records
from .campaign import slug_text
from .campaign.design import measured_cell
from .store import LEDGER
from .hosts.contention import STUDY_DEFAULT, classify
from .study import MIN_FULL_CELLS, MIN_N, declaring_study


@dataclass(frozen=True)
class Spread:
    """Median, 90th percentile and largest of a sample of values (shares 0..1 for steal), and how many."""

    median: float
    p90: float
    max: float
    n: int

    @classmethod
    def of(cls, values: list[float]) -> "Spread | None":
        """The spread of ``values``, None when there are none."""
        if not values:
            return None
        p90 = statistics.quantiles(values, n=10, method="inclusive")[8] if len(values) > 1 else values[0]
        return cls(float(statistics.median(values)), float(p90), float(max(values)), len(values))

    def percent(self) -> str:
        """``median a %, p90 b %, max c %`` for shares."""
        return f"median {100 * self.median:.1f} %, p90 {100 * self.p90:.1f} %, max {100 * self.max:.1f} %"


@dataclass
class CampaignEvidence:
    """What a campaign's raw data says about how it was measured (see the module docstring)."""

    campaign: str
    raw_dir: str
    study: str | None
    demo: bool
    samples: int
    start: float | None
    end: float | None
    recorded: int = 0
    contended: int = 0
    #: Samples whose steal exceeded its bound, and whose CPU outside the lab (not its kernel work) exceeded its.
    contended_steal: int = 0
    contended_outside: int = 0
    other_cpus_median: float | None = None
    other_cpus_max: float | None = None
    #: Median CPUs of the kernel's threads outside the lab during a sample (None: not recorded, format 1).
    kernel_cpus_median: float | None = None
    #: Median CPUs of the lab's kernel work outside its cgroups and of the rest outside the lab (None: format 1).
    lab_kernel_cpus_median: float | None = None
    outside_cpus_median: float | None = None
    #: Steal during the samples, for the campaign and per cell (shares of the CPU time, 0..1).
    steal: Spread | None = None
    steal_cells: dict[str, Spread] = field(default_factory=dict)
    #: The steal bound (percent) and the bound on the CPU outside the lab (CPUs) the samples were judged by (None:
    #: not bounded).
    steal_bound: float | None = None
    outside_bound: float | None = None
    gates: int = 0
    gates_gave_up: int = 0
    gate_wait: float = 0.0
    #: The steal the gates saw in their last window before each block (shares).
    gate_steal: Spread | None = None
    monitored: int = 0
    #: ``pilot`` or ``calibration`` where its study declares it so; None: evidence.
    role: str | None = None
    #: Cells of the planned schedule (warm-ups apart; a cell per host group) and those that hold
    #: :data:`MIN_N` good (``ok``, not warm-up) samples.
    cells: int = 0
    cells_full: int = 0
    #: The fewest good samples in a planned cell (None: no cells).
    fewest: int | None = None
    overlapping: int = 0
    overlapping_with: dict[str, int] = field(default_factory=dict)
    #: (start, end) of each sample's measured commands, in time order (not shown; used for overlaps).
    intervals: list[tuple[float, float]] = field(default_factory=list, repr=False)
    #: The ledger's hash chain and its head (None: no ledger).
    chain: ledger.Chain | None = field(default=None, repr=False)
    #: A level as its cells' slugs hold it -> its label as declared (``stressnet`` -> ``stress+net``).
    labels: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def study_campaign(self) -> bool:
        """True for a campaign a (non-demonstration) study declares: it must not overlap another's samples."""
        return self.study is not None and not self.demo

    @property
    def evidence(self) -> bool:
        """True for a study campaign that decides questions: at least :data:`MIN_N` samples per cell."""
        return self.study_campaign and self.role is None

    @property
    def too_few(self) -> bool:
        """True for an evidence campaign with fewer than :data:`MIN_FULL_CELLS` of its cells holding :data:`MIN_N`."""
        return self.evidence and self.cells > 0 and self.cells_full < MIN_FULL_CELLS * self.cells

    @property
    def noisy(self) -> bool:
        """True when the campaign's median steal during samples exceeds its steal bound."""
        return self.steal is not None and self.steal_bound is not None and 100 * self.steal.median > self.steal_bound

    @property
    def window(self) -> str:
        """The measurement window as ``start to end`` in UTC, or ``no samples``."""
        if self.start is None or self.end is None:
            return "no samples"
        start, end = _utc(self.start), _utc(self.end)
        return f"{start} to {end[11:] if end[:10] == start[:10] else end} UTC"

    @property
    def monitors(self) -> str:
        """``all``, ``none`` or ``k of n``: the samples that have monitor files."""
        if self.monitored == self.samples:
            return "all" if self.samples else "none"
        return "none" if not self.monitored else f"{self.monitored} of {self.samples}"


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t))


def _interval(meta: records.SampleMeta) -> tuple[float, float] | None:
    times = [(c["started"], c["ended"]) for c in meta.commands
             if isinstance(c.get("started"), (int, float)) and isinstance(c.get("ended"), (int, float))]
    return (min(a for a, _ in times), max(b for _, b in times)) if times else None


def campaign(raw_dir: str | Path, root: str | Path = ".") -> CampaignEvidence:
    """The evidence of one campaign directory (overlaps with others are filled in by :func:`collect`)."""
    raw_dir, root = Path(raw_dir), Path(root)
    record = records.read_campaign(raw_dir / "campaign.json")
    declared = declaring_study(root / record.source) if record.source else None
    ev = CampaignEvidence(record.campaign, raw_dir.as_posix(), declared.study if declared else None,
                          bool(declared and declared.demo), 0, None, None, role=declared.role if declared else None)
    good = {cell: 0 for cell in _sample_cells(record.schedule)}
    ev.labels = {slug_text(label): label for levels in (record.spec.get("factors") or {}).values()
                 for label in (str(level["label"]) if isinstance(level, dict) else str(level) for level in levels)}
    others: list[float] = []
    kernel: list[float] = []
    lab_kernel: list[float] = []
    outside: list[float] = []
    steal: dict[str, list[float]] = {}
    sample_dirs = sorted(p for p in (raw_dir / "samples").iterdir() if not p.name.startswith(".")) \
        if (raw_dir / "samples").is_dir() else []
    for sdir in sample_dirs:
        try:
            meta = records.read_sample(sdir / "meta.json")
        except (OSError, records.RecordError):
            continue  # a missing or damaged record: the manifest check names it
        ev.samples += 1
        ev.monitored += (sdir / "monitors").is_dir()
        cell = measured_cell(meta.run_id)
        if cell in good and meta.status == "ok" and not meta.warmup:
            good[cell] += 1
        span = _interval(meta)
        if span:
            ev.intervals.append(span)
        if meta.contention is not None:
            judged = classify(meta.contention)
            ev.recorded += 1
            ev.contended += bool(judged["contended"])
            ev.contended_steal += bool(judged["steal_exceeded"])
            ev.contended_outside += bool(judged["outside_exceeded"])
            bounds = meta.contention.get("bounds") or {}
            if bounds.get("max_steal") is not None:
                ev.steal_bound = float(bounds["max_steal"])
            if bounds.get("max_other_cpus") is not None:
                ev.outside_bound = float(bounds["max_other_cpus"])
            if judged["steal"] is not None and not meta.warmup:
                steal.setdefault(cell or "", []).append(float(judged["steal"]))
            for key, into in (("other_cpus", others), ("kernel_cpus", kernel)):
                if meta.contention.get(key) is not None:
                    into.append(float(meta.contention[key]))
            for key, into in (("lab_kernel_cpus", lab_kernel), ("outside_cpus", outside)):
                if judged[key] is not None:
                    into.append(float(judged[key]))
    ev.intervals.sort()
    ev.chain = ledger.chain(raw_dir / LEDGER)
    if ev.intervals:
        ev.start, ev.end = ev.intervals[0][0], max(b for _, b in ev.intervals)
    ev.cells, ev.cells_full = len(good), sum(n >= MIN_N for n in good.values())
    ev.fewest = min(good.values()) if good else None
    if others:
        ev.other_cpus_median, ev.other_cpus_max = statistics.median(others), max(others)
    if kernel:
        ev.kernel_cpus_median = statistics.median(kernel)
    if outside:
        ev.lab_kernel_cpus_median, ev.outside_cpus_median = statistics.median(lab_kernel), statistics.median(outside)
    ev.steal = Spread.of(sum(steal.values(), []))
    ev.steal_cells = {cell: spread for cell, values in sorted(steal.items()) if (spread := Spread.of(values))}
    gate_steal: list[float] = []
    for gate in sorted(raw_dir.glob("blocks/*/quiet*.json")):
        doc = quiet.read_gate(gate)
        ev.gates += 1
        ev.gates_gave_up += not doc.get("quiet", True)
        ev.gate_wait += float(doc.get("waited", 0.0))
        seen = doc.get("steal", (doc.get("last") or {}).get("steal"))  # format 3 states it; older in "last"
        if seen is not None:
            gate_steal.append(float(seen))
    ev.gate_steal = Spread.of(gate_steal)
    return ev


def _sample_cells(schedule: list[str]) -> list[str]:
    """The cells a planned schedule measures, in first-seen order."""
    return list(dict.fromkeys(c for c in map(measured_cell, schedule) if c is not None))


def _merged(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sorted intervals merged where they touch or overlap."""
    out: list[tuple[float, float]] = []
    for a, b in intervals:
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _overlaps(span: tuple[float, float], merged: list[tuple[float, float]], starts: list[float]) -> bool:
    """True when ``span`` shares a moment with one of the ``merged`` intervals (``starts`` their starts)."""
    i = bisect.bisect_left(starts, span[1])  # intervals starting before span ends
    return i > 0 and merged[i - 1][1] > span[0]


def collect(raw_root: str | Path, root: str | Path = ".") -> list[CampaignEvidence]:
    """The evidence of every campaign under ``raw_root``, with the samples that overlap another campaign's."""
    raw_root = Path(raw_root)
    dirs = sorted(p for p in raw_root.iterdir() if p.is_dir() and (p / "campaign.json").exists()) \
        if raw_root.is_dir() else []
    found = [campaign(d, root) for d in dirs]
    merged = {ev.campaign: _merged(ev.intervals) for ev in found}
    starts = {name: [a for a, _ in m] for name, m in merged.items()}
    for ev in found:
        for span in ev.intervals:
            hit = [o.campaign for o in found if o is not ev and _overlaps(span, merged[o.campaign], starts[o.campaign])]
            ev.overlapping += bool(hit)
            for name in hit:
                ev.overlapping_with[name] = ev.overlapping_with.get(name, 0) + 1
    return found


def failures(found: list[CampaignEvidence]) -> list[str]:
    """One line per study campaign whose samples overlap another campaign's, and per evidence campaign with
    too few samples per cell (none when every study campaign was measured alone at its n)."""
    overlapping = [f"{ev.raw_dir}: {ev.overlapping} of {ev.samples} samples of study {ev.study}'s campaign "
                   f"{ev.campaign} ran while another campaign measured ({_with(ev)}); a study's samples are measured "
                   f"alone: measure it again (`make rerun CAMPAIGN={ev.campaign}`) with nothing else measuring"
                   for ev in found if ev.study_campaign and ev.overlapping]
    short = [f"{ev.raw_dir}: study {ev.study}'s campaign {ev.campaign} has {MIN_N} or more good samples in "
             f"{ev.cells_full} of its {ev.cells} cells (fewest {ev.fewest}); a study's evidence holds {MIN_N} in "
             f"{MIN_FULL_CELLS:.0%} of its cells: measure it at n >= {MIN_N}, or declare it `role: pilot` (or "
             f"`calibration`) in the study's campaigns if it decides no question"
             for ev in found if ev.too_few]
    return overlapping + short


def study_overlaps(root: str | Path = ".") -> int:
    """The samples of the studies' campaigns, in ``<root>/data/raw``, that overlap another campaign's (must be 0)."""
    return sum(ev.overlapping for ev in collect(Path(root) / "data/raw", root) if ev.study_campaign)


def _with(ev: CampaignEvidence) -> str:
    return ", ".join(f"{name}: {n}" for name, n in sorted(ev.overlapping_with.items(), key=lambda x: (-x[1], x[0])))


def cell_words(cell: str, labels: dict[str, str] | None = None) -> str:
    """A cell's slug (``device_class-hdd_workload-randwrite``) in words ("device class hdd, workload randwrite"):
    its ``factor-level`` parts, a factor's underscores read as spaces, a level by its declared label where
    ``labels`` (:attr:`CampaignEvidence.labels`) has it (the slug drops a label's ``+``)."""
    parts: list[str] = []
    for token in cell.split("_"):  # a token without "-" is the start of a factor's name that holds "_"
        parts.append(f"{parts.pop()}_{token}" if parts and "-" not in parts[-1] else token)
    labels = labels or {}
    return ", ".join(" ".join((factor.replace("_", " "), labels.get(level, level))) if level
                     else factor.replace("_", " ") for factor, _, level in (part.partition("-") for part in parts))


def steal_words(ev: CampaignEvidence) -> str:
    """What the hypervisor took during ``ev``'s samples, against the bound, in words ("" without records)."""
    if ev.steal is None:
        return ""
    bound = "" if ev.steal_bound is None else (
        f", {'beyond' if ev.noisy else 'within'} the bound of {ev.steal_bound:g} % in the median")
    cells = ""
    if len(ev.steal_cells) > 1:
        (lo, a), (hi, b) = (min(ev.steal_cells.items(), key=lambda kv: kv[1].median),
                            max(ev.steal_cells.items(), key=lambda kv: kv[1].median))
        low, high = f"{100 * a.median:.1f}", f"{100 * b.median:.1f}"
        cells = (f"; per cell, the median steal was {low} % in every cell" if low == high else
                 f"; per cell, the median steal ranged from {low} % ({cell_words(lo, ev.labels)}) to "
                 f"{high} % ({cell_words(hi, ev.labels)})")
    return f"the hypervisor took {ev.steal.percent()} of the CPU time during the samples (steal{bound}){cells}"


def machine(ev: CampaignEvidence) -> str:
    """How ``ev``'s machine was, for a chapter's "measured ..." phrase: the steal during the samples, and whether
    its median is within the gate's bound or above it."""
    if ev.steal is None:
        return "alone (the machine's contention was not recorded)"
    if ev.noisy:
        return (f"alone, but with the hypervisor taking {ev.steal.percent()} of the CPU time during the samples "
                f"(steal, its median above the gate's bound of {ev.steal_bound:g} %)")
    bound = f", its median within the gate's bound of {ev.steal_bound:g} %" if ev.steal_bound is not None else ""
    return f"alone, the hypervisor taking {ev.steal.percent()} of the CPU time during the samples (steal{bound})"


def sentence(ev: CampaignEvidence) -> str:
    """One plain sentence on how ``ev`` was measured, for a chapter or a page."""
    parts = [f"Campaign {ev.campaign} stored {ev.samples} sample{'' if ev.samples == 1 else 's'}, measured {ev.window}"]
    parts.append(f"{ev.overlapping} of them ran while another campaign measured ({_with(ev)})" if ev.overlapping
                 else "none of them ran while another campaign measured")
    if not ev.recorded:
        parts.append("the machine's contention was not recorded (measured before perflab recorded it)")
    else:
        cpu = (f"; the CPU used outside the lab had a median of {ev.other_cpus_median:.2f} and a maximum of "
               f"{ev.other_cpus_max:.2f} CPUs" if ev.other_cpus_median is not None else "")
        if cpu and ev.outside_cpus_median is not None and ev.lab_kernel_cpus_median is not None:
            cpu += (f", of which the lab's own kernel work (softirq, loop and block workers, writeback) had a median "
                    f"of {ev.lab_kernel_cpus_median:.2f} and other processes one of {ev.outside_cpus_median:.2f} CPUs")
        elif cpu:
            cpu += " (its records cannot tell the lab's kernel work from other processes)"
        gates = (f", {ev.gates_gave_up} of {ev.gates} blocks began after the quiet gate gave up waiting"
                 if ev.gates_gave_up else "")
        why = (f" ({ev.contended_steal} for steal beyond its bound, {ev.contended_outside} for other processes' CPU "
               "beyond its bound)" if ev.contended else "")
        parts.append(f"{ev.contended} of the {ev.recorded} samples with a contention record were contended{why}"
                     f"{gates}{cpu}")
        if ev.steal is not None:
            parts.append(steal_words(ev))
    parts.append(f"monitors ran for {ev.monitors} samples" if ev.monitors not in ("all", "none")
                 else f"monitors ran for {'every' if ev.monitors == 'all' else 'no'} sample")
    return "; ".join(parts) + "."


def lines(found: list[CampaignEvidence]) -> list[str]:
    """The evidence summary ``perflab verify`` prints: a line per campaign, then the study campaigns' total."""
    out = ["evidence (measurement window; samples overlapping another campaign's; contended; monitors; cells "
           "holding the n):"]
    for ev in found:
        kind = f"study {ev.study}" if ev.study_campaign else (f"demo {ev.study}" if ev.study else "no study")
        kind += f", {ev.role}" if ev.role else ""
        cells = f"; {ev.cells_full}/{ev.cells} cells with >= {MIN_N}" if ev.cells else ""
        contention = f"{ev.contended}/{ev.recorded} contended" if ev.recorded else "contention not recorded"
        contention += f" (steal {ev.steal.percent()})" if ev.steal else ""
        out.append(f"  {ev.campaign} ({kind}): {ev.window}; {ev.overlapping}/{ev.samples} overlapping"
                   + (f" ({_with(ev)})" if ev.overlapping else "") + f"; {contention}; monitors {ev.monitors}{cells}")
    studies = [ev for ev in found if ev.study_campaign]
    out.append(f"  study campaigns: {sum(ev.overlapping for ev in studies)} overlapping sample(s) in "
               f"{sum(ev.samples for ev in studies)} ({len(studies)} campaigns; must be 0); "
               f"{sum(ev.too_few for ev in studies)} evidence campaign(s) short of {MIN_N} per cell (must be 0)")
    return out


def macro_values(found: list[CampaignEvidence]) -> dict[str, str]:
    """Inline values for the chapters, as plain text (the report escapes them for LaTeX).

    Per campaign, ``<campaign>/evidence/`` ``sentence``, ``machine`` (:func:`machine`), ``samples``,
    ``overlapping``, ``recorded``, ``contended``, ``steal/median``, ``steal/p90``, ``steal/max`` (percent) and
    ``chain`` (the head of its ledger's hash chain, unbroken). A chapter's table of how its campaigns were
    measured is :func:`perflab.report.evidence.table`.
    """
    out: dict[str, str] = {}
    for ev in found:
        key = f"{ev.campaign}/evidence"
        out[f"{key}/sentence"] = sentence(ev)
        out[f"{key}/machine"] = machine(ev)
        for name in ("median", "p90", "max"):
            out[f"{key}/steal/{name}"] = f"{100 * getattr(ev.steal, name):.1f}" if ev.steal else "--"
        for name in ("samples", "overlapping", "recorded", "contended"):
            out[f"{key}/{name}"] = str(getattr(ev, name))
        out[f"{key}/chain"] = ev.chain.head if ev.chain else ""
    return out


def _spread(spread: Spread | None) -> dict[str, float | int] | None:
    return None if spread is None else asdict(spread)


def site_rows(found: list[CampaignEvidence]) -> list[dict[str, Any]]:
    """One plain dict per campaign for the review site (a table row each) and ``perflab evidence --json``:
    steal is given as shares of the CPU time (0..1), for the campaign and per cell."""
    return [{"campaign": ev.campaign, "study": ev.study, "study_campaign": ev.study_campaign, "window": ev.window,
             "samples": ev.samples, "overlapping": ev.overlapping, "overlapping_with": dict(ev.overlapping_with),
             "recorded": ev.recorded, "contended": ev.contended, "contended_steal": ev.contended_steal,
             "contended_outside": ev.contended_outside, "other_cpus_median": ev.other_cpus_median,
             "other_cpus_max": ev.other_cpus_max, "lab_kernel_cpus_median": ev.lab_kernel_cpus_median,
             "outside_cpus_median": ev.outside_cpus_median, "steal": _spread(ev.steal),
             "steal_cells": {cell: _spread(s) for cell, s in ev.steal_cells.items()},
             "cell_words": {cell: cell_words(cell, ev.labels) for cell in ev.steal_cells}, "steal_bound": ev.steal_bound,
             "quiet": None if ev.steal is None else not ev.noisy, "gates": ev.gates,
             "gates_gave_up": ev.gates_gave_up, "gate_wait": round(ev.gate_wait, 3), "gate_steal": _spread(ev.gate_steal),
             "monitors": ev.monitors, "sentence": sentence(ev)} for ev in found]


def _first_fingerprints(raw_dir: Path) -> dict[str, dict]:
    """Host -> the fingerprint taken before the run's first block."""
    blocks = sorted((p for p in (raw_dir / "blocks").glob("*") if p.name.lstrip("-").isdigit()), key=lambda p: int(p.name))
    if not blocks:
        return {}
    return {p.name[len("fingerprint-before-"):-len(".json")]: fingerprints.read(p)
            for p in sorted(blocks[0].glob("fingerprint-before-*.json"))}


def host_changes(old_dir: str | Path, new_dir: str | Path) -> list[str]:
    """The matched host facts that differ between the first fingerprints of two runs, one sentence each."""
    old, new = _first_fingerprints(Path(old_dir)), _first_fingerprints(Path(new_dir))
    out = [f"host {h} is in only one of the runs" for h in sorted(old.keys() ^ new.keys())]
    for host in sorted(old.keys() & new.keys()):
        out += fingerprint.describe([d for d in fingerprint.diff(old[host], new[host])
                                     if any(fnmatch.fnmatchcase(d.key, p) for p in fingerprint.MATCH_KEYS)])
    return out


def contention_changes(old_dir: str | Path, new_dir: str | Path, root: str | Path = "."
                       ) -> tuple[list[str], list[str]]:
    """The two runs' contention side by side (lines) and where they differ beyond the quiet bounds (sentences).

    Differ: the median steal during samples, or the median CPU used outside the lab that is not the lab's
    kernel work, differs between the runs by more than its bound (the runs' own, else the study default).
    """
    evs = [campaign(Path(d), root) for d in (old_dir, new_dir)]

    def said(ev: CampaignEvidence) -> dict[str, str]:
        if not ev.recorded:
            return {"steal": "not recorded", "contended": "not recorded", "outside the lab": "not recorded"}
        return {"steal": ev.steal.percent() if ev.steal else "not recorded",
                "contended": f"{ev.contended}/{ev.recorded} (steal {ev.contended_steal}, outside {ev.contended_outside})",
                "outside the lab": ("not separable (format 1)" if ev.outside_cpus_median is None
                                    else f"median {ev.outside_cpus_median:.2f} CPUs")}

    sides = [said(ev) for ev in evs]
    width = max(len(v) for v in sides[0].values()) + 2
    lines = [f"contention  {'old: ' + str(old_dir):<{width + 5}} new: {new_dir}"]
    lines += [f"  {key:<16}{sides[0][key]:<{width}}    {sides[1][key]}" for key in sides[0]]
    differs = []
    steal_bound = next((ev.steal_bound for ev in evs if ev.steal_bound is not None), STUDY_DEFAULT.max_steal)
    old, new = evs
    if old.steal and new.steal and steal_bound is not None and abs(old.steal.median - new.steal.median) * 100 > steal_bound:
        differs.append(f"the median steal differs ({100 * old.steal.median:.1f} % old, {100 * new.steal.median:.1f} % "
                       f"new) by more than the bound of {steal_bound:g} %")
    cpu_bound = next((ev.outside_bound for ev in evs if ev.outside_bound is not None),
                     STUDY_DEFAULT.max_other_cpus)
    if (old.outside_cpus_median is not None and new.outside_cpus_median is not None and cpu_bound is not None
            and abs(old.outside_cpus_median - new.outside_cpus_median) > cpu_bound):
        differs.append(f"the median CPU used outside the lab differs ({old.outside_cpus_median:.2f} old, "
                       f"{new.outside_cpus_median:.2f} new CPUs) by more than the bound of {cpu_bound:g} CPUs")
    return lines, differs
