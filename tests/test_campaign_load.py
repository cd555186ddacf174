"""Campaign files: valid ones load; invalid ones give file:line: field: problem."""

import time

import pytest

from helpers import load_campaign

from perflab import campaign as campaign_mod

GOOD = """\
campaign: demo
benchmark:
  tool: iperf3
  params: {duration: 1}
hosts:
  client: h1
  server: h2
factors:
  parallel: [1, 4]
repetitions: 3
seed: 7
"""


def test_valid_campaign_gets_defaults():
    c = load_campaign(GOOD)
    assert (c.name, c.tool, c.design, c.warmups, c.retries) == ("demo", "iperf3", "rmit", 1, 1)
    assert c.factors == {"parallel": (1, 4)}
    assert c.digest() == load_campaign(GOOD).digest() != load_campaign(GOOD.replace("seed: 7", "seed: 8")).digest()


@pytest.mark.parametrize("old,new,expected", [
    ("repetitions: 3", "repetitions: 0", "c.yaml:10: repetitions: 0 is less than the minimum of 1"),
    ("campaign: demo", "campaign: Demo X", "c.yaml:1: campaign: 'Demo X' does not match"),
    ("seed: 7", "design: random", "c.yaml:11: design: got 'random'; allowed: 'rmit', 'sequential'"),
    ("seed: 7", "colour: red", "c.yaml:11: colour: unknown field; remove it or use one of format, scratch, text, "
                              "programs, campaign, study, title, description, ... (36 in all)"),
    ("seed: 7", "repetiton: 4", "c.yaml:11: repetiton: unknown field; did you mean 'repetitions'?"),
    ("  parallel: [1, 4]", "  parallel: 4", "c.yaml:9: factors.parallel: 4 is not of type 'array'"),
    ("  tool: iperf3", "  tool: iperf9", "c.yaml:3: benchmark.tool: unknown tool 'iperf9'"),
    ("  server: h2\n", "", "c.yaml:5: hosts: tool iperf3 needs role(s) server"),
    ("  parallel: [1, 4]", "  warmup: [1, 4]", "c.yaml:9: factors.warmup: 'warmup' is a reserved column name"),
    ("  parallel: [1, 4]", "  parallel: [1, 4]\n  length: [1, 2, 3]\ncrossing: zip",
     "crossing: zip needs factors with equally many levels"),
    ("hosts:", "hosts: [", "c.yaml:7: not valid YAML"),
    ("  parallel: [1, 4]", "  parallel: [{label: one, set: {parallel: 1}}, 4]",
     "c.yaml:9: factors.parallel[1]: a plain level among labelled ones"),
])
def test_errors_name_file_line_field_and_problem(old, new, expected):
    with pytest.raises(campaign_mod.SpecError) as err:
        load_campaign(GOOD.replace(old, new))
    assert expected in str(err.value)


def test_every_problem_is_reported_at_once():
    with pytest.raises(campaign_mod.SpecError) as err:
        load_campaign(GOOD.replace("repetitions: 3", "repetitions: -1").replace("seed: 7", "seed: x"))
    assert len(err.value.problems) == 2


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(campaign_mod.SpecError, match="cannot read campaign file"):
        campaign_mod.load(tmp_path / "nope.yaml")


def test_shipped_campaigns_are_valid():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    paths = sorted([*root.glob("campaigns/**/*.yaml"), *root.glob("studies/*/campaigns/*.yaml")])
    paths = [p for p in paths if "inventories" not in p.parts]
    assert len(paths) > 20, "the shipped campaigns were not found"
    for path in paths:
        assert campaign_mod.load(path).name == path.stem


# --- refusals added for robustness: every message names the file and line ---------------------------

def _load_text(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path, lambda: campaign_mod.load(path)


BASE = "campaign: x\nbenchmark: {tool: iperf3, params: {duration: 1}}\nhosts: {client: h1, server: h2}\n"


@pytest.mark.parametrize("extra, line, needle", [
    ("factors: {p: [1]}\ntimeout: .nan\n", 5, "timeout: nan is not a finite number"),
    ("factors: {p: [1]}\ntimeout: .inf\n", 5, "timeout: inf is not a finite number"),
    ("factors: {duration: [5, -5]}\n", 4, "factors.duration.1: duration must be > 0; found -5"),
    ("factors: {p: [1]}\nrepetitions: 3\nrepetitions: 4\n", 6, "duplicate key 'repetitions' (first on line 5)"),
    ("factors: {p: [1], p: [2]}\n", 4, "duplicate key 'p'"),
    ("factors: {protocol: [tcp, carrier-pigeon]}\n", 4, "factors.protocol.1: parameter protocol takes one of tcp, udp; found 'carrier-pigeon'"),
])
def test_bad_values_are_refused_naming_file_line_and_field(tmp_path, extra, line, needle):
    path, load = _load_text(tmp_path, BASE + extra)
    with pytest.raises(campaign_mod.SpecError) as err:
        load()
    assert str(err.value).startswith(f"{path}:{line}: ") and needle in str(err.value), str(err.value)


def test_negative_params_are_refused(tmp_path):
    path, load = _load_text(tmp_path, BASE.replace("duration: 1", "duration: -5") + "factors: {p: [1]}\n")
    with pytest.raises(campaign_mod.SpecError, match=r"c.yaml:2: benchmark.params.duration: duration must be > 0"):
        load()


def test_huge_grids_are_refused_before_anything_is_expanded(tmp_path):
    levels = "[" + ", ".join(map(str, range(400))) + "]"
    path, load = _load_text(tmp_path, BASE + f"factors: {{a: {levels}, b: {levels}}}\n")
    started = time.monotonic()
    with pytest.raises(campaign_mod.SpecError, match=r"factors: 160000 cells \(400 x 400\) is more than the limit of 100000"):
        load()
    assert time.monotonic() - started < 30
    path, load = _load_text(tmp_path, BASE + "factors: {a: [1, 2, 3, 4, 5]}\nrepetitions: 100000\n")
    with pytest.raises(campaign_mod.SpecError, match="repetitions: 500005 samples"):
        load()


def test_a_parse_only_tool_cannot_be_run(tmp_path):
    path, load = _load_text(tmp_path, "campaign: x\nbenchmark: {tool: npb}\nhosts: {client: h1}\nfactors: {p: [1]}\n")
    with pytest.raises(campaign_mod.SpecError, match="c.yaml:2: benchmark.tool: perflab only parses npb's output"):
        load()


def test_a_key_yaml_reads_as_a_boolean_is_reported_not_a_crash(tmp_path):
    path, load = _load_text(tmp_path, BASE + "factors: {p: [1]}\nsetup:\n  - {true: client, run: x, extra: 1}\n")
    with pytest.raises(campaign_mod.SpecError) as err:
        load()
    assert str(err.value).splitlines()[:2] == [
        f"{path}:6: setup.0.True: unknown field; remove it or use one of on, run, timeout, verify",
        f"{path}:6: setup.0.extra: unknown field; remove it or use one of on, run, timeout, verify"]


def test_yaml_merge_keys_work_and_may_be_overridden_but_a_duplicate_is_refused():
    text = ("campaign: m\nbenchmark: {tool: ping}\nhosts: {client: h1, server: h2}\n"
            "base: &base {count: 3, interval: 0.2}\n").replace("base: &base {count: 3, interval: 0.2}\n", "")
    merged = ("campaign: m\nbenchmark:\n  tool: ping\n  params:\n    <<: {count: 3, interval: 0.2}\n    count: 5\n"
              "hosts: {client: h1, server: h2}\nfactors: {size: [56]}\nseed: 1\n")
    assert load_campaign(merged).params == {"count": 5, "interval": 0.2}
    with pytest.raises(campaign_mod.SpecError, match=r"c.yaml:6: not valid YAML: duplicate key 'count' \(first on line 5\)"):
        load_campaign(merged.replace("    <<: {count: 3, interval: 0.2}\n", "    count: 3\n"))
    assert text
