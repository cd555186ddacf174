"""Start-up: a subcommand imports only the stages it runs (timings are in benchmarks/bench_startup.py)."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from perflab import cli

ROOT = Path(__file__).resolve().parents[1]
#: Imports that cost 0.1-1.5 s each and that neither `--help` nor `plan` needs.
HEAVY = ("scipy", "pandas", "statsmodels", "pyarrow", "rfc3987_syntax", "papermill", "matplotlib")


def _modules_after(argv: list[str]) -> set[str]:
    """Top-level modules imported by ``perflab ARGV`` (which must succeed) in a fresh interpreter."""
    code = ("import sys\nfrom perflab import cli\ntry:\n    code = cli.main(sys.argv[1:])\n"
            "except SystemExit as exc:\n    code = exc.code\nprint(code, *sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT)
    status, *modules = done.stderr.splitlines()[-1].split()
    assert status == "0", done.stderr[-500:]
    return {name.partition(".")[0] for name in modules}


def test_help_imports_no_stage():
    loaded = _modules_after(["--help"])
    assert not loaded & {*HEAVY, "numpy", "jsonschema", "fabric", "yaml"}


def test_plan_imports_no_statistics_nor_format_grammars_nor_ssh_nor_numpy():
    loaded = _modules_after(["plan", "studies/iperf3-streams/campaigns/iperf3-streams.yaml", "--head", "0"])
    assert "jsonschema" in loaded and not loaded & {*HEAVY, "numpy", "fabric", "paramiko"}


@pytest.mark.parametrize("module", cli.PLUGINS)
def test_plugin_commands_read_from_source_match_what_register_adds(module):
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(module).register(sub)
    registered = {action.dest: action.help for action in sub._choices_actions}
    assert cli.plugin_commands(module) == registered and registered


def test_a_plugin_command_gets_its_full_parser(capsys):
    with pytest.raises(SystemExit):
        cli.main(["parse", "--help"])
    assert "--stderr" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["compare", "recheck", "compare-runs"])
def test_a_statistics_commands_help_imports_no_statistics(command):
    loaded = _modules_after([command, "--help"])
    assert "perflab" in loaded and not loaded & {*HEAVY, "numpy"}
