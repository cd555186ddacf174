"""The one YAML loader: hostile files are one-line errors naming the file, for every file kind, never a hang.

Each hostile input runs in a subprocess with a generous bound: the test fails if the readers
do not all finish within it (a hang), never on how fast they were.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perflab import campaign as campaign_mod, inventory, labspec, yamlfile

ROOT = Path(__file__).resolve().parents[1]
BOUND = 60  # seconds for all readers of one input; they take well under a second each

BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
HOSTILE = {
    "alias-bomb": (BOMB, "aliases expanded"),
    "100001-levels": ("a: " + "[" * 100_001 + "]" * 100_001 + "\n", "nested deeper than"),
    "5000-deep-mappings": ("a: " + "{b: " * 5000 + "1" + "}" * 5000 + "\n", "nested deeper than"),
    "block-nesting": ("a:\n  " + "- " * 100_001 + "x\n", "nested deeper than"),
    "nul-byte": ("campaign: x\nhosts: {a: b\x00}\n", ":2: a NUL byte"),
    "huge-list": ("a: [" + "1, " * 300_000 + "1]\n", "aliases expanded"),
    "huge-file": ("a: " + "x" * (yamlfile.MAX_BYTES + 1) + "\n", "allowed in"),
    "not-utf8": ("a: b\n", "is not UTF-8"),
}

#: Reads one file with every reader and prints, per reader, what happened (run in a subprocess).
READERS = r"""
import json, sys
from pathlib import Path
from perflab import campaign as spec, errors, inventory, labspec, study, yamlfile
path = Path(sys.argv[1])
readers = {"campaign": lambda: spec.load(path), "lab file": lambda: labspec.load(path),
           "inventory": lambda: inventory.load(path), "config": lambda: yamlfile.load(path, "config"),
           "study": lambda: study.load(path.parent, path.parents[2])}
for name, read in readers.items():
    try:
        read()
        out = {"reader": name, "outcome": "accepted"}
    except errors.UserError as exc:
        out = {"reader": name, "outcome": "user error", "lines": str(exc).splitlines()}
    except BaseException as exc:
        out = {"reader": name, "outcome": f"{type(exc).__name__}: {str(exc)[:300]}"}
    print(json.dumps(out), flush=True)
"""


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_reader_refuses_a_hostile_file_in_one_line(tmp_path, name):
    text, problem = HOSTILE[name]
    path = tmp_path / "studies" / "x" / "study.yaml"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"a: \xff\xfe\n" if name == "not-utf8" else text.encode())
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'lib'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    try:
        done = subprocess.run([sys.executable, "-c", READERS, str(path)], capture_output=True, text=True, env=env,
                              timeout=BOUND)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name}: the readers did not finish within {BOUND} s (a hang)")
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == 5, done.stderr[-2000:]
    for r in results:
        assert r["outcome"] == "user error", r
        assert len(r["lines"]) == 1, r
        assert str(path) in r["lines"][0] or "studies/x/study.yaml" in r["lines"][0], r
        assert problem in r["lines"][0], r


def test_the_cli_refuses_a_hostile_campaign_in_one_line(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'lib'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, "-m", "perflab.cli", "plan", str(path)], capture_output=True, text=True,
                          env=env, timeout=BOUND)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"perflab plan: error: {path}:") and "aliases expanded" in done.stderr


def test_limits_leave_ordinary_files_alone_and_keep_line_numbers():
    doc, lines = yamlfile.load("x.yaml", "config", text="a: &x {b: [1, 2]}\nc: *x\nd: on\ne:\n  - 1\n")
    assert doc == {"a": {"b": [1, 2]}, "c": {"b": [1, 2]}, "d": "on", "e": [1]}
    assert lines[("c",)] == 2 and lines[("e", 0)] == 5
    nested = "a: " + "[" * (yamlfile.MAX_DEPTH - 1) + "]" * (yamlfile.MAX_DEPTH - 1)
    assert yamlfile.load("x.yaml", "config", text=nested)[0]["a"] is not None


def test_a_duplicate_key_and_bad_yaml_name_their_line(tmp_path):
    with pytest.raises(yamlfile.YamlSyntaxError, match=r"^x.yaml:3: not valid YAML: duplicate key 'a'"):
        yamlfile.load("x.yaml", "config", text="a: 1\nb: 2\na: 3\n")
    with pytest.raises(yamlfile.YamlSyntaxError, match=r"^x.yaml:2: not valid YAML"):
        yamlfile.load("x.yaml", "config", text="a: [1\nb: 2\n")


def test_shipped_files_of_every_kind_load():
    campaigns = sorted(ROOT.glob("studies/*/campaigns/*.yaml"))
    labs = sorted(ROOT.glob("labs/*.yaml"))
    assert campaigns and labs, "no shipped campaigns or lab files found"
    for path in campaigns:
        campaign_mod.load(path)
    for path in labs:
        labspec.load(path)
    yamlfile.load(ROOT / "config" / "config.yaml", "config")
    inventories = sorted(ROOT.glob("studies/*/real-hosts/inventory*.yaml"))
    assert inventories, "no shipped inventory found"
    for path in inventories:
        inventory.load(path)
