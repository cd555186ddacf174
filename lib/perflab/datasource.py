"""Lab or real data, declared: which campaign's data a study's analyses read, and the sentence saying so.

A study declares a lab campaign's real-hosts counterpart beside it (``real_hosts:`` in a
``campaigns`` entry of ``study.yaml``, a file under ``real-hosts/`` with the same factors and
levels). Its analyses read the counterpart's data as soon as they are committed, complete
(``data/raw/<id>/campaign.json`` and its ``MANIFEST.sha256``), and the lab campaign's
otherwise; nobody edits the declaration to switch. Output names stay the lab campaign's, so
the chapter builds from either. :func:`perflab.report.datasource.macros` gives each such pair an
inline value, ``\\plv{<study>/data/<lab campaign>}``: "lab stand-in ..." or "real hosts ...", with the
hosts' facts from the data's first fingerprints (and "a rehearsal, not evidence" when the
data are one).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Iterable, Mapping

from . import campaign as campaign_mod, yamlfile

RAW_ROOT = "data/raw"


@dataclasses.dataclass(frozen=True)
class Source:
    """One declared pair: the lab campaign, its real-hosts counterpart, and which of the two the analyses read."""

    study: str
    lab: str
    lab_inventory: str | None
    real: str
    real_file: str
    used: str

    @property
    def kind(self) -> str:
        """``real hosts`` or ``lab stand-in``."""
        return "real hosts" if self.used == self.real else "lab stand-in"


def complete(root: str | Path, campaign: str) -> bool:
    """True when ``campaign``'s raw data are committed whole: its record and its manifest."""
    raw = Path(root) / RAW_ROOT / campaign
    return (raw / "campaign.json").is_file() and (raw / "MANIFEST.sha256").is_file()


def counterparts(root: str | Path, study: str, folder: str, refs: list[Mapping[str, Any]],
                 lab_ids: list[str | None]) -> tuple[list[Source], list[str]]:
    """The declared pairs of a study's ``campaigns`` entries (``lab_ids[i]``: entry i's campaign id, None if it
    did not load), each with the campaign its analyses read; and one problem line per bad ``real_hosts``."""
    sources, problems = [], []
    for ref, lab in zip(refs, lab_ids):
        if "real_hosts" not in ref or lab is None:
            continue
        file = f"{folder}/{ref['real_hosts']}"
        try:
            real = campaign_mod.load(Path(root) / file)
        except yamlfile.SpecError as exc:
            problems += [f"{folder}/study.yaml: campaigns.real_hosts: {p}" for p in exc.problems]
            continue
        lab_spec = campaign_mod.load(Path(root) / folder / ref["file"])
        if dict(real.factors).keys() != dict(lab_spec.factors).keys():
            problems.append(f"{folder}/study.yaml: campaigns.real_hosts: {file} has factors "
                            f"{', '.join(real.factors)}; its lab counterpart {lab} has {', '.join(lab_spec.factors)}; "
                            "a counterpart has the same factors, so the analyses read either")
            continue
        used = real.name if complete(root, real.name) else lab
        sources.append(Source(study, lab, ref.get("inventory"), real.name, file, used))
    return sources, problems


def _swap(value: Any, swap: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return swap.get(value, value)
    if isinstance(value, dict):
        return {k: _swap(v, swap) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_swap(v, swap) for v in value)
    return value


def reading(analysis: Any, sources: Iterable[Source]) -> Any:
    """``analysis`` (a :class:`perflab.study.Analysis`) reading the used campaign of each pair; name and outputs kept."""
    swap = {s.lab: s.used for s in sources if s.used != s.lab}
    if not swap:
        return analysis
    return dataclasses.replace(analysis, campaign=_swap(analysis.campaign, swap),
                               parameters=_swap(analysis.parameters, swap), reads=_swap(analysis.reads, swap))


def inputs(studies: Iterable[Any]) -> list[str]:
    """The raw files the data sentences depend on: each used campaign's manifest (for the pipeline's rule)."""
    return [f"{RAW_ROOT}/{s.used}/MANIFEST.sha256" for st in studies for s in st.sources if s.used == s.real]
