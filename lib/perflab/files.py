"""Files: atomic writes (a reader sees the old file or the whole new one, never a part) and name parts."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable


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
