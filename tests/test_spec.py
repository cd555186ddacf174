"""Campaign files: valid ones load; invalid ones give file:line: field: problem."""

import pytest

from helpers import load_campaign

from perflab import spec

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
    ("seed: 7", "colour: red", "c.yaml:1: (top level): unknown field(s) 'colour'"),
    ("  parallel: [1, 4]", "  parallel: 4", "c.yaml:9: factors.parallel: 4 is not of type 'array'"),
    ("  tool: iperf3", "  tool: iperf9", "c.yaml:3: benchmark.tool: unknown tool 'iperf9'"),
    ("  server: h2\n", "", "c.yaml:5: hosts: tool iperf3 needs role(s) server"),
    ("  parallel: [1, 4]", "  warmup: [1, 4]", "c.yaml:9: factors.warmup: 'warmup' is a reserved column name"),
    ("  parallel: [1, 4]", "  parallel: [1, 4]\n  length: [1, 2, 3]\ncrossing: zip",
     "crossing: zip needs factors with equally many levels"),
    ("hosts:", "hosts: [", "c.yaml:7: not valid YAML"),
])
def test_errors_name_file_line_field_and_problem(old, new, expected):
    with pytest.raises(spec.SpecError) as err:
        load_campaign(GOOD.replace(old, new))
    assert expected in str(err.value)


def test_every_problem_is_reported_at_once():
    with pytest.raises(spec.SpecError) as err:
        load_campaign(GOOD.replace("repetitions: 3", "repetitions: -1").replace("seed: 7", "seed: x"))
    assert len(err.value.problems) == 2


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(spec.SpecError, match="cannot read campaign file"):
        spec.load(tmp_path / "nope.yaml")


def test_shipped_campaigns_are_valid():
    from pathlib import Path

    for path in sorted(Path(__file__).resolve().parents[1].glob("campaigns/*.yaml")):
        assert spec.load(path).name == path.stem
