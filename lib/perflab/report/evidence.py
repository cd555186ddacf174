"""How each study's campaigns were measured, as one table per study for its chapter.

A row per campaign: the samples stored, the measurement window, the samples contended (for steal and for
other processes' CPU), the CPU used outside the lab, the hypervisor's steal and the head of the ledger's hash
chain. The values are :mod:`perflab.evidence`'s; this module only sets them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from .. import store
from ..evidence import CampaignEvidence
from . import latex, lineage

#: Hex digits of a ledger's chain head a table prints (``perflab verify`` prints all 64).
HEAD_DIGITS = 16


def _window(ev: CampaignEvidence) -> str:
    """``2026-11-26 15:45--16:41``: the window without its "UTC" (the header says it), a dash for "to"."""
    return ev.window.removesuffix(" UTC").replace(" to ", "--")


def _contended(ev: CampaignEvidence) -> str:
    if not ev.recorded:
        return "not recorded"
    return f"{ev.contended}/{ev.recorded} ({ev.contended_steal}, {ev.contended_outside})"


def _outside(ev: CampaignEvidence) -> str:
    if ev.other_cpus_median is None or ev.other_cpus_max is None:
        return "--"
    return f"{ev.other_cpus_median:.2f} ({ev.other_cpus_max:.2f})"


def _steal(ev: CampaignEvidence) -> str:
    if ev.steal is None:
        return "--"
    return f"{100 * ev.steal.median:.1f}, {100 * ev.steal.p90:.1f}, {100 * ev.steal.max:.1f}"


def _head(ev: CampaignEvidence) -> str:
    if ev.chain is None:
        return "no ledger"
    return f"\\texttt{{{ev.chain.head[:HEAD_DIGITS]}}}" + ("" if ev.chain.chained else "$^\\dagger$")


def frame(found: Sequence[CampaignEvidence]) -> pd.DataFrame:
    """The table's rows for ``found`` (LaTeX already in the cells: campaign names are escaped here)."""
    return pd.DataFrame([{"Campaign": latex.escape_latex(ev.campaign), "Samples": str(ev.samples),
                          "Measured (UTC)": _window(ev), "Contended": _contended(ev),
                          "CPUs outside": _outside(ev), "Steal (\\%)": _steal(ev), "Ledger": _head(ev)}
                         for ev in found])


def note(found: Sequence[CampaignEvidence]) -> str:
    """The table's note: what each column holds, the bounds, overlaps and monitors in words."""
    bounds = sorted({ev.steal_bound for ev in found if ev.steal_bound is not None})
    bound = (f" (the gate's bound: {', '.join(f'{b:g}' for b in bounds)}\\,\\% in the median)" if bounds else "")
    overlapping = [ev for ev in found if ev.overlapping]
    overlaps = ("No sample of these campaigns ran while another campaign measured. " if not overlapping else
                "Samples that ran while another campaign measured: "
                + "; ".join(f"{latex.escape_latex(ev.campaign)} {ev.overlapping}" for ev in overlapping) + ". ")
    unmonitored = [ev for ev in found if ev.monitors != "all"]
    monitors = ("Monitors ran for every sample." if not unmonitored else
                "Monitors ran for every sample except in "
                + "; ".join(f"{latex.escape_latex(ev.campaign)} ({ev.monitors})" for ev in unmonitored) + ".")
    old = any(ev.chain is not None and not ev.chain.chained for ev in found)
    return ("Samples: stored, warm-ups included. Contended: samples whose contention record exceeded a bound, of "
            "those with a record; in parentheses, those beyond the steal bound and those beyond the bound on other "
            "processes' CPU. CPUs outside: CPUs busy outside the lab during a sample, median (maximum). Steal: the "
            f"share of the CPU time the hypervisor took during the samples, median, 90th percentile and maximum{bound}. "
            f"Ledger: the first {HEAD_DIGITS} hex digits of the head of the ledger's hash chain "
            "(\\texttt{perflab verify} prints all 64)"
            + ("; $^\\dagger$: a ledger written before the chain, whose SHA-256 is shown" if old else "") + ". "
            + overlaps + monitors)


def table(study: str, found: Sequence[CampaignEvidence]) -> str:
    """The LaTeX table of how ``study``'s campaigns in ``found`` were measured, in the order they began (label
    ``tab:<study>-evidence``)."""
    mine = sorted((ev for ev in found if ev.study == study), key=lambda ev: (ev.start is None, ev.start or 0.0))
    return latex.latex_table(frame(mine), caption="How the campaigns of this study were measured, from their raw data",
                             label=f"tab:{study}-evidence", notes=[note(mine)], escape=False, narrow=True)


def write(found: Sequence[CampaignEvidence], out_dir: str | Path) -> list[Path]:
    """Write ``<study>-evidence.tex`` (and its lineage) into ``out_dir`` for every study with a campaign in
    ``found``; return the files written."""
    written = []
    for study in sorted({ev.study for ev in found if ev.study}):
        out = lineage.atomic_text(Path(out_dir) / f"{study}-evidence.tex", table(study, found))
        lineage.write([out], [Path(ev.raw_dir) / store.MANIFEST for ev in found if ev.study == study],
                      generator="perflab evidence --tables")
        written.append(out)
    return written
