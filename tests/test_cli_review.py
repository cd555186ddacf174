"""The reviewer-facing commands: a closed pipe is not an error; every command explains itself."""

import json
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


def _perflab(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perflab.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "lib")}, timeout=300)


def test_every_subcommand_has_a_description():
    sub = next(a for a in cli.parser()._actions if a.dest == "command")
    for name in sub.choices:
        full = next(a for a in cli.parser(name)._actions if a.dest == "command").choices[name]
        assert full.description and len(full.description) > 60, name


def test_usage_errors_name_no_internal_field():
    for args in (["lab"], ["lab", "sideways"], ["studies"], ["studies", "sideways"], ["seal"]):
        run = _perflab(*args)
        assert run.returncode == 2 and "error:" in run.stderr, args
        assert "_cmd" not in run.stderr and "raw_dir" not in run.stderr, run.stderr


def test_verify_of_a_path_refuses_rebuild_in_one_line():
    run = _perflab("verify", "data/raw/published", "--rebuild")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "perflab verify --rebuild` without a path" in run.stderr


def test_verify_of_the_repository_shows_progress_a_summary_and_json(tmp_path):
    import shutil

    shutil.copytree(ROOT / "data/raw/unnoba-fio-qd", tmp_path / "data/raw/unnoba-fio-qd")
    shutil.copytree(ROOT / "data/raw/published", tmp_path / "data/raw/published")
    run = _perflab("verify", "--root", str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert "verify: [1/1] raw " in run.stderr and "lineage records" in run.stderr
    summary = run.stdout.splitlines()[-1]
    assert summary.startswith("verified 1 raw campaigns, 155 raw files") and " s; 0 file(s)" in summary
    with open(tmp_path / "data/raw/unnoba-fio-qd/samples/device-hdd-emulated_rw-randread_iodepth-1-r000-4cd5697d/stdout", "a") as altered:
        altered.write("one byte more")
    run = _perflab("verify", "--root", str(tmp_path), "--json")
    result = json.loads(run.stdout)
    assert run.returncode == 1 and result["ok"] is False and result["checked"]["raw campaigns"] == 1
    assert [f["path"] for f in result["findings"]] == [f"{tmp_path.as_posix()}/data/raw/unnoba-fio-qd/samples/device-hdd-emulated_rw-randread_iodepth-1-r000-4cd5697d/stdout"]
    raw = json.loads(_perflab("verify", "--json", "data/raw/published").stdout)
    assert raw[0]["ok"] and raw[0]["files"] > 5


def test_studies_list_and_lineage_print_json(tmp_path):
    run = _perflab("studies", "list", "--json")
    studies = {s["id"]: s for s in json.loads(run.stdout)}
    assert set(studies) == {p.parent.name for p in (ROOT / "studies").glob("*/study.yaml")}
    assert "pfsense-confirm-64" in [c["id"] for c in studies["002-pfsense-neighbour"]["campaigns"]]
    (tmp_path / "out.tex").write_text("\\plset{x}{1}\n")
    (tmp_path / "in.csv").write_text("a\n1\n")
    subprocess.run([sys.executable, "-c", "from perflab.report import lineage; "
                    "lineage.write(['out.tex'], ['in.csv'], generator='test')"], cwd=tmp_path, check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT / "lib")})
    run = _perflab("lineage", "out.tex", "--json", cwd=tmp_path)
    result = json.loads(run.stdout)
    assert run.returncode == 0 and result["ok"] and result["sidecar"] == "out.lineage.json"
    assert result["record"]["inputs"][0]["path"] == "in.csv" and any("in.csv" in line for line in result["chain"])
    (tmp_path / "in.csv").write_text("a\n2\n")
    assert json.loads(_perflab("lineage", "out.tex", "--json", cwd=tmp_path).stdout)["ok"] is False
