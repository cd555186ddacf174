"""The raw store: data/raw/<campaign>/, written once, atomically, checksummed.

Layout of a campaign directory::

    campaign.json          the resolved campaign and its design digest (written once)
    README.md              this layout, for whoever opens the directory
    MANIFEST.sha256        "<sha256>  <path>" per raw file, append-only (`sha256sum -c` reads it)
    ledger.jsonl           run state events (see perflab.ledger)
    samples/<run-id>/      stdout, stderr, meta.json[, monitors/...] of a successful sample; with
                           several hosts per measured role or several phases also stdout@<host>
                           and stdout+<phase> (meta.json's "commands" names each command's files);
                           monitors/<host>.tar.xz holds sar.json, proc-before/after.txt and, on
                           lab hosts, cgroup-before/after.txt (the host's own CPU counters), verbatim
                           (`tar xJf` unpacks it; campaigns measured before keep monitors/<host>/)
    failed/<run-id>.a<k>/  the same for a failed attempt k, kept as evidence
    blocks/<block>/        per-block extras such as host fingerprints
    verify/<time>-c<cell>.json   the checks (`verify:`) of a cell's setup steps, with their output
    gaps/<host>-<time>.json      a host's lost connection and its reconnection (records.HostGap)
    leftovers/<time>.json  processes an earlier, killed run left on the hosts, killed on resume (by host),
                           or that a stopped run (Ctrl-C, SIGTERM, SIGHUP) killed on its way out
    repairs/ledger-<time>.json   torn ledger lines cut off on resume (a full disk or a crash mid-write)

A sample directory is assembled under a temporary name and renamed into place, so it is
either complete or absent; nothing in the store is ever rewritten.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import io
import lzma
import os
import json
import re
import shutil
import socket
import sys
import tarfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Mapping, TextIO

from .formats import locks, records
from .formats.findings import Finding
from .errors import UserError
from .files import Spool, atomic_write, fsync
from .ledger import Ledger, chain

MANIFEST = "MANIFEST.sha256"
#: The run-state event log (see :mod:`perflab.ledger`).
LEDGER = "ledger.jsonl"
#: A campaign directory's run lock (not raw data): held (flock) by the run, naming its pid, host and command,
#: and removed when the run ends.
LOCK = ".lock"
#: Free bytes a campaign's file system must have before a run starts (the preflight of ``begin``).
MIN_FREE = 64 * 2**20


class StoreError(UserError, RuntimeError):
    """The raw store refuses an operation (it would overwrite, or the data was altered)."""


#: Bytes hashed per read of a large file; a smaller file is read in one piece sized to it.
HASH_CHUNK = 1 << 20


#: Suffix of a host's monitor archive in a sample's ``monitors/`` directory (see :func:`pack_monitors`).
MONITOR_ARCHIVE = ".tar.xz"


def pack_monitors(files: Mapping[str, bytes | str | Spool]) -> dict[str, bytes | str | Spool]:
    """A sample's files as they are stored: every ``monitors/<host>/<name>`` of one host packed into one
    ``monitors/<host>.tar.xz`` (members sorted by name, no owner or time, so equal files give equal bytes:
    a 5-s sample's monitor files of one host, about 7 KB gzipped one by one, take about 4 KB), the other
    files unchanged."""
    hosts: dict[str, dict[str, bytes]] = {}
    out: dict[str, bytes | str | Spool] = {}
    for path, data in files.items():
        parts = path.split("/")
        if len(parts) == 3 and parts[0] == "monitors":
            hosts.setdefault(parts[1], {})[parts[2]] = data.encode() if isinstance(data, str) else bytes(data)
        else:
            out[path] = data
    for host, members in hosts.items():
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name in sorted(members):
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(members[name]), 0o644, 0
                tar.addfile(info, io.BytesIO(members[name]))
        out[f"monitors/{host}{MONITOR_ARCHIVE}"] = xz(buf.getvalue())
    return out


def xz(data: bytes) -> bytes:
    """``data`` compressed as ``xz -9`` would, with the dictionary sized to the data (at least 4 KiB, at most
    ``-9``'s 64 MiB): the same bytes out of the compressor's matching for a tenth of its time, since ``-9``
    spends most of a small archive's time setting up a 64 MiB dictionary."""
    size = min(max(4096, 1 << (len(data) - 1).bit_length()), 64 << 20)
    return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64,
                         filters=[{"id": lzma.FILTER_LZMA2, "preset": 9, "dict_size": size}])


def unpack_monitors(data: bytes, source: str = "") -> dict[str, str]:
    """The members of a host's monitor archive (name -> text); raises ``ValueError`` naming ``source`` when
    the archive is damaged."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as tar:
            return {m.name: tar.extractfile(m).read().decode("utf-8", errors="replace")  # type: ignore[union-attr]
                    for m in tar.getmembers() if m.isfile()}
    except (tarfile.TarError, lzma.LZMAError, EOFError, OSError) as exc:
        raise ValueError(f"{source or 'monitor archive'}: not a complete tar.xz archive ({exc})") from exc


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes.

    Unbuffered: a small raw file (most are a few kB) costs one open, one fstat and one read,
    never a 1 MiB buffer per file (``perflab tidy`` hashes every raw file of a campaign).
    """
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        if os.fstat(fh.fileno()).st_size <= HASH_CHUNK:
            h.update(fh.readall())
        else:
            buf = memoryview(bytearray(HASH_CHUNK))
            while n := fh.readinto(buf):
                h.update(buf[:n])
    return h.hexdigest()


@contextmanager
def _disk_space(what: str, tmp: Path) -> Iterator[None]:
    """Turn a full disk (ENOSPC, EDQUOT) while ``what`` into a one-line :class:`StoreError`, removing ``tmp``."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink(missing_ok=True)
        raise StoreError(f"{tmp.parent}: the disk is full ({exc.strerror}) while {what}; nothing partial was "
                         f"kept: free space and rerun the same command to resume") from None


def _holder(text: str) -> dict:
    """The holder a lock file records: JSON (pid, host, command, started_utc) or, as older runs wrote, a bare pid."""
    doc = locks.parse(text)
    return doc if isinstance(doc, dict) else {"pid": doc} if isinstance(doc, int) else {}


def _alive(pid: object) -> bool:
    """True when ``pid`` names a process on this machine."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _command(pid: int, width: int = 160) -> str:
    """The command line of a process on this machine on one line, cut to ``width`` (empty when unreadable)."""
    try:
        text = " ".join(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").replace("\0", " ").split())
    except OSError:
        return ""
    return text if len(text) <= width else text[:width - 3] + "..."


def _describe(holder: dict) -> str:
    """"pid N (command) on host H since T" from what a lock file records, leaving out what it lacks."""
    pid, host = holder.get("pid", "?"), holder.get("host")
    here = host in (None, socket.gethostname())
    command = (_command(pid) if here and _alive(pid) else "") or holder.get("command", "")
    return (f"pid {pid}" + (f" ({command})" if command else "") + ("" if here else f" on host {host}")
            + (f", since {holder['started_utc']}" if holder.get("started_utc") else ""))


class RawStore:
    """The raw data of one campaign."""

    def __init__(self, root: str | Path, campaign: str) -> None:
        self.dir = Path(root) / campaign
        self.campaign = campaign

    @property
    def owner(self) -> str:
        """The process registry of this campaign directory's runs on the hosts: campaign name and path digest.

        Every process a run starts carries it (see :meth:`perflab.hosts.remote.Host.run`), so the
        next run can find and stop what a killed one left, and never touches processes of the
        same campaign stored elsewhere.
        """
        digest = hashlib.sha256(str(self.dir.resolve()).encode()).hexdigest()[:8]
        return f"{self.campaign}-{digest}"

    @contextmanager
    def lock(self, out: TextIO | None = None) -> Iterator[None]:
        """Hold the campaign directory's run lock, so two runs never store the same samples.

        The lock file records the holder's pid, host and command and is removed when the run
        ends. One a killed run left behind (nobody holds it: its pid is gone, or it was taken
        on another host) is removed with a one-line note on ``out``; a lock a live run holds
        raises :class:`StoreError` naming that run and what to do.
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / LOCK
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(os.read(fd, 4096).decode(errors="replace"))
                os.close(fd)
                pid = holder.get("pid", "?")
                gone = bool(holder) and holder.get("host") in (None, socket.gethostname()) and not _alive(pid)
                raise StoreError(
                    f"{self.dir}: another perflab run ({_describe(holder)}) is running this campaign; wait for it to "
                    f"finish, or stop it (kill {pid}), then rerun to resume" if not gone else
                    f"{path}: its holder pid {pid} has ended, but a process it started still holds the lock (see "
                    f"`fuser -v {path}`); stop that process, then rerun to resume") from None
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not a lock file the previous holder removed between our open and our flock
                break
            os.close(fd)
        try:
            old = _holder(os.read(fd, 4096).decode(errors="replace"))
            if old:
                here = old.get("host") in (None, socket.gethostname())
                print(f"{path}: removed a stale lock left by {_describe(old)}, "
                      + ("which is no longer running" if here and not _alive(old.get("pid")) else "which no longer holds it"),
                      file=out or sys.stdout, flush=True)
            me = {"pid": os.getpid(), "host": socket.gethostname(), "command": _command(os.getpid()),
                  "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            os.ftruncate(fd, 0)
            os.pwrite(fd, locks.dumps(me), 0)
            yield
        finally:
            path.unlink(missing_ok=True)
            os.close(fd)

    @property
    def manifest(self) -> Path:
        """The append-only checksum manifest."""
        return self.dir / MANIFEST

    def begin(self, record: records.CampaignRecord, *, min_free: int = MIN_FREE) -> None:
        """Record the campaign once; refuse to continue a directory made by a different design.

        First checks that the file system holds at least ``min_free`` bytes free (a full disk
        found before the first sample rather than in the middle of one).
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(self.dir).free
        if free < min_free:
            raise StoreError(f"{self.dir}: only {free / 2**20:.1f} MiB free on its file system; perflab needs at "
                             f"least {min_free / 2**20:.0f} MiB to store raw samples: free space or choose another "
                             f"raw directory")
        path = self.dir / "campaign.json"
        if path.exists():
            old = records.read_campaign(path)
            if old.design_digest != record.design_digest:
                raise StoreError(
                    f"{self.dir}: holds raw data of a different design of campaign {self.campaign!r} "
                    f"(digest {old.design_digest[:12]} != {record.design_digest[:12]}). "
                    "Rename the campaign, choose another output directory, or move the old data away.")
            return
        self.put_file("campaign.json", record.to_json())
        self.put_file("README.md", readme(record))

    def done_ids(self) -> set[str]:
        """Run ids with a complete sample directory."""
        sdir = self.dir / "samples"
        return {p.name for p in sdir.iterdir() if not p.name.startswith(".")} if sdir.is_dir() else set()

    def attempts(self, run_id: str) -> int:
        """How many failed attempts of ``run_id`` are stored."""
        fdir = self.dir / "failed"
        return len(list(fdir.glob(f"{run_id}.a*"))) if fdir.is_dir() else 0

    def put_sample(self, run_id: str, files: Mapping[str, bytes | str | Spool], *, failed: bool = False) -> Path:
        """Store one sample's files atomically (a failed attempt under failed/) and checksum them; the files of
        ``monitors/<host>/`` go into one archive per host (:func:`pack_monitors`). A :class:`~perflab.files.Spool`
        (a command's output) is copied in chunks, so an output of any size is stored in bounded memory."""
        if failed:
            final = self.dir / "failed" / f"{run_id}.a{self.attempts(run_id) + 1}"
        else:
            final = self.dir / "samples" / run_id
        if final.exists():
            raise StoreError(f"{final}: already stored; raw samples are written once")
        tmp = final.parent / f".tmp-{final.name}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        with _disk_space(f"storing sample {final.relative_to(self.dir)}", tmp):
            self._write_sample(tmp, final, pack_monitors(files))
        return final

    def digests(self, sample: Path) -> dict[str, str]:
        """SHA-256 of each file of a stored sample (or failed attempt) directory, by its path inside it: what the
        ledger's ``done``/``failed`` event binds to the run id."""
        return {p.relative_to(sample).as_posix(): sha256_file(p)
                for p in sorted(sample.rglob("*"), key=lambda p: p.parts) if p.is_file()}

    def _write_sample(self, tmp: Path, final: Path, files: Mapping[str, bytes | str | Spool]) -> None:
        folders = {tmp}
        for name, data in files.items():
            target = tmp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            folders.update(target.parents[:len(Path(name).parts)])
            with open(target, "wb") as fh:
                for piece in data.chunks() if isinstance(data, Spool) else (
                        data.encode() if isinstance(data, str) else data,):
                    fh.write(piece)
                fh.flush()
                os.fsync(fh.fileno())
        for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):  # every entry made, deepest first
            fsync(folder)
        # checksums first, then the rename: a crash in between leaves a temporary that
        # recover() completes only when its bytes match those checksums
        self._append_manifest([(sha256_file(p), final / p.relative_to(tmp))
                               for p in sorted(tmp.rglob("*")) if p.is_file()])
        os.rename(tmp, final)
        fsync(final.parent)

    def put_file(self, relpath: str, data: bytes | str) -> Path:
        """Store one extra raw file (e.g. a fingerprint) once, and checksum it."""
        path = self.dir / relpath
        if path.exists():
            raise StoreError(f"{path}: already exists; raw files are written once")
        tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}")
        with _disk_space(f"storing {relpath}", tmp):
            atomic_write(tmp, data)
            self._append_manifest([(sha256_file(tmp), path)])
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise StoreError(f"{path}: already exists; raw files are written once") from None
            finally:
                tmp.unlink(missing_ok=True)
            fsync(path.parent)
        return path

    def _append_manifest(self, entries: Iterable[Path | tuple[str, Path]]) -> None:
        """Append ``<sha256>  <path>`` lines, for files (hashed now) or (digest, path) pairs.

        A failed write (a full disk) is cut back, so the manifest never ends in half a line.
        """
        pairs = [e if isinstance(e, tuple) else (sha256_file(e), e) for e in entries]
        data = "".join(f"{digest}  {p.relative_to(self.dir).as_posix()}\n" for digest, p in pairs).encode()
        if not data:
            return
        fd = os.open(self.manifest, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except OSError:
                os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)

    def recover(self) -> list[str]:
        """After a crash: finish or drop interrupted stores; refuse raw data that changed since it was written.

        A temporary whose files all match the checksums already in the manifest (the crash
        came between the two steps of a store) is renamed into place; any other temporary is
        removed. Sample files are never adopted: a file the manifest lacks (other than the
        :data:`SEALABLE` ones) or a listed file that is missing raises :class:`StoreError`,
        since resuming would launder edited data or measure a deleted sample again.
        """
        notes, altered = self._repair_ledger(), []
        listed = read_manifest(self.dir)
        for tmp in sorted(self.dir.glob("**/.tmp-*")):
            final = tmp.with_name(re.sub(r"^\.tmp-(.*)-\d+$", r"\1", tmp.name))
            files = [tmp] if tmp.is_file() else sorted(p for p in tmp.rglob("*") if p.is_file())
            rel = {p: (final / p.relative_to(tmp) if tmp.is_dir() else final).relative_to(self.dir).as_posix()
                   for p in files}
            if not any(rel[p] in listed for p in files):
                shutil.rmtree(tmp) if tmp.is_dir() else tmp.unlink()
                notes.append(f"removed unfinished {tmp.relative_to(self.dir)}")
            elif not final.exists() and all(listed.get(rel[p]) == sha256_file(p) for p in files):
                os.rename(tmp, final)
                fsync(final.parent)
                notes.append(f"completed the interrupted store of {final.relative_to(self.dir)}")
            else:
                altered.append(tmp.relative_to(self.dir).as_posix())
        missing = [name for name in listed if not (self.dir / name).exists()]
        foreign = [name for name in unlisted(self.dir) if name not in SEALABLE]
        if missing or foreign or altered:
            found = ([f"{len(missing)} listed file(s) missing ({', '.join(missing[:3])})"] if missing else []) + (
                [f"{len(foreign)} file(s) not in the manifest ({', '.join(foreign[:3])})"] if foreign else []) + (
                [f"interrupted store(s) whose bytes differ from their checksums ({', '.join(altered[:3])})"]
                if altered else [])
            raise StoreError(f"{self.dir}: the raw data changed since it was written: {'; '.join(found)}; "
                             f"perflab never adopts or re-measures raw data: restore the files from a backup, "
                             f"or move the directory away and run the campaign again (`perflab verify` lists all)")
        return notes + self.seal()

    def _repair_ledger(self) -> list[str]:
        """Cut torn lines off the ledger (see :meth:`Ledger.repair`) and record them in ``repairs/``."""
        cut = Ledger(self.dir / LEDGER).repair()
        if not cut:
            return []
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        record = {"format": 1, "campaign": self.campaign, "file": LEDGER, "repaired_utc": stamp, "cut": cut}
        path = self.put_file(f"repairs/ledger-{stamp}.json", json.dumps(record, indent=1) + "\n")
        return [f"{LEDGER}: cut {len(cut)} torn line(s) left by an interrupted write (recorded in "
                f"{path.relative_to(self.dir)})"]

    def seal(self) -> list[str]:
        """Checksum the named non-sample files (:data:`SEALABLE`, e.g. the executed notebook) not yet listed.

        Any other file the manifest lacks raises :class:`StoreError`: sample data is
        checksummed when it is written, never afterwards.
        """
        orphans = unlisted(self.dir)
        foreign = [name for name in orphans if name not in SEALABLE]
        if foreign:
            raise StoreError(f"{self.dir}: {len(foreign)} file(s) not in the manifest ({', '.join(foreign[:5])}); "
                             f"only {', '.join(sorted(SEALABLE))} may be sealed afterwards: remove the others or "
                             f"restore the data they replaced")
        if orphans:
            self._append_manifest([self.dir / name for name in orphans])
            return [f"checksummed {len(orphans)} file(s) the manifest lacked: {', '.join(orphans)}"]
        return []


def readme(record: records.CampaignRecord) -> str:
    """The README a campaign directory gets when it is made: what each file is (this module's layout)."""
    layout = __doc__.split("::", 1)[1].split("\n\n", 2)[1]
    return (f"# Raw data of campaign {record.campaign}\n\nWritten by perflab {record.perflab} from "
            f"`{record.source}`. Nothing here is ever edited: every file is listed with its SHA-256 in "
            f"`{MANIFEST}` (check with `sha256sum -c {MANIFEST}` or `perflab verify`).\n\n```\n{layout}\n```\n"
            "\nThe executed `experiment.ipynb` is added when the pipeline ran the campaign. "
            "`perflab tidy` turns the samples into the tidy table; see the project's README.\n")


def seal_digitized(directory: str | Path) -> list[str]:
    """Checksum the hand-digitized published files of ``directory`` that its manifest lacks.

    Published data (``data/raw/published/``) is typed in from a study's text, not measured:
    a file is sealed once when it is added, and a listed file is never checksummed again, so
    an edit still fails :func:`verify`.
    """
    directory = Path(directory)
    if (directory / "campaign.json").exists():
        raise StoreError(f"{directory}: a campaign's raw directory, not published data; its samples are checksummed "
                         "when written (perflab seal only adds the executed notebook there)")
    orphans = unlisted(directory)
    if orphans:
        RawStore(directory.parent, directory.name)._append_manifest([directory / name for name in orphans])
        return [f"checksummed {len(orphans)} published file(s): {', '.join(orphans)}"]
    return []


#: Non-sample files that :meth:`RawStore.seal` may checksum after the run (written by the pipeline).
SEALABLE = frozenset({"experiment.ipynb"})
#: Files of a campaign directory that are logs rather than raw data (appended to, not checksummed).
UNSEALED = frozenset({MANIFEST, LEDGER})


def unlisted(campaign_dir: str | Path) -> list[str]:
    """Raw files under ``campaign_dir`` that the manifest does not list."""
    cdir = Path(campaign_dir)
    listed = read_manifest(cdir)
    out = []
    # os.walk with plain strings: a campaign has tens of thousands of files, too many for Path objects
    for top, dirs, files in os.walk(cdir):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        prefix = Path(top).relative_to(cdir).as_posix() + "/" if top != str(cdir) else ""
        for name in files:
            rel = prefix + name
            if not name.startswith(".") and rel not in listed and rel not in UNSEALED:
                out.append(rel)
    return sorted(out, key=lambda rel: rel.split("/"))


def manifest_lines(campaign_dir: str | Path) -> list[tuple[str, str]]:
    """(path, SHA-256) per manifest line, in order, duplicates included."""
    path = Path(campaign_dir) / MANIFEST
    if not path.exists():
        return []
    out = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            raise StoreError(f"{path}:{lineno}: expected '<sha256>  <path>'; found {line[:80]!r}")
        out.append((name, digest))
    return out


def read_manifest(campaign_dir: str | Path) -> dict[str, str]:
    """Path (relative to the campaign directory) -> SHA-256, from the manifest."""
    return dict(manifest_lines(campaign_dir))


def verify(campaign_dir: str | Path, *, hashed: Mapping[str, str] | None = None,
           schedule: list[str] | None = None) -> list[str]:
    """:func:`findings` as lines of text (``<path>: <problem>``, paths inside the campaign directory)."""
    return [str(f) for f in findings(campaign_dir, hashed=hashed, schedule=schedule)]


def findings(campaign_dir: str | Path, *, hashed: Mapping[str, str] | None = None,
             schedule: list[str] | None = None) -> list[Finding]:
    """Check raw files against the manifest, and schedule, manifest, ledger and samples against each other.

    ``hashed`` maps manifest paths to the SHA-256 of the bytes a caller has already read
    (``perflab tidy`` hashes what it parses, so each raw file is read once); those files are
    not read again; ``schedule`` is the campaign record's, when the caller has read it.

    Returns the findings (empty when intact; paths inside the campaign directory): altered, missing or unlisted files, a manifest
    path outside the campaign directory (refused, never read), a path listed twice (written
    again after a deletion), and what :func:`_ledger_problems` finds.
    """
    cdir = Path(campaign_dir)
    lines = manifest_lines(cdir)
    listed = dict(lines)
    problems: list[Finding] = []
    inside = os.path.realpath(cdir)
    folders: dict[str, str] = {}
    hashed = hashed or {}
    for name, digest in listed.items():
        path = _inside(inside, name, folders)
        if path is None:
            problems.append(Finding(name, "a manifest path outside the campaign directory; refused, not read"))
            continue
        try:
            altered = (hashed.get(name) or sha256_file(path)) != digest
        except FileNotFoundError:
            problems.append(Finding(name, "listed in the manifest but missing"))
            continue
        if altered:
            problems.append(Finding(name, "checksum differs from the manifest (the file was altered)"))
    problems += [Finding(name, "not in the manifest") for name in unlisted(cdir)]
    counts = Counter(name for name, _ in lines)
    problems += [Finding(name, f"listed {n} times in the manifest (written again after it was deleted?)")
                 for name, n in counts.items() if n > 1]
    return problems + _ledger_problems(cdir, _schedule(cdir) if schedule is None else schedule, listed)


def _inside(inside: str, name: str, folders: dict[str, str]) -> str | None:
    """The real path of the manifest path ``name`` when it lies in the campaign directory whose real path is
    ``inside``, else None (an absolute path, ``..``, a symbolic link leading out).

    Each folder is resolved once (``folders`` keeps them), the file itself only when it is a symbolic link:
    a sample's files share their folder, and tidy checks every file of a campaign.
    """
    parts = name.split("/")
    if name.startswith("/") or ".." in parts:
        return None
    folder = "/".join(parts[:-1])
    real = folders.get(folder)
    if real is None:
        real = folders[folder] = os.path.realpath(os.path.join(inside, folder))
    path = os.path.join(real, parts[-1])
    if os.path.islink(path):
        path = os.path.realpath(path)
    return path if path.startswith(inside.rstrip("/") + "/") else None


def _stored(cdir: Path, kind: str) -> set[str]:
    """Names of the complete entries under ``cdir/kind`` (``samples`` or ``failed``)."""
    d = cdir / kind
    return {p.name for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")} if d.is_dir() else set()


def _schedule(cdir: Path) -> list[str]:
    """The run ids the campaign record plans, in order (empty for a directory without one)."""
    path = cdir / "campaign.json"
    return records.read_campaign(path).schedule if path.exists() else []


def _ledger_problems(cdir: Path, schedule: list[str], listed: Mapping[str, str]) -> list[Finding]:
    """Schedule, samples, failed attempts, ledger events and the ledger's hash chain against each other.

    Finds a missing ledger of a campaign that plans runs; a sample the ledger says is done but
    that is missing, a run done twice or whose attempt numbers restart (measured again), a
    sample or failed attempt no ledger event mentions, a failure the ledger records whose
    attempt is not stored; a stored run the schedule does not plan; and a planned run with no
    event although runs after it in the schedule (of its group) were measured: the runner
    measures in schedule order, so such a hole is a sample deleted with its ledger lines. Also
    the chain's broken links (:func:`perflab.ledger.chain`) and the files of a sample whose
    checksums (``listed``, from the manifest) are not those its ledger event bound to the run.
    """
    path = cdir / LEDGER
    samples, failed_dirs = _stored(cdir, "samples"), _stored(cdir, "failed")
    if not path.exists():
        if schedule:
            return [Finding(LEDGER, f"missing: the campaign plans {len(schedule)} runs and its ledger records which "
                            "ran; restore it from a backup (it cannot be rebuilt)")]
        return []
    try:
        events = Ledger(path).events()
    except records.RecordError as exc:
        return [Finding(LEDGER, exc.message)]
    links = chain(path)
    problems = list(links.problems if links else [])
    done: Counter[str] = Counter()
    failed: dict[str, int] = {}
    for event in events:
        if event.state == "running" and (done[event.run_id] or (event.attempt or 0) <= failed.get(event.run_id, 0)):
            # a crash repeats an attempt number (nothing was stored); after a stored one it must grow
            after = "it was done" if done[event.run_id] else f"failed attempt {failed[event.run_id]}"
            problems.append(Finding(f"samples/{event.run_id}", f"attempt numbers restart (attempt {event.attempt} "
                                    f"after {after}): the run was measured again"))
        elif event.state == "failed":
            failed[event.run_id] = max(failed.get(event.run_id, 0), event.attempt or 0)
            if f"{event.run_id}.a{event.attempt}" not in failed_dirs:
                problems.append(Finding(f"failed/{event.run_id}.a{event.attempt}",
                                        "the ledger records this failed attempt but it is not stored"))
        elif event.state == "done":
            done[event.run_id] += 1
    for run_id, n in sorted(done.items()):
        if run_id not in samples:
            problems.append(Finding(f"samples/{run_id}", "the ledger says done but the sample directory is missing"))
        if n > 1:
            problems.append(Finding(f"samples/{run_id}", f"done {n} times in the ledger (measured again)"))
    mentioned = {event.run_id for event in events}
    attempts = {(event.run_id, event.attempt) for event in events}
    problems += [Finding(f"samples/{name}", "no ledger event mentions this sample")
                 for name in sorted(samples - mentioned)]
    for name in sorted(failed_dirs):
        run_id, _, k = name.rpartition(".a")
        if (run_id, int(k) if k.isdigit() else None) not in attempts:
            problems.append(Finding(f"failed/{name}", "no ledger event mentions this attempt"))
    problems += _binding_problems(events, listed)
    return problems + _schedule_problems(schedule, mentioned, samples | {n.rpartition(".a")[0] for n in failed_dirs})


def _binding_problems(events: list[records.LedgerEvent], listed: Mapping[str, str]) -> list[Finding]:
    """Files of stored samples and failed attempts whose manifest checksums are not those their ledger event
    (format 2: ``files``) bound to the run: replaced, swapped between samples, added or removed with the
    manifest rewritten to match. A directory the manifest lists nothing of is reported elsewhere."""
    stored: dict[str, dict[str, str]] = {}
    for name, digest in listed.items():
        parts = name.split("/", 2)
        if len(parts) == 3 and parts[0] in ("samples", "failed"):
            stored.setdefault(f"{parts[0]}/{parts[1]}", {})[parts[2]] = digest
    problems: list[Finding] = []
    for event in events:
        if event.files is None or event.state not in ("done", "failed"):
            continue
        where = f"samples/{event.run_id}" if event.state == "done" else f"failed/{event.run_id}.a{event.attempt}"
        found = stored.get(where)
        if not found:
            continue
        for name in sorted(set(found) | set(event.files)):
            if found.get(name) != event.files.get(name):
                what = ("is not among the files" if name not in event.files else
                        "is missing from the manifest, though among the files" if name not in found else
                        "has another SHA-256 than the one")
                problems.append(Finding(f"{where}/{name}", f"{what} the ledger bound to run {event.run_id} when it was "
                                        "stored (replaced, swapped with another sample's, or added)"))
    return problems


def _schedule_problems(schedule: list[str], mentioned: set[str], stored: set[str]) -> list[Finding]:
    """Stored runs the schedule does not plan, and planned runs skipped although later ones (of their group) ran."""
    if not schedule:
        return []
    planned = set(schedule)
    problems = [Finding(f"samples/{run_id}", "not a run of the campaign's schedule (campaign.json)")
                for run_id in sorted((stored | mentioned) - planned)]
    groups: dict[str, list[str]] = {}
    for run_id in schedule:
        groups.setdefault(re.sub(r"^.*?(-g\d+)?$", r"\1", run_id), []).append(run_id)
    for runs in groups.values():
        last = max((i for i, run_id in enumerate(runs) if run_id in mentioned), default=-1)
        problems += [Finding(f"samples/{run_id}", "planned (campaign.json) but neither stored nor in the ledger, "
                             "although later runs were measured: deleted with its ledger lines?")
                     for run_id in runs[:last] if run_id not in mentioned]
    return problems
