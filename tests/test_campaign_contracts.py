"""Contracts checked when a campaign is loaded: declared tool parameters, used factors, formats; one planned summary.

Every YAML campaign in the repository plans under these checks (real-host campaigns that do not
yet are marked, with the reason); a misspelled parameter or an unused factor stops `perflab plan`
with one line naming the file, the line and the nearest valid name.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import campaign_record, load_campaign
from perflab import campaign as campaign_mod, runner, store, tidy, tools
from perflab.campaign import design
from perflab.report import planned as planned_values
from perflab.tools import reference
from perflab.tools.base import ParseOnly
from perflab.yamlfile import _Loader

ROOT = Path(__file__).resolve().parents[1]


def _plan(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perflab.cli", "plan", str(path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


IPERF3 = """\
campaign: typo
benchmark:
  tool: iperf3
  params: {duration: 2}
hosts: {client: h1, server: h2}
factors:
  parallel: [1, 4]
"""


@pytest.mark.parametrize("edit, line, field, nearest", [
    (("{duration: 2}", "{durationn: 2}"), 4, "benchmark.params.durationn", "did you mean 'duration'?"),
    (("{duration: 2}", "{duraton: 2}"), 4, "benchmark.params.duraton", "did you mean 'duration'?"),
    (("  parallel: [1, 4]\n", "  parallel: [1, 4]\n  protocl: [tcp, udp]\n"), 8, "factors.protocl",
     "did you mean 'protocol'?"),
])
def test_plan_refuses_a_misspelled_parameter_and_an_unused_factor_in_one_line(tmp_path, edit, line, field, nearest):
    path = tmp_path / "typo.yaml"
    path.write_text(IPERF3)
    assert _plan(path).returncode == 0
    path.write_text(IPERF3.replace(*edit))
    done = _plan(path)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"perflab plan: error: {path}:{line}: {field}: "), done.stderr
    assert lines[0].endswith(nearest), lines[0]


def test_an_unused_factor_is_named_and_a_used_one_is_not(tmp_path):
    text = IPERF3 + "  scenario: [idle, busy]\n"
    with pytest.raises(campaign_mod.SpecError, match=r"c.yaml:8: factors.scenario: factor scenario is used by no "
                                                     r"iperf3 parameter, command, setup step, service, neighbour or link"):
        load_campaign(text)
    for use in ("neighbours: [{on: h3, run: sleep 600, cells: {scenario: [busy]}}]",
                "setup: [{on: client, run: 'echo {scenario}'}]"):
        assert load_campaign(text + use).factors["scenario"] == ("idle", "busy")


def test_a_declared_type_is_checked(tmp_path):
    with pytest.raises(campaign_mod.SpecError, match=r"c.yaml:4: benchmark.params.duration: parameter duration "
                                                     r"takes a number; found 'ten'"):
        load_campaign(IPERF3.replace("{duration: 2}", "{duration: ten}"))


@pytest.mark.parametrize("edit, message", [
    (("campaign: typo", "format: 2\ncampaign: typo\nnew_field: 1"), "c.yaml:1: format: campaign format 2; this "
     "perflab reads format 1: write `format: 1` or use the perflab that wrote the file"),
    (("campaign: typo", "version: 1\ncampaign: typo"), "c.yaml:1: version: unknown field; remove it or use one of "
                                                       "format, scratch, text, programs, campaign, study, title, "
                                                       "description, ... (36 in all)"),
])
def test_the_reader_checks_the_format_first(edit, message):
    with pytest.raises(campaign_mod.SpecError) as err:
        load_campaign(IPERF3.replace(*edit))
    assert str(err.value).startswith(message), str(err.value)
    assert load_campaign(IPERF3.replace("campaign: typo", "format: 1\ncampaign: typo")).name == "typo"


_READS = re.compile(r"""params(?:\.get\(|\[)\s*["']([a-z_]+)["']|merged(?:\.get\(|\[)\s*["']([a-z_]+)["']""")
_KEY_TUPLES = re.compile(r"for key(?:, \w+)? in \(\(?([^:]*?)\):", re.S)


@pytest.mark.parametrize("name", sorted(n for n in tools.REGISTRY if not isinstance(tools.get(n), ParseOnly)))
def test_every_parameter_an_adapter_reads_is_declared(name):
    tool = tools.get(name)
    module = importlib.import_module(type(tool).__module__)
    helpers = [getattr(module, f) for f in ("_job_options", "input_file", "_interval_count") if hasattr(module, f)]
    source = "".join(inspect.getsource(f) for f in (type(tool).commands, type(tool).expected_duration,
                                                      type(tool).ready, *helpers))
    read = {a or b for a, b in _READS.findall(source)}
    for body in _KEY_TUPLES.findall(source):
        read |= set(re.findall(r"[\"']([a-z_]+)[\"']", body))
    declared = {p.name for p in tool.params}
    if name == "fio_iozone":
        read -= {"rw", "name"}  # the IOzone phases set rw and name themselves
    if name in ("fio", "fio_iozone"):
        read -= {"time_based"}  # implied by runtime, never a campaign parameter
    assert read <= declared, f"{name} reads undeclared parameters {sorted(read - declared)}"
    assert all(p.type and p.doc for p in tool.params)


def test_the_committed_tool_reference_is_generated_from_the_declarations():
    text = (ROOT / "docs/tools.md").read_text()
    assert reference.render(text) == text, "docs/tools.md is stale: run `perflab tools-doc`"
    assert "| `exec_postrun`, `exec_prerun`, `ioengine=exec`, `ioengine=external` |" in text.replace(
        "| `options` | options |  |  | ", "| ")


def _campaign_files() -> list[Path]:
    files = sorted({*ROOT.glob("campaigns/**/*.yaml"), *ROOT.glob("studies/*/campaigns/**/*.yaml"),
                    *ROOT.glob("studies/*/real-hosts/**/*.yaml")})
    return [p for p in files if isinstance(d := yaml.load(p.read_text(), Loader=_Loader), dict) and "campaign" in d]


#: Real-host campaigns (studies/*/real-hosts/) the checks refuse today, and why; their owners fix them.
REAL_HOSTS_REFUSED: dict[str, str] = {}


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.xfail(reason=REAL_HOSTS_REFUSED[p.relative_to(ROOT).as_posix()],
                                            raises=campaign_mod.SpecError, strict=False))
    if p.relative_to(ROOT).as_posix() in REAL_HOSTS_REFUSED else p
    for p in _campaign_files()], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_campaign_in_the_repository_plans(path):
    c = campaign_mod.load(path)
    info = runner.plan(c)
    seeded = c if c.seed is not None else campaign_mod.from_doc({**c.doc, "seed": 0}, c.source)
    assert info["samples"] == len(design.schedule(seeded)) == c.planned()["samples"]


def test_the_repository_has_campaigns_of_every_kind():
    files = [p.relative_to(ROOT).as_posix() for p in _campaign_files()]
    assert len(files) > 50 and any("/real-hosts/" in f for f in files) and any(f.startswith("campaigns/") for f in files)
    assert set(REAL_HOSTS_REFUSED) <= set(files)


def test_planned_is_one_summary_with_the_tool_for_every_consumer(tmp_path):
    hpcc = campaign_mod.load(ROOT / "studies/003-openstack-opennebula/real-hosts/kvm-hpcc.yaml")
    planned = hpcc.planned()
    assert planned["tool"] == "hpcc" and planned["params"] == dict(hpcc.params)
    info = runner.plan(hpcc)
    assert {k: info[k] for k in planned} == planned
    raw = store.RawStore(tmp_path / "raw", "c")
    raw.begin(campaign_record("c", {"n": [300, 600]}, spec={"benchmark": {"tool": "hpcc"}, "repetitions": 3,
                                                             "warmups": 1, "seed": 7}))
    lineage = json.loads(tidy.write(raw.dir, tmp_path / "out")["lineage"].read_text())["planned"]
    assert (lineage["tool"], lineage["cells"], lineage["samples"], lineage["seed"]) == ("hpcc", 2, 8, 7)


def test_planned_values_escape_latex_once():
    text = IPERF3.replace("{duration: 2}", "{duration: 2, note: 'a\\b_c & 50%'}") + (
        "text: [note]\nsetup: [{on: client, run: 'printf %s \"$PERFLAB_NOTE\"'}]\n")
    c = load_campaign(text)
    values = planned_values.values(c)
    assert values["typo/plan/params/note"] == r"a\textbackslash{}b\_c \& 50\%"
    assert values["typo/plan/levels/parallel"] == "1, 4" and values["typo/plan/samples"] == str(2 * 41)


def test_the_flat_lab_is_sized_once_for_every_host_a_campaign_names():
    c = campaign_mod.load(ROOT / "campaigns/examples/concurrent-clients.yaml")
    assert c.lab_hosts() == 4
    assert load_campaign("campaign: c\nbenchmark: {tool: ping}\nhosts: {client: h1, server: h5}\n"
                         "factors: {count: [1]}\n").lab_hosts() == 5
    notebook = json.loads((ROOT / "notebooks/experiment.ipynb").read_text())
    code = "".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code")
    assert "hosts=c.lab_hosts()" in code


def test_a_blockproto_job_file_may_not_run_a_program(tmp_path, monkeypatch):
    from perflab.tools import blockproto

    job = tmp_path / "job.fio"
    job.write_text("[global]\nexec_prerun=touch /tmp/x\n[web]\nrw=randread\n")
    monkeypatch.setattr(blockproto.paths, "root", lambda: tmp_path)
    with pytest.raises(ValueError, match=r"job.fio: \[global\] sets exec_prerun, which runs a program"):
        blockproto.job_options("job.fio")


def test_text_names_a_value_of_the_campaign_and_never_a_tool_parameter():
    use = "setup: [{on: client, run: 'printf %s \"$PERFLAB_NOTE\"'}]\n"
    with pytest.raises(campaign_mod.SpecError, match=r"c.yaml:8: text.0: note names no factor or parameter"):
        load_campaign(IPERF3 + "text: [note]\n" + use)
    with pytest.raises(campaign_mod.SpecError, match=r"c.yaml:8: text: parallel is a parameter of iperf3; a tool "
                                                     r"parameter reaches the tool's command line"):
        load_campaign(IPERF3 + "text: [parallel]\n")
