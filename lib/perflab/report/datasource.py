"""The sentence a chapter prints about its data: the lab stand-in or real hosts, with the hosts' facts.

The declarations (which campaign's data a study's analyses read) are :mod:`perflab.datasource`'s;
this module writes what the paper says about them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from .. import datasource
from ..formats import fingerprints, records
from ..hosts.fingerprint import summary
from .latex import escape_latex


def hosts_facts(root: str | Path, campaign: str) -> list[str]:
    """One phrase per host of ``campaign``'s first fingerprinted block (group 0 first): CPU, SMT, kernel."""
    blocks = sorted((Path(root) / datasource.RAW_ROOT / campaign / "blocks").glob("*"),
                    key=lambda p: (len(p.name), p.name))
    for block in blocks:
        found = sorted(block.glob("fingerprint-before-*.json"))
        if found:
            return [summary(fingerprints.read(p)) for p in found]
    return []


def sentence(root: str | Path, source: datasource.Source) -> str:
    """What a chapter says about the data of ``source``: which campaign, on what, with the hosts' facts."""
    facts = "; ".join(hosts_facts(root, source.used)) or "no fingerprints"
    if source.kind == "lab stand-in":
        where = (source.lab_inventory or "lab").removeprefix("labfile:")
        return (f"the lab stand-in (campaign {source.lab} on {where}; {facts}); the real-hosts campaign "
                f"{source.real} ({source.real_file}) has no committed data")
    record = records.read_campaign(Path(root) / datasource.RAW_ROOT / source.used / "campaign.json")
    rehearsal = record.spec.get("rehearsal")
    return (f"real hosts (campaign {source.real}; {facts})"
            + ("; a rehearsal, not evidence" if rehearsal and not rehearsal.get("evidence", True) else ""))


def macros(studies: Iterable[Any], root: str | Path = ".") -> str:
    """``\\plset`` lines of the data sentence of every declared pair of ``studies`` (LaTeX-escaped)."""
    return "".join(f"\\plset{{{s.study}/data/{s.lab}}}{{{escape_latex(sentence(root, s))}}}\n"
                   for st in studies for s in st.sources)
