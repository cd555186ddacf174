"""The raw store: data/raw/<campaign>/, written once, atomically, checksummed.

Layout of a campaign directory::

    campaign.json          the resolved campaign and its design digest (written once)
    MANIFEST.sha256        "<sha256>  <path>" per raw file, append-only (`sha256sum -c` reads it)
    ledger.jsonl           run state events (see perflab.ledger)
    samples/<run-id>/      stdout, stderr, meta.json[, monitors/...] of a successful sample
    failed/<run-id>.a<k>/  the same for a failed attempt k, kept as evidence
    blocks/<block>/        per-block extras such as host fingerprints

A sample directory is assembled under a temporary name and renamed into place, so it is
either complete or absent; nothing in the store is ever rewritten.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from pathlib import Path
from typing import Iterable, Mapping

from . import records
from .files import atomic_write, fsync

MANIFEST = "MANIFEST.sha256"


class StoreError(RuntimeError):
    """The raw store refuses an operation (it would overwrite, or the data was altered)."""


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_once(path: Path, data: bytes | str) -> None:
    """Create ``path`` atomically with ``data``; refuse if it exists (raw data is never rewritten)."""
    try:
        atomic_write(path, data, exclusive=True)
    except FileExistsError:
        raise StoreError(f"{path}: already exists; raw files are written once") from None


class RawStore:
    """The raw data of one campaign."""

    def __init__(self, root: str | Path, campaign: str) -> None:
        self.dir = Path(root) / campaign
        self.campaign = campaign

    @property
    def manifest(self) -> Path:
        """The append-only checksum manifest."""
        return self.dir / MANIFEST

    def begin(self, record: records.CampaignRecord) -> None:
        """Record the campaign once; refuse to continue a directory made by a different design."""
        path = self.dir / "campaign.json"
        if path.exists():
            old = records.read_campaign(path)
            if old.design_digest != record.design_digest:
                raise StoreError(
                    f"{self.dir}: holds raw data of a different design of campaign {self.campaign!r} "
                    f"(digest {old.design_digest[:12]} != {record.design_digest[:12]}). "
                    "Rename the campaign, choose another output directory, or move the old data away.")
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        write_once(path, record.to_json())
        self._append_manifest([path])

    def done_ids(self) -> set[str]:
        """Run ids with a complete sample directory."""
        sdir = self.dir / "samples"
        return {p.name for p in sdir.iterdir() if not p.name.startswith(".")} if sdir.is_dir() else set()

    def attempts(self, run_id: str) -> int:
        """How many failed attempts of ``run_id`` are stored."""
        fdir = self.dir / "failed"
        return len(list(fdir.glob(f"{run_id}.a*"))) if fdir.is_dir() else 0

    def put_sample(self, run_id: str, files: Mapping[str, bytes | str], *, failed: bool = False) -> Path:
        """Store one sample's files atomically (a failed attempt under failed/) and checksum them."""
        if failed:
            final = self.dir / "failed" / f"{run_id}.a{self.attempts(run_id) + 1}"
        else:
            final = self.dir / "samples" / run_id
        if final.exists():
            raise StoreError(f"{final}: already stored; raw samples are written once")
        tmp = final.parent / f".tmp-{final.name}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        for name, data in files.items():
            target = tmp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as fh:
                fh.write(data.encode() if isinstance(data, str) else data)
                fh.flush()
                os.fsync(fh.fileno())
        fsync(tmp)
        os.rename(tmp, final)
        fsync(final.parent)
        self._append_manifest(sorted(p for p in final.rglob("*") if p.is_file()))
        return final

    def put_file(self, relpath: str, data: bytes | str) -> Path:
        """Store one extra raw file (e.g. a fingerprint) once, and checksum it."""
        path = self.dir / relpath
        write_once(path, data)
        self._append_manifest([path])
        return path

    def _append_manifest(self, paths: Iterable[Path]) -> None:
        lines = "".join(f"{sha256_file(p)}  {p.relative_to(self.dir).as_posix()}\n" for p in paths)
        if not lines:
            return
        with open(self.manifest, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write(lines)
            fh.flush()
            os.fsync(fh.fileno())

    def recover(self) -> list[str]:
        """After a crash: drop unfinished temporaries and checksum complete files the manifest lacks."""
        notes = []
        for tmp in self.dir.glob("*/.tmp-*"):
            shutil.rmtree(tmp, ignore_errors=True)
            notes.append(f"removed unfinished {tmp.relative_to(self.dir)}")
        notes += self.seal()
        return notes

    def seal(self) -> list[str]:
        """Checksum complete files not yet in the manifest (e.g. the executed experiment notebook)."""
        orphans = unlisted(self.dir)
        if orphans:
            self._append_manifest([self.dir / name for name in orphans])
            return [f"checksummed {len(orphans)} file(s) the manifest lacked: {', '.join(orphans[:5])}"]
        return []


#: Files of a campaign directory that are logs rather than raw data (appended to, not checksummed).
UNSEALED = frozenset({MANIFEST, "ledger.jsonl"})


def unlisted(campaign_dir: str | Path) -> list[str]:
    """Raw files under ``campaign_dir`` that the manifest does not list."""
    cdir = Path(campaign_dir)
    listed = read_manifest(cdir)
    out = []
    for path in sorted(cdir.rglob("*")):
        rel = path.relative_to(cdir).as_posix()
        if path.is_file() and rel not in listed and rel not in UNSEALED and not any(
                part.startswith(".") for part in path.relative_to(cdir).parts):
            out.append(rel)
    return out


def read_manifest(campaign_dir: str | Path) -> dict[str, str]:
    """Path (relative to the campaign directory) -> SHA-256, from the manifest."""
    path = Path(campaign_dir) / MANIFEST
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            raise StoreError(f"{path}:{lineno}: expected '<sha256>  <path>'; found {line[:80]!r}")
        out[name] = digest
    return out


def verify(campaign_dir: str | Path) -> list[str]:
    """Check every raw file against the manifest; return the problems (empty when intact)."""
    cdir = Path(campaign_dir)
    listed = read_manifest(cdir)
    problems = []
    for name, digest in listed.items():
        path = cdir / name
        if not path.exists():
            problems.append(f"{name}: listed in the manifest but missing")
        elif sha256_file(path) != digest:
            problems.append(f"{name}: checksum differs from the manifest (the file was altered)")
    problems += [f"{name}: not in the manifest" for name in unlisted(cdir)]
    return problems
