"""Values from a campaign file never run as shell: every adapter and every template form, with canaries.

Each canary is a payload that would create a file if a shell ever interpreted it. Adapters
must either refuse the value or pass it through as one word; templates must either quote it
safely or be refused when the campaign is loaded.
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
    required = {"dd": {"of": "/dev/null"}, "blockproto": {"protocol": "iscsi"}}
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


SAFE_FORMS = ["echo {x}", "ip link set dev eth0 mtu {x}", "sh -c 'echo \"$1\"' sh {x}", "echo pre{x}post",
              "echo \\\"{x}", "x={x}; echo \"$x\""]
UNSAFE_FORMS = ["sh -c 'echo {x}'", "echo \"{x}\"", "sh -c \"echo {x}\"", "sh -c {x}", "eval {x}",
                "cat <<EOF\n{x}\nEOF\n", "bash -xc {x}", "echo 'a'\"{x}\""]


def _campaign(tmp_path: Path, command: str) -> Path:
    path = tmp_path / "c.yaml"
    text = ("campaign: canary\nbenchmark: {tool: sysbench, params: {duration: 1}}\nhosts: {client: h1}\n"
            "factors: {x: [a]}\nsetup:\n  - on: client\n    run: " + json_str(command) + "\n")
    path.write_text(text)
    return path


def json_str(text: str) -> str:
    return json.dumps(text)


@pytest.mark.parametrize("form", SAFE_FORMS)
def test_templates_with_the_value_outside_quotes_are_accepted_and_stay_inert(form, sandbox, tmp_path):
    env, canary = sandbox
    campaign_mod.load(_campaign(tmp_path, form))
    _sh([campaign_mod.fill(form, {"x": payload}) for payload in payloads(canary)], env)
    assert not canary.exists(), f"{form!r} let a value run as shell"


@pytest.mark.parametrize("form", UNSAFE_FORMS)
def test_templates_with_the_value_inside_quotes_are_refused_with_the_fix(form, sandbox, tmp_path):
    env, canary = sandbox
    path = _campaign(tmp_path, form)
    with pytest.raises(campaign_mod.SpecError, match=r"placeholder \{x\} .* sh -c '\.\.\. \"\$1\" \.\.\.' sh \{x\}") as err:
        campaign_mod.load(path)
    assert str(err.value).startswith(f"{path}:7: setup.0.run: ")
    # the refusal is needed: shell-quoting alone does not protect these forms
    _sh([campaign_mod.fill(form, {"x": payload}) for payload in payloads(canary)], env)
    assert canary.exists(), f"{form!r} looked unsafe but no payload ran; the check may be too strict"
