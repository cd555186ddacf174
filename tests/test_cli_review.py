"""The reviewer-facing commands: a closed pipe is not an error; every command explains itself."""

import os
import subprocess
import sys
from pathlib import Path

from perflab import cli

ROOT = Path(__file__).resolve().parents[1]


def test_a_reader_that_leaves_early_gets_no_traceback():
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte, as with `| head` after its lines
    try:
        run = subprocess.run([sys.executable, "-m", "perflab.cli", "parse", "iperf3",
                              "tests/fixtures/lab/iperf3-tcp-P4.json"], cwd=ROOT, stdout=write, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(ROOT / "lib")}, text=True, timeout=120)
    finally:
        os.close(write)
    assert "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr, run.stderr
    assert run.returncode == 141


def test_review_commands_have_a_description_and_an_example():
    sub = next(a for a in cli.parser()._actions if a.dest == "command")
    for name in ("verify", "report", "lineage"):
        p = sub.choices[name]
        assert p.description and len(p.description) > 80, name
        assert p.epilog and f"perflab {name}" in p.epilog, name
