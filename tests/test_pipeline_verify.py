"""The pipeline checks raw bytes before it reads them: a changed byte stops it, naming the file."""

import os
from pathlib import Path

import pytest

from helpers import copy_project, snakemake as _snakemake

ROOT = Path(__file__).resolve().parents[1]
STUDY = "004-aoe-iscsi"
CAMPAIGN = "004-confirm-mtu"


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


def _raw_signature():
    """``raw_signature`` from rules/common.smk (a Snakemake file: the function's own text is taken out of it)."""
    text = (ROOT / "rules/common.smk").read_text()
    start = text.index("def raw_signature(")
    end = text.index("\ndef ", start + 1)
    namespace: dict = {}
    exec(compile(text[start:end], "rules/common.smk", "exec"), namespace)
    return namespace["raw_signature"]


def _walk_signature(directory: Path) -> str:
    """The signature as first written, with os.walk: what every committed stamp was made against."""
    import hashlib

    digest = hashlib.sha256()
    for parent, dirs, files in os.walk(directory):
        dirs.sort()
        rel = os.path.relpath(parent, directory)
        for name in sorted(files):
            st = os.stat(os.path.join(parent, name))
            digest.update(f"{'' if rel == '.' else rel + '/'}{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def test_the_raw_signature_is_os_walks_and_moves_with_a_touched_file(tmp_path):
    import hashlib

    signature = _raw_signature()
    assert signature(str(tmp_path / "not-measured")) == hashlib.sha256().hexdigest(), "a missing directory: no files"
    raw = tmp_path / "raw"
    for rel in ("z.json", "a/stdout", "a/b/meta.json", "b.txt", "a-b/x", "A/y"):
        (raw / rel).parent.mkdir(parents=True, exist_ok=True)
        (raw / rel).write_text(rel)
    first = signature(str(raw))
    assert first == _walk_signature(raw), "files of a directory before its subdirectories, each by name"
    st = (raw / "a/b/meta.json").stat()
    os.utime(raw / "a/b/meta.json", ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    assert signature(str(raw)) != first, "a file written again (same size, a new time) moves it"
