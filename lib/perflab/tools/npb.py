"""NAS Parallel Benchmarks (NPB 2.x/3.x, MPI and OpenMP): time, Mop/s and verification.

NPB is not packaged in Debian, so perflab only parses its output (tests use outputs
published with their origin). The result block every kernel prints after
"<NAME> Benchmark Completed" is ``Key = value`` lines: Class, Size, Iterations, Time in
seconds, Total processes or Total threads, Mop/s total, Mop/s/process or
Mop/s/thread, Operation type, Verification, Version.

Rows: ``time`` (s), ``mops`` (Mop/s total), ``mops_per_worker`` (Mop/s per process or
thread), ``workers`` (count), ``iterations`` (count), with dims ``benchmark`` (e.g.
"MG") and ``class`` (e.g. "B"). A run whose Verification is not SUCCESSFUL raises
:class:`ParseError`: its numbers describe a wrong answer.
"""

from __future__ import annotations

import re
from typing import Any

from . import _blocks
from .base import Measurement, ParseError, ParseOnly, Rows, key_values, search

#: Lines of NPB's results block, printed once per run.
_ONCE = (re.compile(r"Benchmark Completed"),
         *(re.compile(rf"^\s*{key}\s*=", re.M) for key in ("Verification", "Mop/s total", "Time in seconds")))
_BLOCK = re.compile(r"^\s*(?P<name>[A-Z][A-Z-]*) Benchmark Completed\.?\s*$(?P<body>.*?)(?:^\s*$|\Z)",
                    re.MULTILINE | re.DOTALL)


class Npb(ParseOnly):
    """Parser for NPB's printed results block."""

    name = "npb"
    parser_version = 1

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """Time, Mop/s total and per worker, workers and iterations of one kernel run."""
        _blocks.once(stdout, *_ONCE, source=source)
        block = search(_BLOCK, stdout, source=source,
                       expected="NPB's '<NAME> Benchmark Completed' results block")
        fields = key_values(block["body"], "=")
        for key in ("Class", "Time in seconds", "Mop/s total", "Verification"):
            if not fields.get(key):
                raise ParseError(source, f"'{key} = ...' in the {block['name']} results block",
                                 "missing (truncated output?)")
        if fields["Verification"] != "SUCCESSFUL":
            raise ParseError(source, "Verification = SUCCESSFUL", f"Verification = {fields['Verification']}")
        dims: dict[str, Any] = {"benchmark": block["name"], "class": fields["Class"]}
        workers_key = next((k for k in ("Total processes", "Total threads", "Total tasks") if k in fields), None)
        per_key = next((k for k in ("Mop/s/process", "Mop/s/thread") if k in fields), None)
        rows = Rows(source)
        rows.add("time", fields["Time in seconds"], "s", "Time in seconds", **dims)
        rows.add("mops", fields["Mop/s total"], "Mop/s", "Mop/s total", **dims)
        if per_key:
            rows.add("mops_per_worker", fields[per_key], "Mop/s", per_key, **dims)
        if workers_key:
            rows.add("workers", fields[workers_key], "count", workers_key, **dims)
        if fields.get("Iterations"):
            rows.add("iterations", fields["Iterations"], "count", "Iterations", **dims)
        return rows
