"""Settle conditions: load thresholds that are met, never met, and bad arguments."""

from __future__ import annotations

import math
import time

import pytest

from perflab.hosts import settle
from perflab.hosts.remote import Result
from perflab.hosts.settle import SettleError



class ScriptedHost:
    """A stand-in for :class:`perflab.hosts.remote.Host` whose /proc/loadavg follows a script."""

    def __init__(self, name: str, loads: list[float]) -> None:
        self.name, self.loads, self.commands = name, list(loads), []

    def run(self, command: str, *, timeout: float | None = None) -> Result:
        self.commands.append(command)
        load = self.loads.pop(0) if len(self.loads) > 1 else self.loads[0]
        now = time.time()
        return Result(self.name, command, f"{load:.2f} 0.50 0.40 1/99 1234\n".encode(), b"", 0, now, now)


def test_waits_until_the_load_falls_to_the_threshold():
    host = ScriptedHost("h1", [3.0, 2.0, 0.5])
    result = settle.wait([host], max_load1=0.5, timeout=10, poll=0.01)
    assert result.satisfied and result.polls == 3
    assert result.loads == {"h1": 0.5}
    assert host.commands == ["cat /proc/loadavg"] * 3  # one command per host per poll


def test_all_hosts_must_be_quiet_at_the_same_poll():
    h1, h2 = ScriptedHost("h1", [0.1, 2.0, 0.1]), ScriptedHost("h2", [2.0, 0.1, 0.1])
    result = settle.wait([h1, h2], max_load1=1.0, timeout=10, poll=0.01)
    assert result.satisfied and result.polls == 3


def test_gives_up_at_the_deadline_with_the_last_loads():
    host = ScriptedHost("h1", [4.0])
    started = time.monotonic()
    result = settle.wait([host], max_load1=1.0, timeout=0.1, poll=0.02)
    elapsed = time.monotonic() - started
    assert not result.satisfied and result.loads == {"h1": 4.0}
    assert 0.1 <= result.waited <= elapsed < 1.0
    assert result.polls >= 2
    assert str(result).startswith("did not settle after 0.1 s")


def test_zero_timeout_polls_exactly_once():
    result = settle.wait([ScriptedHost("h1", [4.0])], max_load1=1.0, timeout=0, poll=1.0)
    assert (result.satisfied, result.polls) == (False, 1)


def test_a_load_of_zero_as_in_seed_000_is_reachable():
    result = settle.wait([ScriptedHost("h1", [0.01, 0.0])], max_load1=0.0, timeout=10, poll=0.01)
    assert result.satisfied and result.loads == {"h1": 0.0}


@pytest.mark.parametrize("kwargs, message", [
    ({"timeout": math.inf}, "settle timeout"), ({"timeout": math.nan}, "settle timeout"),
    ({"timeout": -1}, "settle timeout"), ({"timeout": 1, "poll": 0}, "poll interval"),
])
def test_arguments_that_could_loop_forever_are_refused(kwargs, message):
    with pytest.raises(SettleError, match=message):
        settle.wait([ScriptedHost("h1", [0.0])], max_load1=1.0, **kwargs)


def test_no_hosts_is_refused():
    with pytest.raises(SettleError, match="at least one host"):
        settle.wait([], max_load1=1.0, timeout=1)


def test_unreadable_loadavg_names_the_host():
    with pytest.raises(SettleError, match="host h7.*expected 'load1"):
        settle.parse_loadavg("cat: /proc/loadavg: No such file", source="host h7: /proc/loadavg")




@pytest.mark.lab
def test_a_threshold_that_is_met_returns_at_the_first_poll(hosts):
    result = settle.wait(list(hosts.values()), max_load1=1000, timeout=30, poll=0.5)
    assert result.satisfied and result.polls == 1
    assert set(result.loads) == set(hosts) and all(v >= 0 for v in result.loads.values())
    assert result.waited < 5


@pytest.mark.lab
def test_an_impossible_threshold_times_out_quickly(hosts):
    result = settle.wait(list(hosts.values()), max_load1=-1, timeout=1.0, poll=0.2)
    assert not result.satisfied
    assert 1.0 <= result.waited < 4.0
    assert result.polls >= 2
