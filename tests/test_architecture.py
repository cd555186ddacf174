"""The import graph of lib/perflab: no import against the flow, no cycle, no module over 800 lines.

The layers below are the flow of docs/architecture.md, first to last. A room (a top-level
module or package of ``perflab``) may import rooms of its own layer or of an earlier one,
never a later one; no chain of imports between modules comes back to where it started.
A new room goes into the table and into docs/architecture.md.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "perflab"
#: The flow, first to last: layer -> its rooms (``perflab`` is the package's own __init__).
LAYERS: list[tuple[str, set[str]]] = [
    ("base", {"perflab", "errors", "files", "paths", "yamlfile", "knownhosts", "formats", "templates", "aoe", "nfsbench",
              "agent"}),
    ("declarations", {"inventory", "labspec", "tools", "campaign", "campaign_values", "campaign_checks",
                      "campaign_contracts", "design", "study", "questions", "datasource", "destructive"}),
    ("hosts", {"remote", "executor", "registry", "sshconfig", "lab", "fingerprint", "monitors", "settle", "preflight",
               "measurelock", "contention"}),
    ("raw", {"ledger", "store"}),
    ("runner", {"runner", "rehearse"}),
    ("tidy", {"tidy", "verify", "crate", "evidence"}),
    ("statistics", {"stats"}),
    ("report", {"report"}),
    ("commands", {"cli", "pilot"}),
]
LAYER = {room: i for i, (_, rooms) in enumerate(LAYERS) for room in rooms}
MAX_LINES = 800


def _module(path: Path) -> str:
    parts = path.relative_to(LIB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in sorted(LIB.rglob("*.py"))}


def _imports(module: str, path: Path) -> set[str]:
    """The perflab modules ``module`` imports (at any depth of its code: deferred imports count)."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            targets = [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            while target not in MODULES and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in MODULES and target != module:
                out.add(target)
    return out


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_the_graph_was_read():
    assert len(MODULES) > 60 and sum(map(len, GRAPH.values())) > 100
    assert "perflab.errors" in GRAPH["perflab.cli"] and "perflab.lab.model" in GRAPH["perflab.lab.state"]


def test_every_room_has_a_layer():
    rooms = {_room(m) for m in MODULES}
    missing = sorted(rooms - LAYER.keys())
    assert not missing, f"rooms without a layer: {missing}; add them to LAYERS here and to docs/architecture.md"


def test_no_import_runs_against_the_flow():
    against = [f"{m} ({LAYERS[LAYER[_room(m)]][0]}) imports {d} ({LAYERS[LAYER[_room(d)]][0]})"
               for m, deps in GRAPH.items() for d in sorted(deps)
               if LAYER.get(_room(d), 0) > LAYER.get(_room(m), len(LAYERS))]
    assert not against, "imports against the flow:\n" + "\n".join(against)


def test_no_import_forms_a_cycle():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []
    for start in GRAPH:  # Tarjan's strongly connected components, iteratively
        if start in index:
            continue
        work = [(start, iter(sorted(GRAPH[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(GRAPH[child]))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    assert not cycles, f"import cycles: {cycles}"


def test_a_planted_cycle_and_a_backward_import_are_seen(monkeypatch):
    monkeypatch.setitem(GRAPH, "perflab.errors", GRAPH["perflab.errors"] | {"perflab.report.figures"})
    with pytest.raises(AssertionError, match=r"perflab.errors \(base\) imports perflab.report.figures \(report\)"):
        test_no_import_runs_against_the_flow()
    monkeypatch.undo()
    monkeypatch.setitem(GRAPH, "perflab.files", GRAPH["perflab.files"] | {"perflab.paths"})
    monkeypatch.setitem(GRAPH, "perflab.paths", GRAPH["perflab.paths"] | {"perflab.files"})
    with pytest.raises(AssertionError, match=r"import cycles: \[\['perflab.files', 'perflab.paths'\]\]"):
        test_no_import_forms_a_cycle()


def test_no_module_is_over_800_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by job): {long}"


#: Rooms that parse what programs print, not project files: benchmark output (``tools``) and the standalone scripts.
PARSERS_OF_OUTPUT = {"tools", "agent", "aoe", "nfsbench"}
#: Modules outside those rooms whose reads parse a program's output or a value in memory, by count.
OUTPUT_READS = {
    "perflab.executor": 1,  # the agent's reply on the wire
    "perflab.fingerprint": 2,  # `ip -j link`, `tc -j qdisc` on the host
    "perflab.lab.ceph": 3,  # `ceph ... -f json`
    "perflab.lab.net": 1,  # `nft -j list table`
    "perflab.lab.shell": 1,  # `ip -j netns`
    "perflab.lab.lifecycle": 2,  # `ip -j link`; a lab spec's JSON round trip
    "perflab.tidy": 1,  # sadf's JSON output of a host's sysstat archive
}
#: Calls that parse a file's text: module.attribute (any module for the pandas readers).
_PARSES = {("json", "loads"), ("json", "load"), ("yaml", "safe_load"), ("yaml", "load")}
_READERS = {"read_csv", "read_parquet"}


def _parse_calls(path: Path) -> int:
    """How many calls of ``path`` parse JSON, YAML, CSV or Parquet."""
    count = 0
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value.id if isinstance(node.func.value, ast.Name) else ""
            count += (owner, node.func.attr) in _PARSES or node.func.attr in _READERS
    return count


def test_only_formats_parses_project_files():
    found = {m: n for m, p in MODULES.items() if _room(m) not in PARSERS_OF_OUTPUT | {"formats"}
             and (n := _parse_calls(p))}
    allowed = OUTPUT_READS
    more = sorted(f"{m}: {n} parse call(s), {allowed.get(m, 0)} allowed" for m, n in found.items()
                  if n > allowed.get(m, 0))
    assert not more, ("project files parsed outside formats/ (read them through a module of lib/perflab/formats, "
                      "docs/architecture.md):\n" + "\n".join(more))
    fewer = sorted(f"{m}: {found.get(m, 0)} parse call(s), {n} listed" for m, n in allowed.items() if found.get(m, 0) < n)
    assert not fewer, "lower these entries of OUTPUT_READS (a command output no longer parsed there):\n" + "\n".join(fewer)


def test_a_planted_json_loads_outside_formats_is_seen(tmp_path, monkeypatch):
    planted = tmp_path / "planted.py"
    planted.write_text("import json\n\ndef read(path):\n    return json.loads(path.read_text())\n")
    monkeypatch.setitem(MODULES, "perflab.planted", planted)
    with pytest.raises(AssertionError, match=r"perflab.planted: 1 parse call\(s\), 0 allowed"):
        test_only_formats_parses_project_files()
    planted.write_text("import pandas as pd\n\ndef read(path):\n    return pd.read_csv(path)\n")
    with pytest.raises(AssertionError, match=r"perflab.planted: 1 parse call"):
        test_only_formats_parses_project_files()
    monkeypatch.setitem(MODULES, "perflab.formats.planted", planted)
    monkeypatch.delitem(MODULES, "perflab.planted")
    test_only_formats_parses_project_files()


def test_the_architecture_page_names_every_room_in_its_layer():
    page = (ROOT / "docs" / "architecture.md").read_text()
    for name, rooms in LAYERS:
        row = re.search(rf"^\| {name} \|(.*)$", page, re.M)
        assert row, f"docs/architecture.md has no table row for layer {name}"
        present = {r for r in rooms if r == "perflab" or (LIB / r).exists() or (LIB / f"{r}.py").exists()}
        for room in present:
            assert f"`{room}`" in row[1], f"docs/architecture.md: layer {name} does not name `{room}`"
