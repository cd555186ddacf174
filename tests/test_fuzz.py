"""Property-based fuzzing: broken campaign files and corrupted tool outputs end in one clear error.

Campaign files are mutated as text (cuts, inserted characters, repeated or swapped lines)
and as YAML documents (a field replaced by an odd value, removed or added); every result
must load and plan, or raise :class:`SpecError` whose every line names the file. Tool
outputs from tests/fixtures are cut, spliced, repeated, bit-flipped or swapped for another
tool's output; every parser must return rows without duplicates or raise
:class:`ParseError`. Each example runs under an alarm, so a hang fails the test. The counts
are printed at the end of each test.
"""

from __future__ import annotations

import collections
import math
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from perflab import campaign as campaign_mod, runner, tools
from perflab.tools.base import ParseError

ROOT = Path(__file__).resolve().parents[1]
#: Every campaign file (under campaigns/ and the studies' campaigns/; a glob of the whole tree would walk the
#: venv and the raw data).
CAMPAIGNS = sorted([*ROOT.glob("campaigns/**/*.yaml"), *ROOT.glob("studies/**/campaigns/**/*.yaml")])
FIXTURES = sorted(p for p in (ROOT / "tests/fixtures").glob("*/*") if p.is_file() and p.name != "ORIGIN.md"
                  and p.parent.name != "lab")
#: Fixture directory -> the adapters whose output it holds.
DIR_TOOLS = {"ceph": ("rados_bench", "rbd_bench", "ceph_osd_bench"), "procfs": ("loadavg", "procstat"),
             "sysstat": ("mpstat", "sadf")}
#: Fixture directories of tools whose output is one run (snapshot readers and published Ceph logs are not).
ONE_RUN = ("iperf2", "iperf3", "fio", "hpcc", "sysbench", "stress-ng", "dd", "ping", "npb", "sysstat")
ONE_RUN_TOOLS = {tool for d in ONE_RUN for tool in DIR_TOOLS.get(d, (d,))}
EXAMPLES = 200
#: Seconds one example may take before it counts as a hang.
ALARM = 30
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=False,
                suppress_health_check=list(HealthCheck))


@contextmanager
def alarm(seconds: int):
    """Raise TimeoutError in this thread when the block takes longer than ``seconds``."""
    def ring(signum, frame):
        raise TimeoutError(f"no answer within {seconds} s (a hang)")
    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


ODD = st.sampled_from([float("nan"), float("inf"), -5, 0, -0.0, 1e308, 10 ** 30, "", " ", "1; touch /tmp/x",
                       "{x}", "'{duration}'", "h1", "é\u202e", None, True, [], {}, [1, 1], list(range(1000)),
                       {"label": "a", "set": {"duration": -1}}, {"a": {"b": {"c": 1}}}, "\x00", "a" * 5000])
TEXT_NOISE = st.sampled_from([":", "{", "}", "[", "]", "-", " ", "\n", "\t", "'", '"', "&", "*", "!", "%", "@",
                              "|", ">", "#", ".nan", "-5", "~", "<<: *a", "\\", "\ufeff"])


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _paths(value, prefix + (i,))


@st.composite
def campaign_texts(draw) -> str:
    """A campaign file from the repository, mutated as text or as a document."""
    text = draw(st.sampled_from(CAMPAIGNS)).read_text()
    kind = draw(st.sampled_from(["cut", "insert", "lines", "replace", "remove", "add"]))
    if kind in ("cut", "insert"):
        at = draw(st.integers(0, len(text)))
        if kind == "cut":
            return text[:at] + text[at + draw(st.integers(1, 40)):]
        return text[:at] + "".join(draw(st.lists(TEXT_NOISE, min_size=1, max_size=4))) + text[at:]
    if kind == "lines":
        lines = text.splitlines(keepends=True)
        i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
        if draw(st.booleans()):
            lines.insert(j, lines[i])
        return "".join(lines)
    doc = yaml.safe_load(text)
    where = draw(st.sampled_from([p for p in _paths(doc) if p]))
    parent = doc
    for key in where[:-1]:
        parent = parent[key]
    if kind == "replace":
        parent[where[-1]] = draw(ODD)
    elif kind == "remove":
        del parent[where[-1]]
    elif isinstance(parent, dict):
        parent[draw(st.sampled_from(["extra", "timeout", "factors", "warmups", "on", "run", "cells", "set"]))] = draw(ODD)
    return yaml.safe_dump(doc, allow_unicode=True)


@pytest.mark.skipif(not CAMPAIGNS, reason="no campaign files found")
def test_fuzzed_campaign_files_load_or_name_the_file(tmp_path_factory, capsys):
    counts = collections.Counter()
    path = tmp_path_factory.mktemp("fuzz") / "fuzzed.yaml"

    @FUZZ
    @given(campaign_texts())
    def check(text):
        path.write_text(text)
        with alarm(ALARM):
            try:
                campaign = campaign_mod.load(path)
                runner.plan(campaign)
                counts["accepted and planned"] += 1
            except campaign_mod.SpecError as exc:
                lines = str(exc).splitlines()
                assert lines and all(line.startswith(f"{path}:") for line in lines), str(exc)
                counts["refused (SpecError)"] += 1

    check()
    with capsys.disabled():
        print(f"\nfuzzed {sum(counts.values())} campaign files: {dict(counts)}")
    assert sum(counts.values()) >= EXAMPLES


def _tools_of(path: Path) -> tuple[str, ...]:
    return DIR_TOOLS.get(path.parent.name, (path.parent.name,))


@st.composite
def corrupted_outputs(draw) -> tuple[str, str, str]:
    """(adapter, how the output was corrupted, output) from a fixture file."""
    path = draw(st.sampled_from(FIXTURES))
    tool = draw(st.sampled_from(_tools_of(path)))
    data = path.read_bytes()
    kind = draw(st.sampled_from(["truncate", "cut", "repeat", "flip", "insert", "other tool", "empty lines",
                                 "two runs"]))
    n = len(data)
    if kind == "truncate":
        data = data[:draw(st.integers(0, max(n - 1, 0)))]
    elif kind == "cut":
        at = draw(st.integers(0, n))
        data = data[:at] + data[at + draw(st.integers(1, 200)):]
    elif kind == "repeat":
        at, size = draw(st.integers(0, n)), draw(st.integers(1, 400))
        data = data[:at + size] + data[at:at + size] + data[at + size:]
    elif kind == "flip":
        for _ in range(draw(st.integers(1, 8))):
            at = draw(st.integers(0, max(n - 1, 0)))
            data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1:]
    elif kind == "insert":
        at = draw(st.integers(0, n))
        data = data[:at] + draw(st.binary(min_size=1, max_size=30)) + data[at:]
    elif kind == "two runs":  # the whole output, then all or the second half of its lines again
        lines = data.splitlines(keepends=True)
        data = data.rstrip(b"\n") + b"\n" + b"".join(lines[draw(st.sampled_from([0, len(lines) // 2])):])
    elif kind == "other tool":
        other = draw(st.sampled_from([p for p in FIXTURES if tool not in _tools_of(p)]))
        data = other.read_bytes()
    else:
        data = b"\n\n" + data.replace(b"\n", b"\n\n")
    return tool, kind, data.decode("utf-8", "replace")


def rows_are_unique(rows) -> bool:
    keys = collections.Counter((m.metric, tuple(sorted((k, str(v)) for k, v in m.dims.items()))) for m in rows)
    return all(n == 1 for n in keys.values())


def test_fuzzed_tool_outputs_parse_cleanly_or_raise_parse_error(capsys):
    counts = collections.Counter()

    @FUZZ
    @given(corrupted_outputs())
    def check(case):
        tool, kind, text = case
        with alarm(ALARM):
            try:
                rows = tools.get(tool).parse(text, "", source="fuzzed")
            except ParseError:
                counts[f"{kind}: ParseError"] += 1
                return
        assert rows_are_unique(rows), f"{tool} ({kind}) emitted duplicate rows"
        assert all(r.value is None or math.isfinite(r.value) for r in rows), f"{tool} ({kind}) emitted inf"
        assert kind != "other tool", f"{tool} accepted another tool's output"
        assert kind != "two runs" or tool not in ONE_RUN_TOOLS, f"{tool} accepted two runs' outputs as one"
        counts[f"{kind}: rows"] += 1

    check()
    with capsys.disabled():
        print(f"\nfuzzed {sum(counts.values())} corrupted tool outputs: {dict(sorted(counts.items()))}")
    assert sum(counts.values()) >= EXAMPLES


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_parser_accepts_another_tools_fixture_and_none_emits_duplicates(path):
    text = path.read_text(errors="replace")
    for name in tools.REGISTRY:
        try:
            rows = tools.get(name).parse(text, "", source=str(path))
        except ParseError:
            continue
        assert name in _tools_of(path) or {name, *_tools_of(path)} <= {"fio", "fio_iozone"}, \
            f"{name} accepted {path.parent.name}'s output"
        assert rows_are_unique(rows), f"{name}: duplicate rows from {path.name}"


#: Outputs whose tools print an end marker, so a cut anywhere must be refused rather than lose rows.
ENDED = [p for p in FIXTURES if p.parent.name in ("sysbench", "stress-ng", "hpcc", "fio", "sysstat", "dd")
         or p.parent.name == "iperf3" and p.suffix == ".json"]


@pytest.mark.parametrize("path", ENDED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_output_cut_at_any_line_is_refused_or_complete(path):
    text = path.read_text(errors="replace")
    for tool in _tools_of(path):
        try:
            full = len(tools.get(tool).parse(text, "", source=str(path)))
        except ParseError:
            continue
        lines = text.splitlines(keepends=True)
        for cut in range(len(lines)):
            try:
                rows = tools.get(tool).parse("".join(lines[:cut]), "", source=str(path))
            except ParseError:
                continue
            assert len(rows) == full, f"{tool}: cut after line {cut} silently lost {full - len(rows)} rows"


def _concatenations(text: str) -> dict[str, str]:
    """Two runs' outputs as one: the whole output twice, and with a second run's first or last half after it."""
    lines = text.splitlines(keepends=True)
    half = len(lines) // 2
    whole = text if text.endswith("\n") else text + "\n"
    return {"twice": whole + text, "second run's head after it": whole + "".join(lines[:max(half, 1)]),
            "second run's tail after it": whole + "".join(lines[half:])}


@pytest.mark.parametrize("path", [p for p in FIXTURES if p.parent.name in ONE_RUN],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_two_runs_concatenated_are_refused(path):
    text = path.read_text(errors="replace")
    accepted = []
    for tool in _tools_of(path):
        try:
            tools.get(tool).parse(text, "", source=str(path))
        except ParseError:
            continue
        for kind, joined in _concatenations(text).items():
            with alarm(ALARM):
                try:
                    tools.get(tool).parse(joined, "", source=str(path))
                except ParseError:
                    continue
            accepted.append(f"{tool} with the {kind}")
    assert not accepted, f"accepted {path.name}: {accepted}"


def test_iperf2_with_several_streams_needs_its_sum_line():
    text = (ROOT / "tests/fixtures/iperf2/tcp_p2_adaptive.txt").read_text()
    final_sum = [line for line in text.splitlines(keepends=True) if line.startswith("[SUM] 0.0000-")][-1]
    assert tools.get("iperf2").parse(text, "", source="p2")
    with pytest.raises(ParseError, match=r"iperf2's final \[SUM\] line for a run of several streams"):
        tools.get("iperf2").parse(text.replace(final_sum, ""), "", source="p2")
    one = (ROOT / "tests/fixtures/iperf2/tcp_enhanced.txt").read_text()  # one stream: no [SUM] line to expect
    assert tools.get("iperf2").parse(one, "", source="p1")
