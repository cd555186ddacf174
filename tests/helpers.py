"""Helpers shared by the test modules (import as `from helpers import ...`)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping

import pytest

from perflab import campaign as campaign_mod, inventory, labspec, store, study as study_mod
from perflab.hosts import lab as lab_mod
from perflab.formats import records
from perflab.tools.base import Command, Measurement, Param, Rows, Tool

#: The prefix of the test group (``--dist loadgroup``) of a module with lab tests: ``lab-<module>`` (conftest.py).
LAB_GROUP = "lab-"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces, sshd)")


def leftovers(name: str) -> list[str]:
    """Namespaces, links, sshd processes, cgroups and loop devices of lab ``name`` still on the machine."""
    return lab_mod.traces(name)


@contextmanager
def lab_entries(prefix: str, text: str) -> Iterator[list]:
    """The inventory of a lab described by ``text`` (a lab file with ``{name}`` for its name), named ``prefix`` and
    this test process's pid, brought up for the block and removed (and checked gone) after it."""
    name = f"{prefix}{os.getpid() % 100000}"
    created = lab_mod.bring_up(labspec.load(f"{name}.yaml", text=text.format(name=name)))
    try:
        yield inventory.load(created.inventory_path)
    finally:
        lab_mod.down(name)
        assert leftovers(name) == [], f"lab {name} left things behind"


def monitor_text(host_dir: Path, name: str) -> str:
    """A stored monitor file's text: a member of ``<host_dir>.tar.xz`` (how the store keeps a host's monitor
    files), else ``<name>.gz`` gunzipped, else ``<name>`` (campaigns measured before)."""
    archive = host_dir.with_name(host_dir.name + store.MONITOR_ARCHIVE)
    if archive.is_file():
        return store.unpack_monitors(archive.read_bytes(), str(archive))[name]
    packed = host_dir / f"{name}.gz"
    return gzip.decompress(packed.read_bytes()).decode() if packed.is_file() else (host_dir / name).read_text()


def campaign_record(name: str = "c", factors: dict | None = None, digest: str | None = None,
                    spec: dict | None = None) -> records.CampaignRecord:
    """A minimal campaign record for a store made by hand in a test (``spec`` adds to its campaign document;
    the design digest is its spec's unless ``digest`` is given)."""
    doc = {"campaign": name, "benchmark": {"tool": "iperf3"}, "factors": factors or {}, **(spec or {})}
    digest = digest or campaign_mod.from_doc(doc, f"{name}.yaml").digest()
    return records.CampaignRecord(campaign=name, design_digest=digest, spec=doc,
                                  source=f"{name}.yaml", perflab="test", python="3", schedule=[], inventory={})


def sample_meta(run_id: str, cell: dict, block: int, *, campaign: str = "c", tool: str = "iperf3",
                warmup: bool = False, host: str = "h1", started_utc: str = "2026-11-22T19:42:11.876Z",
                position: int = 0) -> str:
    """A sample's meta.json text for a store made by hand in a test."""
    return records.SampleMeta(
        campaign=campaign, run_id=run_id, tool=tool, cell=cell, cell_index=0, repetition=block, warmup=warmup,
        block=block, position=position, seed=None, attempt=1, status="ok", reason=None, roles={}, settle=None,
        neighbours=[], perflab="test", commands=[{"host": host, "started_utc": started_utc}]).to_json()


def load_campaign(text: str, tmp_path: Path | None = None) -> campaign_mod.Campaign:
    """A campaign from YAML ``text``; written to ``tmp_path/c.yaml`` first when given (errors then name it)."""
    if tmp_path is None:
        return campaign_mod.load("c.yaml", text=text)
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return campaign_mod.load(path)


class Probe(Tool):
    """A test-only adapter: the sample is the shell command ``params['cmd']``; its stdout is one number."""

    name = "probe"
    roles = ("client",)
    params = (Param("cmd", "program", None, "", "the shell command that is the sample", programs=frozenset({"*"})),)

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        return [Command("client", ("sh", "-c", str(params["cmd"])))]

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        rows = Rows(source)
        rows.add("value", stdout.strip(), "1", "stdout")
        return rows

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        return 0.1


def copy_project(root: Path, dest: Path, studies: Iterable[str] | None = None) -> None:
    """Copy the files git tracks in the project at ``root`` into ``dest`` (a checkout without history).

    With ``studies`` (folder names under ``studies/``), only those studies and the raw data of their
    campaigns are copied besides the rest of the project (published data included): a fraction of the
    files for a test about one study.
    """
    files = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=True).stdout
    names = list(filter(None, files.split("\0")))
    if studies is not None:
        kept = [study_mod.load(f"studies/{s}", root) for s in studies]
        raw = {c.id for s in kept for c in s.campaigns}
        folders = {f"studies/{s}" for s in studies}

        def wanted(name: str) -> bool:
            parts = name.split("/")
            if parts[0] == "studies" and len(parts) > 2:
                return "/".join(parts[:2]) in folders
            if parts[:2] == ["data", "raw"] and len(parts) > 3:
                return parts[2] == "published" or parts[2] in raw
            return True

        names = [n for n in names if wanted(n)]
    for name in names:
        if (root / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes((root / name).read_bytes())


#: A campaign of one cell under RMIT on two hosts, 3 samples (so 3 blocks), monitors off: block boundaries' fingerprints.
BOUNDARY = """\
campaign: boundary
benchmark: {tool: probe}
programs: [cmd]
hosts: {client: h1, peer: h2}
factors: {cmd: ["echo 1"]}
repetitions: 3
warmups: 0
seed: 5
monitors: false
"""


def snakemake(project: Path, *args: str) -> subprocess.CompletedProcess:
    """Run this venv's Snakemake in ``project`` with ``args``, one core, without the demonstration campaigns."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(["snakemake", *args, "--cores", "1", "--config", "demos=False"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)
