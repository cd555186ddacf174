"""The README says what the code does: its commands and options exist, its safe shell examples run."""

import argparse
import os
import re
import subprocess
from pathlib import Path

import pytest

from perflab import cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
#: Shell examples of the README that read and check only (no measurement, no install, no lab).
SAFE = ("cd data/raw/", "perflab studies list", "perflab parse ", "perflab verify data/raw/")


def _commands() -> list[str]:
    """Every `perflab ...` the README names in backticks."""
    return sorted({m.strip() for m in re.findall(r"`(perflab [^`]+)`", README)})


def _subparser(words: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The (sub)parser the leading words of a command select, and the words left."""
    p = cli.parser(words[0])
    while words:
        sub = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or words[0] not in sub.choices:
            break
        p, words = sub.choices[words[0]], words[1:]
    return p, words


@pytest.mark.parametrize("command", _commands())
def test_every_command_and_option_the_readme_names_exists(command):
    words = command.split()[1:]
    p, rest = _subparser(list(words))
    assert p.prog != "perflab", f"{command}: no such subcommand"
    options = {o for a in p._actions for o in a.option_strings}
    for option in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", " ".join(rest)):
        assert option in options, f"{command}: {p.prog} has no option {option}"


def test_every_make_target_the_readme_names_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.M))
    named = set(re.findall(r"`make ([a-z][a-z-]*)", README)) | set(re.findall(r"^\s+make ([a-z][a-z-]*)", README, re.M))
    assert named and named <= targets, named - targets


def _examples() -> list[str]:
    """The README's shell lines (indented code blocks and fenced blocks) that are safe to run."""
    lines = [line.strip() for line in README.splitlines() if line.startswith("    ") and not line.startswith("     ")]
    return [line for line in lines if line.startswith(SAFE)]


def test_the_readmes_safe_shell_examples_run():
    examples = _examples()
    assert any(e.startswith("cd data/raw/") for e in examples), "the reviewer's sha256sum example is found"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib"),
           "PATH": f"{Path(os.sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for line in examples:
        run = subprocess.run(["bash", "-c", line.replace("perflab ", f"{os.sys.executable} -m perflab.cli ", 1)
                              if line.startswith("perflab ") else line], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=300)
        assert run.returncode == 0, f"{line}: {run.stderr[-500:]}"


def test_make_jupyter_works_as_root_and_starts_no_browser():
    run = subprocess.run(["make", "-n", "jupyter"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    line = next(line for line in run.stdout.splitlines() if line.startswith("jupyter lab"))
    assert "--no-browser" in line
    assert ("--allow-root" in line) == (os.geteuid() == 0)


def test_a_template_opened_by_hand_without_its_tidy_table_says_what_to_run(tmp_path, monkeypatch):
    from perflab import tidy

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data/raw/demo").mkdir(parents=True)
    with pytest.raises(tidy.TidyError, match=r"^scratch/processed/nosuch.parquet: no tidy table yet; campaign nosuch "
                                             r"has no raw data in data/raw/nosuch/ yet: run the pipeline"):
        tidy.load("scratch/processed/nosuch.parquet")
    (tmp_path / "data/raw/demo/campaign.json").write_text("{}")
    with pytest.raises(tidy.TidyError, match=r"make it with `perflab tidy data/raw/demo --out data/processed`$"):
        tidy.load("data/processed/demo.parquet")


def _declared_outputs() -> set[str]:
    """Every file the pipeline declares it writes, a wildcard filled in: the quoted paths of the ``output:`` and
    ``log:`` blocks of the Snakefile and its rules, and each study analysis's outputs with their lineage sidecars."""
    from perflab import study

    paths: set[str] = set()
    for rules in [ROOT / "Snakefile", *sorted((ROOT / "rules").glob("*.smk"))]:
        block = None
        for line in rules.read_text().splitlines():
            indent = len(line) - len(line.lstrip())
            if line.strip() in ("output:", "log:"):
                block = indent
            elif block is not None and line.strip() and indent <= block:
                block = None
            elif block is not None:
                paths |= set(re.findall(r"\"([\w./{}-]+/[\w./{}-]+)\"", line))
    for s in study.discover(ROOT):
        for a in s.analyses:
            paths |= {p for out in a.outputs.values() for p in (out, str(Path(out).with_suffix("")) + ".lineage.json")}
    return {re.sub(r"\{[^}]*\}", "x", p) for p in paths}


def test_make_clean_outputs_leaves_no_generated_file(tmp_path):
    """A tree holding the tracked files and every declared pipeline output, LaTeX's by-products and the logs:
    after `make clean-outputs` git sees nothing untracked or ignored, and every tracked file (raw data) is left."""
    declared = {p for p in _declared_outputs() if not p.startswith("data/raw/")}  # measured, never regenerated
    assert {"paper/main.pdf", "reports/index.html", "data/processed/x.parquet", "data/processed/x.verified",
            "paper/sections/iperf3-streams-throughput.tex"} <= declared, sorted(declared)
    tracked = ["Makefile", ".gitignore", "paper/main.tex", "data/raw/demo/MANIFEST.sha256",
               *[f"{d}/.gitkeep" for d in ("data/processed", "paper/figures", "paper/tables", "paper/macros",
                                           "paper/sections")]]
    for rel in tracked:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes((ROOT / rel).read_bytes() if rel in ("Makefile", ".gitignore") else b"x\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "-f", *tracked], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "tracked"], cwd=tmp_path, check=True)
    latex = [f"paper/main.{ext}" for ext in ("aux", "log", "out", "toc", "lof", "lot", "bbl", "bcf", "blg", "fls",
                                            "fdb_latexmk", "run.xml", "synctex.gz")]
    made = sorted(declared | set(latex) | {"paper/macros/build.tex", "reports/files/data/raw/demo/MANIFEST.sha256"})
    for rel in made:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("generated\n")
    status = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"], cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout
    assert "paper/main.pdf" in status and "data/processed/x.parquet" in status
    subprocess.run(["make", "--no-print-directory", "clean-outputs"], cwd=tmp_path, check=True, capture_output=True)
    status = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"], cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout
    assert status == "", status


def test_the_readme_begins_with_the_two_commands():
    lines = README.splitlines()
    assert lines[0] == "# perflab" and lines[1] == ""
    assert [line.split()[:2] for line in lines[2:4]] == [["make", "reproduce"], ["make", "test"]] and lines[4] == ""


def test_the_readme_names_the_studies_and_counts_the_campaigns_measured_and_re_analysed():
    from perflab import study

    studies = study.discover(ROOT)
    seeds = [s for s in studies if s.source]
    assert len(seeds) == 5 and all(f"| `{s.id}` | {s.title}" in README for s in studies), "every study by its title"
    committed = set(subprocess.run(["git", "ls-files", "data/raw"], cwd=ROOT, capture_output=True, text=True,
                                   check=True).stdout.split())
    declared = [c.id for s in studies for c in s.campaigns]
    stored = [c for c in declared if f"data/raw/{c}/campaign.json" in committed]
    waiting = [c.id for s in studies for c in s.campaigns if c.planned and c.id not in stored]
    measured = [c for c in declared if c not in stored and c not in waiting]
    text = " ".join(README.split())
    assert f"The studies declare {len(declared)} campaigns. The {len(stored)} campaigns of the five studies" in text
    assert (f"{len(waiting)} more are declared before their data and not yet measured" if waiting
            else "None is declared and still waiting for its data") in text
    assert all(c in {c.id for s in seeds for c in s.campaigns} for c in stored)
    assert f"`make reproduce` measures only the {len(measured)} demonstration campaigns" in text
    assert all(any(s.demo or s.id == "iperf3-streams" for s in studies if c in {x.id for x in s.campaigns})
               for c in measured)


def test_the_readme_says_what_make_test_runs_and_that_root_is_required():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test: install lint\b", makefile, re.M) and re.search(r"^lint:.*\n\truff check \.\n\tmypy lib/perflab",
                                                                          makefile, re.M)
    text = " ".join(README.split())
    assert "first `ruff check .` and `mypy lib/perflab` (`make lint`), then pytest in two processes" in text
    assert "then the tests marked `alone`" in text and "TEST_WORKERS ?= 2" in makefile
    assert "need a Debian machine and **root**" in text and "`make` stops there" in text
    script = (ROOT / "scripts/install-debian.sh").read_text()
    assert re.search(r'if \[ "\$\(id -u\)" -ne 0 \]; then\n  echo "Debian packages missing.*\n.*\n  exit 1', script)


def test_make_reproduce_runs_as_many_jobs_as_the_machine_has_cores_unless_told():
    default = subprocess.run(["make", "-n", "reproduce"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert f"snakemake --cores {len(os.sched_getaffinity(0))} " in default.stdout, default.stdout[-2000:]
    one = subprocess.run(["make", "-n", "reproduce", "CORES=1"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "snakemake --cores 1 " in one.stdout, one.stdout[-2000:]
