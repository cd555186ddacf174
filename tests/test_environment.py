"""environment.yml (conda) and pyproject.toml (pip) describe the same environment; the Debian list is collected."""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> tuple[str, str]:
    m = re.match(r"^\s*([A-Za-z0-9_.-]+)\s*(.*)$", requirement)
    return m.group(1).lower().replace("_", "-"), m.group(2).replace(" ", "")


def test_conda_environment_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip_reqs = dict(_name(r) for r in project["dependencies"] + project["optional-dependencies"]["test"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = dict(_name(d) for d in env["dependencies"] if isinstance(d, str) and not d.startswith(("python", "pip")))
    assert conda == pip_reqs, "environment.yml and pyproject.toml differ; update both"


def test_conda_environment_installs_the_project():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip_section


def test_install_script_checks_exactly_the_collected_package_list(tmp_path):
    collected = subprocess.run([sys.executable, "-I", str(ROOT / "scripts/debian-packages.py")],
                               capture_output=True, text=True, check=True).stdout.split()
    fake = tmp_path / "bin"
    fake.mkdir()
    asked = tmp_path / "asked"
    # A dpkg-query that records each package asked about and says it is installed.
    (fake / "dpkg-query").write_text(f"#!/bin/sh\nfor last; do :; done\necho \"$last\" >> {asked}\n"
                                     "printf 'install ok installed'\n")
    (fake / "dpkg-query").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(ROOT / "scripts/install-debian.sh")], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"Debian packages: all {len(collected)} present"
    assert asked.read_text().split() == collected
