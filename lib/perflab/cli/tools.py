"""``perflab parse TOOL FILE [--json]``: print the tidy rows one raw output file yields; ``perflab tools-doc``.

A user checks one log by hand with it: the rows (metric, value, unit, dims) as an
aligned table or as JSON lines, or the parser's error naming the file and what was
expected. ``--stderr FILE`` passes a separate stderr capture (dd and stress-ng print
their results there). ``perflab tools-doc`` writes the parameter reference of ``docs/tools.md``
from the adapters' declarations (:mod:`perflab.tools.reference`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..tools import REGISTRY, get
from ..tools.base import Measurement, ParseError


def register(subparsers: Any) -> None:
    """Add the ``parse`` subcommand to an argparse ``subparsers`` object."""
    parser = subparsers.add_parser("parse", help="print the tidy rows a raw tool output yields",
                                   description="Print the tidy rows (metric, value, unit, dims) one raw "
                                               "tool output yields, or the parser's error.")
    parser.add_argument("tool", help=f"tool name: {', '.join(sorted(REGISTRY))}")
    parser.add_argument("file", type=Path, help="raw output file (stdout of the tool)")
    parser.add_argument("--stderr", type=Path, default=None, help="the tool's stderr, if captured separately")
    parser.add_argument("--json", action="store_true", help="one JSON object per row instead of a table")
    parser.set_defaults(func=handle)
    docs = subparsers.add_parser("tools-doc", help="write the parameter reference of docs/tools.md from the adapters",
                                 description="Rewrite the generated parameter section of docs/tools.md from every "
                                             "adapter's declared parameters; --check only says whether it is stale.")
    docs.add_argument("file", nargs="?", type=Path, default=Path("docs/tools.md"), help="default: docs/tools.md")
    docs.add_argument("--check", action="store_true", help="exit 1 when the file differs from the declarations")
    docs.set_defaults(func=handle_doc)


def handle(args: argparse.Namespace) -> int:
    """Parse ``args.file`` with ``args.tool``; print rows (exit 0) or the error (exit 1, or 2 for usage)."""
    try:
        tool = get(args.tool)
    except KeyError as exc:
        print(f"perflab parse: {exc.args[0]}", file=sys.stderr)
        return 2
    try:
        stdout = args.file.read_text(errors="replace")
        stderr = args.stderr.read_text(errors="replace") if args.stderr else ""
    except OSError as exc:
        print(f"perflab parse: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        rows = tool.parse(stdout, stderr, source=str(args.file))
    except ParseError as exc:
        print(f"perflab parse: {exc}", file=sys.stderr)
        return 1
    if args.json:
        for row in rows:
            print(json.dumps(row.as_row(), sort_keys=False))
    else:
        print(format_table(rows))
    print(f"{len(rows)} rows from {args.file} ({tool.name} parser v{tool.parser_version})", file=sys.stderr)
    return 0


def handle_doc(args: argparse.Namespace) -> int:
    """Rewrite (or with ``--check`` compare) the generated section of ``args.file``."""
    from ..tools import reference

    try:
        text = args.file.read_text()
    except OSError as exc:
        print(f"perflab tools-doc: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    if args.check:
        stale = reference.render(text) != text
        if stale:
            print(f"perflab tools-doc: {args.file} is stale; run `perflab tools-doc {args.file}`", file=sys.stderr)
        return int(stale)
    print(f"{args.file}: {'rewritten' if reference.write(args.file) else 'already up to date'}")
    return 0


def format_table(rows: list[Measurement]) -> str:
    """The rows as an aligned text table: metric, value, unit, then one column per dim."""
    dims: list[str] = []
    for row in rows:
        dims += [key for key in row.dims if key not in dims]
    header = ["metric", "value", "unit", *dims]
    lines = [[row.metric, "" if row.value is None else f"{row.value:.6g}", row.unit,
              *("" if row.dims.get(d) is None else str(row.dims[d]) for d in dims)] for row in rows]
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *lines)]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip()
                     for line in [header, *lines])
