"""Files: atomic writes (a reader sees the old file or the whole new one, never a part), name parts and their order."""

from __future__ import annotations

import os
import re
from pathlib import Path
from numbers import Real
from typing import Callable, Iterable


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
