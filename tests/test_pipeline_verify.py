"""The pipeline checks raw bytes before it reads them: a changed byte stops it, naming the file."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import copy_project

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
STUDY = "004-aoe-iscsi"
CAMPAIGN = "004-confirm-mtu"


def _snakemake(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    return subprocess.run(["snakemake", *args, "--cores", "1", "--config", "demos=False"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_changed_raw_byte_stops_the_pipeline_naming_the_file(tmp_path):
    copy_project(ROOT, tmp_path, studies=[STUDY])  # one study with committed raw data is enough
    stamp = f"data/processed/{CAMPAIGN}.verified"

    first = _snakemake(tmp_path, stamp)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert (tmp_path / stamp).exists()
    again = _snakemake(tmp_path, "-n", stamp)
    assert again.returncode == 0 and "verify_raw" not in again.stdout, again.stdout[-2000:]

    sample = sorted((tmp_path / f"data/raw/{CAMPAIGN}/samples").iterdir())[0]
    stdout = sample / "stdout"
    data = bytearray(stdout.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of one byte
    stdout.write_bytes(bytes(data))

    planned = _snakemake(tmp_path, "-n", stamp)
    assert planned.returncode == 0 and "verify_raw" in planned.stdout, planned.stdout[-2000:]
    stopped = _snakemake(tmp_path, stamp)
    assert stopped.returncode != 0
    out = stopped.stdout + stopped.stderr
    assert f"samples/{sample.name}/stdout" in out and "checksum differs" in out, out[-3000:]
