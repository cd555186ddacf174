"""Files: atomic writes (a reader sees the old file or the whole new one, never a part), name parts and their order,
and spools (bytes received in pieces, kept on disk beyond a few MiB)."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from numbers import Real
from typing import BinaryIO, Callable, Iterable, Iterator


def atomic_write(path: str | Path, data: str | bytes | Callable[[Path], object], *, exclusive: bool = False) -> Path:
    """Write ``data`` (text, bytes, or a function that writes a given temporary path) to ``path`` atomically.

    The content goes to a temporary file beside ``path``, is flushed to disk, then renamed
    into place. With ``exclusive`` an existing ``path`` is never replaced: ``FileExistsError``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        if callable(data):
            data(tmp)
        else:
            with open(tmp, "wb") as fh:
                fh.write(data.encode() if isinstance(data, str) else data)
        fsync(tmp)
        if exclusive:
            os.link(tmp, path)
        else:
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync(path.parent)
    return path


def fsync(path: str | Path) -> None:
    """Flush a file or directory (e.g. after a rename in it) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def slug(value: object) -> str:
    """``value`` as a file-name or macro-key part: lowercase letters, digits and '-' (``hpl_rate`` -> ``hpl-rate``, 2.0 -> 2)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return re.sub(r"[^a-z0-9]+", "-", str(value).lower()).strip("-")


#: Multipliers of size suffixes (binary: block sizes and working sets are powers of two).
_SUFFIX = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
_SIZE = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?\s*$", re.IGNORECASE)


def natural_key(level: object) -> tuple:
    """Sort key of a factor level: numbers and sizes (``4k``, ``32M``, ``1GiB``) by value, other text naturally."""
    if isinstance(level, Real) and not isinstance(level, bool):
        return (0, float(level), "")
    text = str(level)
    m = _SIZE.match(text)
    if m:
        return (0, float(m[1]) * _SUFFIX[m[2].lower()], text)
    return (1, 0.0, [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", text)])


def natural_order(levels: Iterable[object]) -> list:
    """The distinct ``levels`` in natural order (see :func:`natural_key`): 4k < 32k < 1M < 128M, node9 < node10."""
    return sorted(set(levels), key=natural_key)


#: Bytes a :class:`Spool` holds in memory; beyond them its bytes go to an anonymous temporary file.
SPILL = 8 << 20
#: Bytes a :class:`Spool` hands out per piece (:meth:`Spool.chunks`).
CHUNK = 1 << 20


class Spool:
    """Bytes received in pieces (a command's output): in memory up to :data:`SPILL` bytes, beyond that in an
    anonymous temporary file, so that an output of any size costs bounded memory and one pass to receive,
    store and hash. At most ``limit`` bytes are kept (None: all); what comes beyond is counted in
    :attr:`dropped`, not kept."""

    def __init__(self, data: bytes = b"", *, limit: int | None = None, file: BinaryIO | None = None) -> None:
        #: The file holding the bytes: ``file`` (its bytes from its start) or a spooled temporary file.
        self.file: BinaryIO = file if file is not None else tempfile.SpooledTemporaryFile(max_size=SPILL)  # type: ignore[assignment]
        self.limit = limit
        self.size = os.fstat(self.file.fileno()).st_size if file is not None else 0
        #: Bytes that came beyond ``limit`` and were not kept.
        self.dropped = 0
        if limit is not None and self.size > limit:
            self.file.truncate(limit)
            self.size, self.dropped = limit, self.size - limit
        self.file.seek(0, os.SEEK_END)
        self.write(data)

    def write(self, data: bytes) -> None:
        """Append ``data`` (the part beyond ``limit`` is only counted)."""
        keep = len(data) if self.limit is None else max(0, min(len(data), self.limit - self.size))
        if keep:
            self.file.write(data[:keep] if keep < len(data) else data)
            self.size += keep
        self.dropped += len(data) - keep

    def chunks(self, size: int = CHUNK) -> Iterator[bytes]:
        """The bytes in pieces of at most ``size``, from the start."""
        self.file.seek(0)
        while piece := self.file.read(size):
            yield piece
        self.file.seek(0, os.SEEK_END)

    def __bytes__(self) -> bytes:
        return b"".join(self.chunks())

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        """All the bytes as text (in memory: for parsers and messages, never for storing)."""
        return bytes(self).decode(encoding, errors)

    def __len__(self) -> int:
        return self.size

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Spool, bytes, bytearray)):
            return len(self) == len(other) and bytes(self) == bytes(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Spool({self.size} bytes{f', {self.dropped} dropped' if self.dropped else ''})"
