"""Numeric parameters stay within their declared ranges, and a sample within a week, checked when a campaign loads:
a value beyond is refused in one line naming file and line, before `perflab plan` estimates or `perflab run`
makes anything."""

from __future__ import annotations

import re

import pytest

from perflab import cli, tools
from perflab.yamlfile import SpecError

PING = "campaign: big\nbenchmark:\n  tool: ping\n  params:\n    count: {count}\nhosts: {{client: h1, server: h2}}\n" \
       "factors: {{size: [56]}}\nrepetitions: 2\n"


@pytest.mark.parametrize("count, shown", [
    ("100000000000000000000", "parameter count is 100000000000000000000, outside its range 1 to 10^9 (echo requests "
                              "to send (-c)); give a value in that range"),
    ("0", "count must be > 0; found 0"),
    ("-3", "count must be > 0; found -3"),
])
def test_a_count_outside_its_range_is_refused_in_one_line_before_plan_or_run(tmp_path, capsys, count, shown):
    path = tmp_path / "c.yaml"
    path.write_text(PING.format(count=count))
    raw = tmp_path / "raw"
    for argv in (["plan", str(path)], ["run", str(path), "--inventory", "localhost", "--raw", str(raw)]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"perflab {argv[0]}: error: {path}:5: benchmark.params.count: {shown}"], err
    assert not raw.exists(), "nothing is made for a refused campaign"


@pytest.mark.parametrize("value", [".nan", ".inf", "1e400", "'1e400'"])
def test_a_number_that_is_no_finite_value_is_out_of_range(tmp_path, value):
    path = tmp_path / "c.yaml"
    path.write_text(PING.replace("count: {count}", f"interval: {value}").format())
    from perflab import campaign
    with pytest.raises(SpecError) as refused:
        campaign.load(path)
    assert len(str(refused.value).splitlines()) == 1, "one line per value"
    assert re.search(r"c\.yaml:5: benchmark\.params\.interval: (parameter interval is .*, outside its range 0 to "
                     r"86400 s|.* is not a finite number)", str(refused.value)), str(refused.value)


def test_values_in_range_that_multiply_into_more_than_a_week_per_sample_are_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("campaign: dd\nbenchmark:\n  tool: dd\n  params: {of: out.bin, bs: 1G}\nhosts: {client: h1}\n"
                    "factors: {count: [1, 1000000]}\nrepetitions: 2\n")
    from perflab import campaign
    with pytest.raises(SpecError) as refused:
        campaign.load(path)
    assert str(refused.value).splitlines() == [
        f"{path}:4: benchmark.params: dd would take 5.37e+06 s per sample in cell count-1000000, more than a week "
        "(604800 s); choose parameters for a shorter run"]


def test_a_timeout_beyond_a_week_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(PING.format(count=10) + "timeout: 1000000000000\n")
    from perflab import campaign
    with pytest.raises(SpecError, match=r"c\.yaml:9: timeout: 1e\+12 s is more than a week \(604800 s\)"):
        campaign.load(path)


def test_every_numeric_parameter_has_a_range():
    for name in tools.REGISTRY:
        for param in tools.get(name).params:
            if param.type in ("int", "number", "size"):
                low, high = param.range or (None, None)
                assert low is not None and high is not None and low <= high, (name, param.name)
            else:
                assert param.range is None and param.span() == ""


def test_an_integer_of_more_digits_than_python_converts_is_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(PING.format(count="1" + "0" * 5000))
    assert cli.main(["plan", str(path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"perflab plan: error: {path}:5: a number of more than 4300 digits; write a number of sensible size"]
