"""Stale locks are removed with a note; live ones are named with what to do (campaign lock, Snakemake's lock)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import copy_project

from perflab.store import LOCK, RawStore, StoreError

ROOT = Path(__file__).resolve().parents[1]


def _dead_pid() -> int:
    """The pid of a process that has ended (reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_stale_campaign_lock_of_an_ended_run_is_removed_with_a_note(tmp_path):
    store = RawStore(tmp_path, "c")
    store.dir.mkdir()
    pid = _dead_pid()
    (store.dir / LOCK).write_text(str(pid))  # as earlier perflab versions wrote it: the bare pid
    out = io.StringIO()
    with store.lock(out):
        held = json.loads((store.dir / LOCK).read_text())
        assert held["pid"] == os.getpid() and held["host"] and "python" in held["command"]
    assert out.getvalue().count("\n") == 1
    assert f"removed a stale lock left by pid {pid}, which is no longer running" in out.getvalue()
    assert not (store.dir / LOCK).exists()


def test_a_lock_taken_on_another_host_that_nobody_holds_is_removed_naming_the_host(tmp_path):
    store = RawStore(tmp_path, "c")
    store.dir.mkdir()
    (store.dir / LOCK).write_text(json.dumps({"pid": 4242, "host": "elsewhere.example", "command": "perflab run c.yaml"}))
    out = io.StringIO()
    with store.lock(out):
        pass
    assert "left by pid 4242 (perflab run c.yaml) on host elsewhere.example, which no longer holds it" in out.getvalue()


def test_a_lock_a_live_run_holds_names_its_pid_and_command_and_is_kept(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from perflab.store import RawStore
            with RawStore({str(tmp_path)!r}, "c").lock(sys.stderr):
                print("held", flush=True)
                sys.stdin.read()
            """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "lib")})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreError) as err:
            with RawStore(tmp_path, "c").lock(io.StringIO()):
                pass
        message = str(err.value)
        assert f"another perflab run (pid {holder.pid} ({sys.executable} -c" in message
        assert f"kill {holder.pid}), then rerun to resume" in message and "\n" not in message
        assert json.loads((tmp_path / "c" / LOCK).read_text())["pid"] == holder.pid
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert not (tmp_path / "c" / LOCK).exists()


@pytest.fixture
def project(tmp_path):
    """A copy of the project with the Snakemake lock a killed run leaves."""
    copy_project(ROOT, tmp_path, studies=["iperf3-streams"])
    locks = tmp_path / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text(f"{tmp_path}/paper/main.tex\n")
    (locks / "0.output.lock").write_text(f"{tmp_path}/paper/main.pdf\n")
    return tmp_path


def _make_unlock(project: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib"), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(["make", "-s", "unlock"], cwd=project, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_unlock_removes_snakemakes_stale_lock(project):
    done = _make_unlock(project)
    assert done.returncode == 0, done.stderr
    assert "removed Snakemake's stale lock" in done.stdout
    locks = project / ".snakemake" / "locks"
    assert not locks.exists() or not list(locks.iterdir())


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_unlock_refuses_while_snakemake_runs_and_names_it(project, tmp_path_factory):
    fake = tmp_path_factory.mktemp("bin") / "snakemake"  # a stand-in process called snakemake, running here
    fake.write_text(f"#!{sys.executable}\nimport sys\nprint('up', flush=True)\nsys.stdin.read()\n")
    fake.chmod(0o755)
    running = subprocess.Popen([str(fake)], cwd=project, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert running.stdout.readline().strip() == "up"
        done = _make_unlock(project)
    finally:
        running.stdin.close()
        running.wait(timeout=30)
    assert done.returncode != 0
    assert f"snakemake runs here: pid {running.pid} ({sys.executable} {fake}" in done.stdout
    assert f"wait for it to finish, or stop it (kill {running.pid}), then rerun" in done.stdout
    assert len(list((project / ".snakemake" / "locks").iterdir())) == 2
