"""The Slurm profile: its options are Snakemake's, and it runs a rule through sbatch on a real single-node Slurm.

The live test needs root; `make test` installs Debian's slurmctld and slurmd and
snakemake-executor-plugin-slurm (the `test` extra), so as root their absence fails the test, naming what is
missing. It is skipped without root or where the machine has a Slurm of its own (docs/cluster.md).
"""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "profiles/slurm"


def test_every_profile_key_is_a_snakemake_option():
    from snakemake.cli import get_argument_parser

    options = {s.lstrip("-") for a in get_argument_parser()._actions for s in a.option_strings}
    config = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert config["executor"] == "slurm"
    assert sorted(set(config) - options) == []


@pytest.mark.skipif(os.geteuid() != 0 or os.path.exists("/etc/slurm/slurm.conf"),
                    reason="needs root and no Slurm configured on this machine")
def test_the_profile_runs_a_rule_as_a_slurm_job_on_a_single_node_slurm():
    missing = [t for t in ("slurmctld", "slurmd", "sbatch") if not shutil.which(t)]
    missing += [] if importlib.util.find_spec("snakemake_executor_plugin_slurm") else ["snakemake-executor-plugin-slurm"]
    assert not missing, f"not installed: {', '.join(missing)}; run make install (scripts/debian-packages.py, the test extra)"
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(["bash", str(PROFILE / "single-node-test.sh")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PASS: rule 'job' ran as Slurm job" in done.stdout
    assert not os.path.exists("/etc/slurm/slurm.conf")
