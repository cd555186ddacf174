"""environment.yml (conda) and pyproject.toml (pip) describe the same environment."""

import re
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
