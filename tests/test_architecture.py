"""The import graph of lib/perflab: no import against the flow, no cycle, no module over 800 lines.

The layers below are the flow of docs/architecture.md, first to last. A room (a top-level
module or package of ``perflab``) may import rooms of its own layer or of an earlier one,
never a later one; no chain of imports between modules comes back to where it started.
A new room goes into the table; docs/architecture.md's table is generated from it
(``.venv/bin/python tests/test_architecture.py``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "perflab"
#: The flow, first to last: layer -> its rooms and what each does. A room is a top-level module or a folder of
#: ``perflab`` (``perflab`` is the package's own __init__); every module in a folder is of the folder's layer.
#: docs/architecture.md's table is generated from this one: ``.venv/bin/python tests/test_architecture.py`` rewrites it.
LAYERS: list[tuple[str, dict[str, str]]] = [
    ("base", {
        "perflab": "the version",
        "errors": "UserError: one line per problem",
        "files": "atomic writes, name parts, spools: bytes received in pieces, on disk beyond a few MiB",
        "paths": "project root, scratch outputs",
        "yamlfile": "the one YAML loader: limits, line numbers, schema, `format`",
        "knownhosts": "known_hosts with markers",
        "formats": ("one module per file kind: its `format`, checked reader, migrations of older versions, writer; "
                    "raw records in `formats.records`"),
        "templates": "notebook templates' parameter contracts",
        "aoe": "a standalone AoE initiator script",
        "nfsbench": "a standalone NFS load loop over libnfs",
        "agent": "the standalone command agent sent to hosts",
    }),
    ("declarations", {
        "inventory": "how to reach hosts",
        "labspec": "lab files",
        "tools": "one adapter per benchmark: parameters, commands, parser",
        "campaign": ("the campaign model and loader; `values`: the positive rule for values; `checks`: a campaign's "
                     "semantic checks; `contracts`: tool parameters and factors against the adapters' declarations; "
                     "`design`: cells, RMIT schedules, run ids; `destructive`: campaigns that write to or reformat a "
                     "raw device, and their confirmation"),
        "study": "study declarations, discovered",
        "questions": "a study's pre-registered questions and deviations, and their digest",
        "datasource": "which campaign's data a study's analyses read: the lab stand-in or its real-hosts counterpart",
    }),
    ("hosts", {
        "hosts": ("`remote`: SSH with checked host keys, services; `executor`: the per-host command agent; "
                  "`registry`: a campaign's processes in a cgroup per host; `sshconfig`: warns when `~/.ssh/config` "
                  "would redirect a host; `lab`: the embedded lab: model, state, cgroups, net, storage, zfs, nfs, "
                  "sshd, vm, lifecycle, resolve; `fingerprint`: host facts; `monitors`: sysstat recorded through a "
                  "block, read per sample; `settle`: wait for quiet hosts; `preflight`: what a campaign needs on its "
                  "hosts; `measurelock`: one campaign measures on a machine at a time; `contention`: the "
                  "quiet-machine gate before each block, a contention record per sample"),
    }),
    ("raw", {
        "ledger": "run states as JSON lines, a hash chain",
        "store": "the raw store: samples written once, manifest, locks",
    }),
    ("runner", {
        "runner": "plans and runs a campaign: sessions, samples, pool, progress, outcome, stopping, leftovers",
        "rehearse": "one repetition of every cell at the shortest settings into scratch, never evidence",
    }),
    ("tidy", {
        "tidy": "raw output to the tidy table",
        "verify": "checksums, rebuilds",
        "crate": "RO-Crate export and import",
        "evidence": "what the raw data says about how it was measured",
    }),
    ("statistics", {
        "stats": ("describe, compare, blocked and mixed models, ANOVA, effects, power, drift, windows, verdicts of "
                  "the pre-registered questions, run comparisons, the steal-adjusted sensitivity analysis: computes, "
                  "never formats"),
    }),
    ("report", {
        "report": "figures, LaTeX tables, macros, lineage, the site; formats, never computes statistics",
    }),
    ("commands", {
        "cli": ("the `perflab` command: prints, catches UserError; `tools`: the tool subcommands; `stats`: the "
                "statistics subcommands' arguments; `stats_commands`: their handlers (read the tables, print the "
                "results)"),
        "pilot": "a short run and its summary",
    }),
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
    assert "perflab.errors" in GRAPH["perflab.cli"] and "perflab.hosts.lab.model" in GRAPH["perflab.hosts.lab.state"]


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
    "perflab.hosts.executor": 1,  # the agent's reply on the wire
    "perflab.hosts.fingerprint": 2,  # `ip -j link`, `tc -j qdisc` on the host
    "perflab.hosts.lab.ceph": 3,  # `ceph ... -f json`
    "perflab.hosts.lab.net": 1,  # `nft -j list table`
    "perflab.hosts.lab.shell": 1,  # `ip -j netns`
    "perflab.hosts.lab.lifecycle": 2,  # `ip -j link`; a lab spec's JSON round trip
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


#: Rooms that may import only the given layers, whatever their own layer is.
WALLS = {
    "stats": {"base"},  # computes from the tables it is given: reads no file kind but its input, never prints
    "tools": {"base"},  # declarations and parsers of benchmark output
}


def test_walled_rooms_import_only_what_their_wall_allows():
    layer_of = {room: name for name, rooms in LAYERS for room in rooms}
    over = [f"{m} imports {d} ({layer_of.get(_room(d))})" for m, deps in GRAPH.items() if _room(m) in WALLS
            for d in sorted(deps) if _room(d) != _room(m) and layer_of.get(_room(d)) not in WALLS[_room(m)]]
    assert not over, "imports over a room's wall:\n" + "\n".join(over)


def test_every_room_of_the_table_exists():
    gone = [room for _, rooms in LAYERS for room in rooms
            if room != "perflab" and not (LIB / room).is_dir() and not (LIB / f"{room}.py").exists()]
    assert not gone, f"rooms in LAYERS without a module or folder: {gone}"


def test_stats_and_report_never_print():
    printing = [str(p.relative_to(ROOT)) for room in ("stats", "report") for p in sorted((LIB / room).rglob("*.py"))
                if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
                       for n in ast.walk(ast.parse(p.read_text())))]
    assert not printing, f"stats/ computes and report/ formats, the command line prints: print() in {printing}"


def layer_table_markdown() -> str:
    """The layer table of docs/architecture.md, generated from LAYERS (a folder is written with its slash)."""
    rows = ["| layer | rooms |", "|---|---|"]
    for name, rooms in LAYERS:
        cells = []
        for room, what in rooms.items():
            shown = f"`{room}/`" if (LIB / room).is_dir() else f"`{room}`"
            cells.append(f"{shown} ({what})" if what else shown)
        rows.append(f"| {name} | {', '.join(cells)} |")
    return "\n".join(rows) + "\n"


TABLE = re.compile(r"^\| layer \| rooms \|\n(?:\|.*\n)+", re.M)


def test_the_architecture_page_table_is_the_generated_one():
    page = (ROOT / "docs" / "architecture.md").read_text()
    found = TABLE.search(page)
    assert found, "docs/architecture.md has no layer table ('| layer | rooms |')"
    assert found[0] == layer_table_markdown(), \
        "docs/architecture.md's layer table differs from LAYERS here: run .venv/bin/python tests/test_architecture.py"


if __name__ == "__main__":  # rewrite the page's layer table from LAYERS
    page_path = ROOT / "docs" / "architecture.md"
    text = page_path.read_text()
    page_path.write_text(TABLE.sub(lambda _: layer_table_markdown(), text, count=1))
    print(f"wrote the layer table of {page_path.relative_to(ROOT)}")
