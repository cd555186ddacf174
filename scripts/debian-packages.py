#!/usr/bin/env python3
"""Print the Debian packages perflab needs, one per line, sorted: the base list below plus
every package the library declares.

The library declares packages in two literal forms, read here from the source with
``ast`` (this script runs before the virtual environment exists, so it imports nothing
beyond the standard library):

- a tool adapter's class attribute ``debian_packages = ("fio",)`` in
  ``lib/perflab/tools/*.py``;
- a module-level ``DEBIAN_PACKAGES = ("iproute2", ...)`` in any ``lib/perflab/**/*.py``.

A declaration that is not a literal tuple of strings is an error naming the file and line.
Usage: ``python3 scripts/debian-packages.py [ROOT]`` (ROOT defaults to the project root).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

#: Packages the project needs whatever its tools: Python, SSH, namespaces, TeX, PDF checks.
BASE = (
    "python3", "python3-venv", "openssh-server", "openssh-client", "iproute2", "procps", "psmisc",
    "iputils-ping", "util-linux", "coreutils",
    "latexmk", "texlive-latex-base", "texlive-latex-recommended", "texlive-latex-extra",
    "texlive-fonts-recommended", "lmodern", "fonts-lmodern", "poppler-utils",
    "biber", "texlive-bibtex-extra",  # the paper's bibliography (biblatex)
    "texlive-science",  # siunitx, for the numbers in generated tables
    "chromium",  # the review site is checked in a headless browser by the tests
    "slurmctld", "slurmd", "slurm-client",  # the Slurm profile's test on a single-node Slurm (docs/cluster.md)
)


def _strings(node: ast.expr, where: str) -> tuple[str, ...]:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        value = None
    if not isinstance(value, tuple) or not all(isinstance(v, str) and v for v in value):
        raise SystemExit(f"{where}: expected a literal tuple of package names, e.g. (\"fio\",); "
                         f"found {ast.unparse(node)}")
    return value


def _assignments(body: list[ast.stmt], name: str) -> list[tuple[ast.expr, int]]:
    """Values assigned to ``name`` by the plain or annotated assignments in ``body``."""
    out = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            out.append((stmt.value, stmt.lineno))
        elif (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name
              and stmt.value is not None):
            out.append((stmt.value, stmt.lineno))
    return out


def declared(lib: Path) -> set[str]:
    """Packages declared under ``lib`` (the ``perflab`` package directory)."""
    found: set[str] = set()
    for path in sorted(lib.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for value, line in _assignments(tree.body, "DEBIAN_PACKAGES"):
            found |= set(_strings(value, f"{path}:{line}"))
        if path.parent.name == "tools":
            for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
                for value, line in _assignments(cls.body, "debian_packages"):
                    found |= set(_strings(value, f"{path}:{line} (class {cls.name})"))
    return found


def main(argv: list[str]) -> int:
    """Print the packages for the project at ``argv[0]`` (default: this script's project)."""
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[1]
    lib = root / "lib" / "perflab"
    if not lib.is_dir():
        print(f"debian-packages: no lib/perflab under {root}; pass the project root", file=sys.stderr)
        return 2
    print("\n".join(sorted(set(BASE) | declared(lib))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
