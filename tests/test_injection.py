"""Values from a campaign file never run as code: every adapter, every template form, every tool option, with canaries.

Each canary is a payload that would create a file if a shell (or Python, Perl, awk) ever ran it.
Adapters pass a value as one word; a campaign value reaches a template only as one token of
the safe alphabet, or as an environment variable when the campaign declares it text; tool
options that run programs or write outside the sample's scratch are refused when the
campaign is loaded.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from perflab import campaign as campaign_mod, tools
from perflab.campaign import values as campaign_values
from perflab.tools.base import ParseOnly

TOOL_BINARIES = ("iperf3", "iperf", "fio", "dd", "ping", "sysbench", "stress-ng", "hpcc", "mpirun", "mpstat",
                 "sadf", "sadc", "ss", "env", "sleep", "python3", "iscsi-perf")
_KEY = re.compile(r"""params(?:\.get\(|\[)\s*["']([a-z_]+)["']|merged\[["']([a-z_]+)["']""")
_TUPLE = re.compile(r"for key(?:, \w+)? in \(\(?([^:]*?)\):", re.S)


def payloads(canary: Path) -> list[str]:
    """Strings that create ``canary`` if a shell interprets them anywhere on a command line."""
    touch = f"touch {canary}"
    return [f"1; {touch}", f"$({touch})", f"`{touch}`", f"x' $({touch}) '", f'"; {touch}; "', f"1\n{touch}"]


@pytest.fixture()
def sandbox(tmp_path):
    """A PATH whose benchmark tools do nothing (so only a shell could act on a payload), and a canary path."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in TOOL_BINARIES:
        (fake / name).symlink_to("/bin/true")
    return {"PATH": f"{fake}:{os.environ['PATH']}"}, tmp_path / "canary"


def _sh(lines: list[str], env: dict) -> None:
    """Run each line in its own ``sh -c`` (one driver process for all of them)."""
    driver = "".join(f"sh -c {shlex.quote(line)} </dev/null >/dev/null 2>&1\n" for line in lines)
    subprocess.run(["sh", "-c", driver], env={**os.environ, **env}, capture_output=True, timeout=120,
                   stdin=subprocess.DEVNULL, cwd=Path(env["PATH"].split(":")[0]).parent)


def parameter_names(tool: tools.Tool) -> set[str]:
    """Every parameter name the adapter's module reads (``params.get("x")``, ``params["x"]``, key tuples)."""
    source = inspect.getsource(importlib.import_module(type(tool).__module__))
    names = {a or b for a, b in _KEY.findall(source)}
    for body in _TUPLE.findall(source):
        names |= set(re.findall(r"[\"']([a-z_]+)[\"']", body))
    return names | {"duration", "port", "options", "stressors"}


RUNNABLE = sorted(n for n in tools.REGISTRY if not isinstance(tools.get(n), ParseOnly))


@pytest.mark.parametrize("name", RUNNABLE)
def test_every_adapter_passes_every_value_as_one_word(name, sandbox):
    env, canary = sandbox
    tool = tools.get(name)
    addresses = {role: "198.18.0.1" for role in tool.roles}
    #: Parameters an adapter cannot do without; each payload goes in one parameter beside them.
    required = {"dd": {"of": "/dev/null"}, "blockproto": {"protocol": "iscsi"}, "ceph_osd_bench": {"osd": "0"},
                "rados_bench": {"pool": "p"}, "rbd_bench": {"pool": "p", "image": "i"}, "nfsbench": {"export": "ext4"}}
    lines, accepted = [], 0
    for key in sorted(parameter_names(tool)):
        base = {k: v for k, v in required.get(name, {}).items() if k != key}
        for payload in payloads(canary):
            values = [payload, {payload: payload}] if key in ("options", "stressors") else [payload]
            for value in values:
                try:
                    commands = tool.commands({**base, key: value}, addresses)
                    ready = tool.ready({**base, key: value}, addresses)
                except (ValueError, TypeError, AttributeError):
                    continue  # refusing a value is safe
                accepted += 1
                for command in commands:
                    assert shlex.split(command.line()) == list(command.argv)
                lines += [c.line() for c in commands] + ([ready] if ready else [])
    _sh(sorted(set(lines)), env)
    assert accepted > 0, f"{name}: no payload was accepted, so nothing was checked"
    assert not canary.exists(), f"{name}: a parameter value ran as shell"


#: Template forms of a setup step with the placeholder {x}. The first six were always accepted; the next
#: eight were refused by a list of forbidden shapes; the rest slipped past that list and ran the value.
FORMS = [
    "echo {x}", "ip link set dev eth0 mtu {x}", "sh -c 'echo \"$1\"' sh {x}", "echo pre{x}post", "echo \\\"{x}",
    "x={x}; echo \"$x\"",
    "sh -c 'echo {x}'", "echo \"{x}\"", "sh -c \"echo {x}\"", "sh -c {x}", "eval {x}", "cat <<EOF\n{x}\nEOF\n",
    "bash -xc {x}", "echo 'a'\"{x}\"",
    "/bin/sh -c {x}", "bash -o pipefail -c {x}", "sh -c -- {x}", "\"sh\" -c {x}", "echo {x} | sh", "sh -c \\\n{x}",
    "python3 -c {x}", "env sh -c {x}", "sh -ec {x}", "dash -c {x}", "/usr/bin/env bash -c {x}", "exec sh -c {x}",
    "nohup sh -c {x} >/dev/null", "timeout 5 sh -c {x}", "printf '%s\\n' {x} | bash", "sh -c \"$0\" {x}",
    "printf %s {x} | xargs -0 sh -c", "bash -c \"$(echo {x})\"", "perl -e {x}", "awk {x} </dev/null",
    "find /dev/null -exec sh -c {x} \\;", "sh -c '{x}'", "trap {x} EXIT", "'sh' '-c' {x}", "s\\h -c {x}",
    "sh -c {x}{x}", "command sh -c {x}", "echo {x} > run.sh; sh run.sh",
]


def code_payloads(canary: Path) -> list[str]:
    """Shell payloads, and the same action in Python, Perl and awk, for forms that run another interpreter."""
    return payloads(canary) + [f"__import__('os').system('touch {canary}')", f"system('touch {canary}')",
                               f"BEGIN {{ system(\"touch {canary}\") }}"]


@pytest.fixture()
def shell(tmp_path):
    """Real shells and interpreters, benchmark tools that do nothing, a canary path and a scratch directory."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("iperf3", "iperf", "fio", "dd", "ping", "sysbench", "stress-ng", "hpcc", "ip"):
        (fake / name).symlink_to("/bin/true")
    return {"PATH": f"{fake}:{os.environ['PATH']}"}, tmp_path / "canary"


def _campaign(tmp_path: Path, command: str, value: object = "a", *, text: bool = False) -> Path:
    """A sysbench campaign whose factor x has the one level ``value`` and whose setup step runs ``command``."""
    path = tmp_path / "c.yaml"
    path.write_text("campaign: canary\nbenchmark: {tool: sysbench, params: {duration: 1}}\nhosts: {client: h1}\n"
                    f"factors: {{x: [{json.dumps(value)}]}}\n" + ("text: [x]\n" if text else "")
                    + f"setup:\n  - on: client\n    run: {json.dumps(command)}\n")
    return path


def _planned_lines(path: Path) -> list[str]:
    """The setup commands a campaign would run in each cell, or none when the campaign is refused."""
    try:
        c = campaign_mod.load(path)
    except campaign_mod.SpecError:
        return []
    return [campaign_values.fill(step.run, c.values(cell.levels, {"client": "198.18.0.1"}))
            for cell in c.cells() for step in c.setup]


@pytest.mark.parametrize("form", FORMS)
def test_no_template_form_lets_a_value_run(form, shell, tmp_path):
    env, canary = shell
    lines = []
    for k, payload in enumerate(code_payloads(canary)):
        for text in (False, True):
            where = tmp_path / f"{k}-{text}"
            where.mkdir()
            lines += _planned_lines(_campaign(where, form, payload, text=text))
    _sh(lines, env)
    assert not canary.exists(), f"{form!r} let a value run"


@pytest.mark.parametrize("form", FORMS)
def test_a_safe_value_is_accepted_in_every_form(form, tmp_path):
    assert _planned_lines(_campaign(tmp_path, form, "eth0.1500")), f"{form!r} refused a value of the safe alphabet"


@pytest.mark.parametrize("value", ["a b", "1;x", "$(x)", "`x`", "x'y", "-rf", "--x=1", "a\nb", "~root", "*", "x>y",
                                   "/etc/shadow", "../up", "a/../../b", ""])
def test_a_value_outside_the_safe_alphabet_is_refused_naming_the_way_out(value, tmp_path):
    path = _campaign(tmp_path, "echo {x}", value)
    with pytest.raises(campaign_mod.SpecError) as err:
        campaign_mod.load(path)
    assert str(err.value).startswith(f"{path}:4: factors.x.0: ") and "list x under text" in str(err.value)


def test_text_reaches_a_command_only_as_its_environment_variable(shell, tmp_path):
    env, canary = shell
    value = f"1; touch {canary} $(touch {canary}) 'quoted' \"double\" `x`"
    path = _campaign(tmp_path, "printf %s \"$PERFLAB_X\" > out", value, text=True)
    lines = _planned_lines(path)
    assert len(lines) == 1 and lines[0].startswith("export PERFLAB_X=")
    assert lines[0].endswith("; printf %s \"$PERFLAB_X\" > out"), "the template's text is left as written"
    _sh(lines, env)
    assert (tmp_path / "out").read_text() == value and not canary.exists()
    with pytest.raises(campaign_mod.SpecError, match=r"c.yaml:8: setup.0.run: x is text, which never becomes command "
                                                     r"text; use the environment variable \"\$PERFLAB_X\""):
        campaign_mod.load(_campaign(tmp_path, "echo {x}", value, text=True))


#: Tool options that run a program or write outside the sample's scratch: campaign text -> what it would touch.
TOOL_FORMS = {
    "fio exec_prerun": "benchmark: {{tool: fio, params: {{size: 8k, options: {{exec_prerun: {cmd}}}}}}}",
    "fio exec_postrun": "benchmark: {{tool: fio, params: {{size: 8k, options: {{exec_postrun: {cmd}}}}}}}",
    "fio ioengine=exec": "benchmark: {{tool: fio, params: {{size: 8k, ioengine: exec, options: {{program: {cmd}}}}}}}",
    "fio filename a:/outside": "benchmark: {{tool: fio, params: {{size: 8k, ioengine: psync, filename: {outside}}}}}",
    "fio directory outside": "benchmark: {{tool: fio, params: {{size: 8k, ioengine: psync, directory: {dir}}}}}",
    "fio write_iolog": "benchmark: {{tool: fio, params: {{size: 8k, ioengine: psync, options: {{write_iolog: {log}}}}}}}",
    "dd of outside": "benchmark: {{tool: dd, params: {{of: {log}, count: 1}}}}",
    "stress-ng exec stressor": "benchmark: {{tool: stress-ng, params: {{duration: 1, stressors: {{exec: 1}}}}}}",
    "stress-ng job file": "benchmark: {{tool: stress-ng, params: {{duration: 1, options: {{job: {log}}}}}}}",
}
#: A factor each tool reads, so that only the form itself can be refused.
FACTOR = {"fio": "bs: [4k]", "dd": "bs: [4k]", "stress-ng": "vm_bytes: [1M]"}


@pytest.mark.parametrize("form", sorted(TOOL_FORMS))
def test_tool_options_that_run_programs_or_write_outside_are_refused(form, tmp_path):
    canary = tmp_path / "canary"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    text = TOOL_FORMS[form].format(cmd=json.dumps(f"touch {canary}"), outside=json.dumps(f"a:{canary}"),
                                   dir=json.dumps(str(canary)), log=json.dumps(str(canary)))
    path = tmp_path / "c.yaml"
    factor = FACTOR[form.split()[0]]
    path.write_text(f"campaign: tool-forms\n{text}\nhosts: {{client: h1}}\nfactors: {{{factor}}}\n")
    try:
        c = campaign_mod.load(path)
    except campaign_mod.SpecError as err:
        assert str(err).startswith(f"{path}:2: benchmark.params."), str(err)
        return
    tool = tools.get(c.tool)
    for cell in c.cells():  # accepted: run the real tool in the scratch directory and see what it touched
        for command in tool.commands(c.cell_params(cell.levels), {"client": "127.0.0.1"}):
            subprocess.run(command.argv, cwd=scratch, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert not canary.exists(), f"{form}: the tool ran a program or wrote outside its scratch directory"


def test_a_campaign_may_allow_a_program_option_knowingly(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("campaign: allowed\nbenchmark: {tool: fio, params: {options: {exec_prerun: sync}}}\n"
                    "hosts: {client: h1}\nfactors: {bs: [4k]}\nprograms: [exec_prerun]\n")
    c = campaign_mod.load(path)
    assert "--exec_prerun=sync" in tools.get("fio").commands(c.cell_params(c.cells()[0].levels), {})[0].argv
    path.write_text(path.read_text().replace("exec_prerun: sync", "exec_prerun: 'sync; reboot'"))
    with pytest.raises(campaign_mod.SpecError, match="is not a safe command-line token"):
        campaign_mod.load(path)
