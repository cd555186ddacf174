"""dd (GNU coreutils): bytes copied, elapsed time and rate from dd's final line.

Role: ``client``. Parameters: ``if`` (default /dev/zero), ``of`` (required), ``bs``,
``count``, ``oflag`` (e.g. direct), ``iflag``, ``conv`` (e.g. fdatasync).

dd prints its result on stderr; the parser reads stderr and stdout. The rate uses the
unit dd prints (kB, MB, GB are decimal, KiB, MiB, GiB binary) and may carry a decimal
comma, as in seed 001's "11,2378 s, 478 MB/s" and "1,3 GB/s". The printed rate has two
or three significant digits; ``throughput_computed`` is bytes / elapsed. The two
disagree beyond rounding when a quoted line was altered: seed 001 quotes "27 s,
202 MB/s", but 5368709120 B / 27 s is 199 MB/s.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..errors import InputError
from . import _blocks
from .base import Command, Measurement, Param, Rows, Tool, quantity, search

_RESULT = re.compile(r"^(?P<bytes>\d+) (?:bytes?|bytes? \(.*?\)) .*?, (?P<elapsed>\d+(?:[.,]\d+)?(?:e-?\d+)?) s, "
                     r"(?P<rate>\d+(?:[.,]\d+)?) (?P<unit>[kKMGTP]?i?B/s)\s*$", re.MULTILINE)
#: What one dd run prints once besides its result: records read, and the command in a transcript ("# dd ...").
_RECORDS_IN = re.compile(r"^\d+\+\d+ \S+ (?:in|leidos|read)", re.MULTILINE)
_TRANSCRIPT = re.compile(r"^#\s*dd\s", re.MULTILINE)
_RECORDS = re.compile(r"^(?P<full>\d+)\+(?P<partial>\d+) \S+ (?:out|escritos|written)", re.MULTILINE)


class Dd(Tool):
    """Adapter for GNU dd's summary line."""

    name = "dd"
    parser_version = 1
    primary_metric = "throughput_computed"
    debian_packages = ("coreutils",)
    version_command = ("dd", "--version")
    params = (
        Param("of", "write-path", None, "", "the file or device dd writes (required)"),
        Param("if", "path", "/dev/zero", "", "the file dd reads"),
        Param("bs", "size", "512", "byte", "bytes per read and write", positive=True),
        Param("count", "int", 1, "", "blocks to copy", positive=True),
        Param("oflag", "word", None, "", "output flags, e.g. direct or dsync"),
        Param("iflag", "word", None, "", "input flags"),
        Param("conv", "word", None, "", "conversions, e.g. fdatasync"),
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """``dd if=... of=... bs=... count=... [oflag=...]``."""
        if not params.get("of"):
            raise InputError("dd needs an output file parameter 'of' (a scratch file or a device to overwrite)")
        argv = ["dd", f"if={params.get('if', '/dev/zero')}", f"of={params['of']}"]
        for key in ("bs", "count", "oflag", "iflag", "conv"):
            if params.get(key) is not None:
                argv.append(f"{key}={params[key]}")
        return [Command("client", tuple(argv))]

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """``bs`` x ``count`` at 200 MB/s (a local disk or page cache), plus process start-up (10 ms: 6 ms for
        1 MiB with ``conv=fdatasync`` on a lab host of a 2-core machine, 2026-11-27)."""
        return _bytes(str(params.get("bs", "512"))) * float(params.get("count", 1)) / 200e6 + 0.01

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """Bytes, elapsed seconds, dd's printed rate and the exact bytes/elapsed rate."""
        text = stderr + "\n" + stdout
        _blocks.once(text, _RECORDS, _RECORDS_IN, _TRANSCRIPT, *(() if "\r" in text else (_RESULT,)),
                     source=source)  # \r: status=progress prints result-like lines
        matches = list(_RESULT.finditer(text))
        result = matches[-1] if matches else search(
            _RESULT, text, source=source, expected="dd's result line 'N bytes (...) copied, T s, R MB/s'")
        rows = Rows(source)
        copied = int(result["bytes"])
        elapsed = float(result["elapsed"].replace(",", "."))
        rate, _ = quantity(result["rate"], result["unit"], source=source, what="dd rate")
        rows.add("bytes", copied, "byte", "bytes copied")
        rows.add("elapsed", elapsed, "s", "elapsed seconds")
        rows.add("throughput", rate, "byte/s", "printed rate")
        rows.add("throughput_computed", copied / elapsed if elapsed > 0 else None, "byte/s", "bytes / elapsed")
        records = list(_RECORDS.finditer(text))
        if records:
            rows.add("records_full", records[-1]["full"], "count", "records out (full)")
            rows.add("records_partial", records[-1]["partial"], "count", "records out (partial)")
        return rows


def _bytes(size: str) -> float:
    """dd's size syntax: a number with an optional k, M, G (powers of 1024) or kB, MB, GB (of 1000) suffix."""
    match = re.fullmatch(r"(\d+)([kKMGT]?)(B?)", size.strip())
    if not match:
        return 512.0
    number, unit, decimal = match.groups()
    base = 1000 if decimal else 1024
    return float(number) * base ** " KMGT".index(unit.upper() or " ")
