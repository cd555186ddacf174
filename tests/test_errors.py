"""One error type for users: every user-facing error is a UserError, printed by the CLI as one line per problem."""

from __future__ import annotations

import ast
import importlib
import os
import pickle
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from perflab import campaign as campaign_mod, cli, errors, knownhosts, study

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "perflab"
CAMPAIGN = "studies/iperf3-streams/campaigns/iperf3-streams.yaml"
#: Exception classes that are not for users: a standalone script's own (aoe.py and nfsbench.py run on hosts with
#: the standard library only) and a signal inside remote that becomes a HostError before anyone sees it.
NOT_FOR_USERS = {("aoe", "AoEError"), ("nfsbench", "NfsError"), ("remote", "_UnknownHostKey")}


def test_a_user_error_is_one_line_with_its_parts():
    err = errors.UserError("no such host\n  at all", file="c.yaml", line=3, field="hosts.client",
                           expected="a host of the inventory", found="h9", fix="add h9 to the inventory")
    assert str(err) == ("c.yaml:3: hosts.client: no such host at all; expected a host of the inventory, "
                        "found 'h9'; add h9 to the inventory")
    assert err.problems == [str(err)]
    assert str(errors.UserError("plain")) == "plain"


def test_a_file_error_keeps_one_line_per_problem_and_survives_pickling():
    err = campaign_mod.SpecError("c.yaml", ["c.yaml:2: a: bad", "c.yaml:5: b: worse\nreally"])
    assert err.problems == ["c.yaml:2: a: bad", "c.yaml:5: b: worse really"]
    assert str(err) == "c.yaml:2: a: bad\nc.yaml:5: b: worse really"
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is campaign_mod.SpecError and back.problems == err.problems and back.path == "c.yaml"
    assert isinstance(err, ValueError) and isinstance(study.StudyError("s", ["x"]), errors.UserError)


def _error_classes() -> list[tuple[str, str]]:
    found = []
    for path in sorted(LIB.rglob("*.py")):
        module = ".".join(path.relative_to(LIB.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.parse(path.read_text()).body:
            bases = {getattr(b, "id", getattr(b, "attr", "")) for b in getattr(node, "bases", [])}
            if isinstance(node, ast.ClassDef) and (node.name.endswith(("Error", "Lost", "Busy")) or bases & {
                    "Exception", "RuntimeError", "ValueError", "OSError", "LookupError", "KeyError"}):
                found.append((module, node.name))
    return found


def test_every_error_class_of_the_library_is_a_user_error():
    classes = _error_classes()
    assert len(classes) > 15, classes  # the scan found the library's errors
    for module, name in classes:
        if (module.rpartition(".")[2], name) in NOT_FOR_USERS:
            continue
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, errors.UserError), f"{module}.{name} does not derive from perflab.errors.UserError"


def _plain_raises(path: Path) -> list[tuple[int, str]]:
    """(line, text of the five lines up to it) of each ``raise ValueError(...)``/``raise RuntimeError(...)``."""
    lines = path.read_text().splitlines()
    return [(node.lineno, " ".join(lines[max(node.lineno - 5, 0):node.lineno]))
            for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Raise)
            and isinstance(node.exc, ast.Call) and getattr(node.exc.func, "id", "") in ("ValueError", "RuntimeError")]


def test_tools_and_reports_raise_user_errors_and_say_which_plain_raises_are_bugs():
    # what a campaign's parameters, a tidy table or a file cause is a UserError; a plain ValueError or
    # RuntimeError there is an invariant of the code, and a comment at the raise says it is a bug's
    unmarked = [f"{path.relative_to(LIB)}:{line}" for folder in ("tools", "report")
                for path in sorted((LIB / folder).rglob("*.py"))
                for line, near in _plain_raises(path) if "bug" not in near]
    assert not unmarked, unmarked


def test_a_bad_tool_parameter_or_report_input_is_a_user_error_that_is_still_a_value_error():
    from perflab import tools
    from perflab.report import sweep

    with pytest.raises(errors.InputError, match="'of'") as err:
        tools.get("dd").commands({"bs": "1M"}, {})
    assert isinstance(err.value, errors.UserError) and isinstance(err.value, ValueError)
    with pytest.raises(errors.InputError, match="sweep level 'fast' is not a number"):
        sweep._level_value("fast")


def test_the_cli_prints_a_user_error_as_one_line_per_problem_and_exits_2(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text("campaign: c\nbenchmark: {tool: nosuchtool}\nrepetitions: 0\n")
    assert cli.main(["plan", str(bad)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 2 and all(line.startswith(f"perflab plan: error: {bad}:") for line in lines), lines


def test_any_other_exception_is_a_bug_and_keeps_its_traceback(monkeypatch):
    def broken(path, **kwargs):
        raise ValueError("a bug, not the user's mistake")

    monkeypatch.setattr(campaign_mod, "load", broken)
    with pytest.raises(ValueError, match="a bug"):
        cli.main(["plan", CAMPAIGN, "--head", "0"])


def _perflab(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'lib'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run([sys.executable, "-m", "perflab.cli", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def _one_error_line(done: subprocess.CompletedProcess, *expected: str) -> str:
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perflab plan: error: "), lines
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def test_plan_check_with_the_localhost_inventory_for_hosts_it_lacks_is_one_line():
    done = _perflab("plan", "studies/004-aoe-iscsi/campaigns/004-confirm-protocols.yaml", "--check",
                    "--inventory", "localhost")
    _one_error_line(done, "inventory localhost has no host 'ini', 'tgt'")


def _closed_port() -> int:
    with socket.socket() as sock:  # bound, never listening: a connection to it is refused
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_plan_check_against_a_host_that_does_not_answer_is_one_line(tmp_path):
    port = _closed_port()
    inv = tmp_path / "inventory.yaml"
    inv.write_text("format: 1\nhosts:\n" + "".join(
        f"  {h}: {{address: 127.0.0.1, port: {port}, known_hosts: {tmp_path / 'known_hosts'}}}\n"
        for h in ("h1", "h2")))
    done = _perflab("plan", CAMPAIGN, "--check", "--inventory", str(inv))
    _one_error_line(done, "cannot connect")


KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


def test_known_hosts_markers_are_read_not_tracebacks(tmp_path):
    path = tmp_path / "known_hosts"
    path.write_text(f"# comment\n198.18.0.11 ssh-ed25519 {KEY}\n@revoked * ssh-ed25519 {KEY}\n"
                    f"@cert-authority *.example ssh-ed25519 {KEY}\n|1|c2FsdA==|aGFzaA== ssh-ed25519 {KEY} c\n")
    listed = knownhosts.load(path)
    assert listed.authorities == 1 and len(listed.revoked) == 1 and len(listed.entries) == 2
    assert listed.is_revoked(listed.entries[0][1])
    assert knownhosts.load(tmp_path / "absent").entries == []


@pytest.mark.parametrize("line, problem", [
    ("@trusted h1 ssh-ed25519 " + KEY, "unknown marker @trusted"),
    ("@revoked ssh-ed25519", "expected `[marker] names keytype key`"),
    ("h1 ssh-ed25519 not*base64", "is not base64"),
    ("h1 ssh-ed25519 AAAAB3NzaC1yc2EAAAADAQABAAABAQC=", "not a valid ssh-ed25519 key"),
])
def test_a_known_hosts_line_that_is_not_a_key_names_its_line(tmp_path, line, problem):
    path = tmp_path / "known_hosts"
    path.write_text(f"h0 ssh-ed25519 {KEY}\n{line}\n")
    with pytest.raises(knownhosts.KnownHostsError, match=f"^{path}:2: .*") as err:
        knownhosts.load(path)
    assert problem in str(err.value) and "\n" not in str(err.value)
