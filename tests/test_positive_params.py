"""Positivity and zero are properties of each declared parameter (``Param.positive``, ``Param.allow_zero``), not a
list of names: iperf3's ``interval: 0`` (no periodic reports) is taken, ping's ``count: 0`` is still refused."""

from __future__ import annotations

import pytest

from perflab import campaign, tools
from perflab.yamlfile import SpecError

IPERF3 = "campaign: c\nbenchmark:\n  tool: {tool}\n  params:\n    {name}: {value}\nhosts: {{client: h1, server: h2}}\n" \
         "factors: {{parallel: [1]}}\nrepetitions: 2\n"
PING = "campaign: c\nbenchmark:\n  tool: ping\n  params:\n    {name}: {value}\nhosts: {{client: h1, server: h2}}\n" \
       "factors: {{size: [56]}}\nrepetitions: 2\n"
FIO = "campaign: c\nbenchmark:\n  tool: fio\n  params:\n    {name}: {value}\nhosts: {{client: h1}}\n" \
      "factors: {{bs: [4k]}}\nrepetitions: 2\n"


def _load(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return campaign.load(path)


def test_iperf3_takes_an_interval_of_0_and_passes_it_on(tmp_path):
    spec = _load(tmp_path, IPERF3.format(tool="iperf3", name="interval", value=0))
    client = tools.get("iperf3").commands(spec.params, {"client": "h1", "server": "198.18.0.2"})[-1].argv
    assert client[client.index("-i") + 1] == "0"


@pytest.mark.parametrize("text, shown", [
    (IPERF3.format(tool="iperf3", name="interval", value=-1), "benchmark.params.interval: interval must be >= 0; "
                                                               "found -1"),
    (IPERF3.format(tool="iperf2", name="interval", value=0), "benchmark.params.interval: interval must be > 0; "
                                                              "found 0"),
    (IPERF3.format(tool="iperf3", name="duration", value=0), "benchmark.params.duration: duration must be > 0; "
                                                              "found 0"),
    (IPERF3.format(tool="iperf3", name="omit", value=-2), "benchmark.params.omit: omit must be >= 0; found -2"),
    (PING.format(name="count", value=0), "benchmark.params.count: count must be > 0; found 0"),
    (PING.format(name="interval", value=0), "benchmark.params.interval: interval must be > 0; found 0"),
    (FIO.format(name="ramp_time", value=-1), "benchmark.params.ramp_time: ramp_time must be >= 0; found -1"),
    (FIO.format(name="iodepth", value=0), "benchmark.params.iodepth: iodepth must be > 0; found 0"),
])
def test_a_positive_parameter_refuses_what_its_declaration_refuses_in_one_line(tmp_path, text, shown):
    with pytest.raises(SpecError) as err:
        _load(tmp_path, text)
    assert err.value.problems == [f"{tmp_path / 'c.yaml'}:5: {shown}"]


def test_zero_where_a_declaration_allows_it(tmp_path):
    assert _load(tmp_path, IPERF3.format(tool="iperf3", name="omit", value=0)).params["omit"] == 0
    assert _load(tmp_path, FIO.format(name="ramp_time", value=0)).params["ramp_time"] == 0


# What a global list of names made positive before each declaration said so; each keeps it in its own declaration
# (iperf3's interval alone now takes 0, as iperf3 does).
WERE_POSITIVE = {"duration", "runtime", "time", "count", "interval", "parallel", "threads", "numjobs", "iodepth", "np",
                 "n", "nb", "p", "q", "length", "size", "bs", "ramp_time", "omit", "timeout", "deadline", "port"}
TAKE_ZERO = {("fio", "ramp_time"), ("fio_iozone", "ramp_time"), ("iperf3", "omit"), ("iperf3", "interval")}


def test_every_parameter_the_list_made_positive_declares_it_and_no_other_does():
    for name in tools.REGISTRY:
        for p in tools.get(name).params:
            numeric = p.type in ("int", "number", "size")
            assert p.positive == (numeric and p.name in WERE_POSITIVE), (name, p.name)
            assert p.allow_zero == ((name, p.name) in TAKE_ZERO), (name, p.name)
            if p.positive:
                assert p.not_positive(-1) and (p.not_positive(0) is None) == p.allow_zero and p.not_positive(1) is None


def test_a_declaration_refuses_positivity_where_it_means_nothing():
    with pytest.raises(ValueError, match="positive is for numbers"):
        tools.base.Param("name", "word", None, "", "a word", positive=True)
    with pytest.raises(ValueError, match="allow_zero for positive ones"):
        tools.base.Param("n", "int", None, "", "a count", allow_zero=True)
