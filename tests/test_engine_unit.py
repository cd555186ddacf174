"""The experiment engine without the lab: campaign fields and their errors, plans, stopping, a lost host."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import pytest

from helpers import BOUNDARY, load_campaign

from perflab import campaign as campaign_mod, cli, inventory, runner, tools
from perflab.campaign import values as campaign_values
from perflab.hosts import fingerprint, remote
from perflab.formats import fingerprints as fp_format
from perflab.runner import samples
from perflab.runner.progress import Progress
from perflab.runner.session import Blocks
from perflab.ledger import Ledger
from perflab.store import RawStore, StoreError

ROOT = Path(__file__).resolve().parents[1]

GOOD = """\
campaign: noisy
benchmark:
  tool: iperf3
  params: {duration: 1}
hosts: {client: h1, server: h2, neighbour: h3}
factors:
  parallel: [1, 4]
  load: ["off", "on"]
repetitions: 3
settle:
  hosts: [client, server]
  max_load1: 0.5
  timeout: 30
setup:
  - {on: client, run: "ip link set dev eth0 mtu 1500"}
teardown:
  - {on: server, run: "sync"}
neighbours:
  - on: neighbour
    run: "stress-ng --cpu 1 --timeout 600"
    cells: {load: ["on"]}
"""

#: GOOD without settle, steps and loads (so without the factor only its neighbour uses).
PLAIN = GOOD.split("settle:")[0].replace('  load: ["off", "on"]\n', "")


def test_new_fields_load_with_their_defaults():
    c = load_campaign(GOOD)
    assert c.settle == campaign_mod.Settle(("client", "server"), 0.5, 30.0, 1.0)
    assert c.setup == (campaign_mod.Step("client", "ip link set dev eth0 mtu 1500"),)
    assert c.neighbours[0].cells == {"load": ("on",)} and c.neighbours[0].applies({"load": "on", "parallel": 1})
    assert not c.neighbours[0].applies({"load": "off", "parallel": 1})
    assert (c.monitors, c.fingerprints) == (True, True)
    assert c.involved() == ["h1", "h2", "h3"]
    plain = load_campaign(PLAIN)
    assert (plain.settle, plain.setup, plain.neighbours) == (None, (), ())
    assert load_campaign(GOOD.replace("hosts: [client, server]", "hosts: [h1, h9]")).involved() == ["h1", "h2", "h3", "h9"]


@pytest.mark.parametrize("old,new,expected", [
    ("  - {on: client, run", "  - {on: clinet, run",
     "c.yaml:15: setup.0.on: 'clinet' is not a role of `hosts` (roles: client, server, neighbour); did you mean 'client'?"),
    ("  hosts: [client, server]", "  hosts: [client, monitor]",
     "c.yaml:11: settle.hosts.1: 'monitor' is not a role of `hosts`"),
    ("cells: {load: [\"on\"]}", "cells: {lode: [\"on\"]}",
     "c.yaml:21: neighbours.0.cells.lode: unknown factor 'lode'; factors: parallel, load"),
    ("cells: {load: [\"on\"]}", "cells: {load: [\"high\"]}",
     "c.yaml:21: neighbours.0.cells.load: level 'high' is not a level of factor load (levels: 'off', 'on')"),
    ("run: \"sync\"", "run: \"echo {paralel}\"",
     "c.yaml:17: teardown.0.run: placeholder {paralel} names no factor, benchmark parameter, <role>_address or <role>_address_<link> (known: parallel, load, duration, client_address, server_address, neighbour_address)"),
    ("  max_load1: 0.5", "  max_load1: low", "c.yaml:12: settle.max_load1: 'low' is not of type 'number'"),
    ("  timeout: 30", "  timeout: 30\n  every: 2", "c.yaml:14: settle.every: unknown field; remove it or use one of hosts, max_load1, timeout, poll"),
    ("    run: \"stress-ng", "    command: \"stress-ng", "c.yaml:19: neighbours.0: 'run' is a required property"),
    ("repetitions: 3", "repetitions: 3\nmonitors: sometimes", "c.yaml:10: monitors: 'sometimes' is not of type 'boolean'"),
])
def test_invalid_engine_fields_name_file_line_field_value_and_what_is_allowed(old, new, expected):
    assert old in GOOD
    with pytest.raises(campaign_mod.SpecError) as info:
        load_campaign(GOOD.replace(old, new))
    assert any(p.startswith(expected) for p in info.value.problems), info.value.problems


def test_yaml_on_off_yes_no_stay_strings_and_placeholders_are_shell_quoted():
    c = load_campaign(GOOD.replace('["off", "on"]', "[off, on]").replace('[\"on\"]', "[on]"))
    assert c.factors["load"] == ("off", "on") and c.neighbours[0].on == "neighbour"
    assert campaign_values.fill("tc qdisc {x} {y} '{print}'", {"x": "ab", "y": 4}) == "tc qdisc ab 4 '{print}'"
    with pytest.raises(ValueError, match=r"\{x\}: 'a b' is not a safe command-line token"):
        campaign_values.fill("tc qdisc {x}", {"x": "a b"})


def test_plan_reports_engine_settings_and_overheads(capsys):
    c = load_campaign(GOOD)
    info = runner.plan(c)
    assert (info["samples"], info["blocks"], info["hosts"]) == (4 * 4, 4, ["h1", "h2", "h3"])
    assert info["measure_seconds"] == 16 * 2.0
    assert info["overhead_seconds"] == pytest.approx(runner.STARTUP_SECONDS + 16 * runner.SAMPLE_SECONDS
                                                     + 3 * (16 * runner.MONITOR_SECONDS
                                                                                  + runner.RECORDING_SECONDS)
                                                     + 3 * (runner.FINGERPRINT_SECONDS + 4 * runner.DIGEST_SECONDS)
                                                     + 16 * 2 * runner.SETTLE_POLL_SECONDS, abs=0.1)
    many = GOOD.replace("repetitions: 3", "repetitions: 99")  # 100 blocks: 100 digests per host, 199 with a gate
    gated = runner.plan(load_campaign(many + "quiet: {window: 1}\n"))["overhead_seconds"]
    assert gated - runner.plan(load_campaign(many))["overhead_seconds"] == pytest.approx(3 * 99 * runner.DIGEST_SECONDS,
                                                                                          abs=0.1)
    assert info["settle_max_seconds"] == 16 * 30
    assert info["neighbours"] == [{"on": "neighbour", "run": "stress-ng --cpu 1 --timeout 600", "cells": {"load": ["on"]}}]
    quiet = runner.plan(load_campaign(PLAIN + "monitors: false\nfingerprints: false\n"))
    quiet_samples = quiet["samples"]
    assert quiet["overhead_seconds"] == pytest.approx(runner.STARTUP_SECONDS + quiet_samples * runner.SAMPLE_SECONDS,
                                                      abs=0.05)
    assert quiet["estimated_seconds"] == pytest.approx(quiet["measure_seconds"] + quiet["overhead_seconds"], abs=0.05)


@pytest.mark.parametrize("path", sorted((ROOT / "campaigns" / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_example_campaigns_plan(path, capsys):
    assert cli.main(["plan", str(path), "--head", "2"]) == 0
    out = capsys.readouterr().out
    assert "settle:" in out and "monitors (sysstat):" in out and "estimated duration" in out


def test_stop_ends_a_service_promptly_even_with_zombie_group_members(tmp_path):
    host = remote.Host(inventory.HostEntry("local", "127.0.0.1", local=True))
    host.workdir = str(tmp_path)
    service = host.start("zombies", "sh -c 'sleep 303.1 & sleep 0.01 & wait; exec sleep 304.1'")
    t0 = time.monotonic()
    host.stop(service)
    assert time.monotonic() - t0 < 1.5
    assert host.run("pgrep -f 'slee[p] 30[34].1'").stdout == ""


class Gone(remote.Host):
    """A local host that disappears when it is asked to run the measured command."""

    def run(self, command, **kwargs):
        if "VANISH" in command:
            raise remote.HostError(f"host {self.name} ({self.address}): lost while running {command!r}")
        return super().run(command, **kwargs)


def test_a_lost_host_records_the_attempt_and_stops_with_a_resume_hint(tmp_path, monkeypatch):
    monkeypatch.setitem(tools.REGISTRY, "probe", "helpers:Probe")
    text = ("campaign: lost\nbenchmark: {tool: probe}\nprograms: [cmd]\nhosts: {client: h1}\nfactors: {cmd: ['echo 1', 'echo VANISH']}\n"
            "repetitions: 2\nwarmups: 0\nseed: 1\nmonitors: false\nfingerprints: false\n")
    c = load_campaign(text)
    monkeypatch.setattr(samples, "connect", lambda entries, names: remote.Hosts({n: Gone(entries[n]) for n in names}))
    with pytest.raises(runner.RunnerError, match="rerun the same command to resume"):
        runner.run(c, inventory.localhost(), tmp_path, stream=open(os.devnull, "w"))
    (failed,) = (tmp_path / "lost" / "failed").iterdir()
    meta = json.loads((failed / "meta.json").read_text())
    assert meta["status"] == "failed" and "lost while running" in meta["reason"]
    assert list(Ledger(tmp_path / "lost" / "ledger.jsonl").failures()) == [meta["run_id"]]


def test_a_second_run_of_the_same_campaign_is_refused_while_the_first_holds_it(tmp_path):
    c = load_campaign(GOOD)
    with RawStore(tmp_path, c.name).lock():
        with pytest.raises(StoreError, match=f"another perflab run \\(pid {os.getpid()} .*kill {os.getpid()}"):
            runner.run(c, inventory.localhost(), tmp_path, stream=open(os.devnull, "w"))


class Unprobed:
    """A host as :class:`Blocks` sees it when ``fingerprint.collect`` is faked: a name, an address, an entry."""

    def __init__(self, name: str) -> None:
        self.name, self.address = name, f"198.18.0.{name[1:]}"
        self.entry = inventory.HostEntry(name, self.address)


def _probes(monkeypatch, lose: tuple[str, str] | None = None) -> list[tuple[str, str]]:
    """Fake ``fingerprint.collect`` (a digest reusing ``known``'s facts once a full probe is known); return the
    (host, phase) of every probe. The first probe ``lose`` names loses its host."""
    calls: list[tuple[str, str]] = []

    def collect(host, interfaces, tools, *, phase, known):
        calls.append((host.name, phase))
        if (host.name, phase) == lose and calls.count(lose) == 1:
            raise remote.HostLost(host.name, f"host {host.name}: lost while fingerprinting {phase}", "reset")
        fp = {"format": fp_format.FORMAT, "host": host.name, "address": host.address, "digest": "d",
              "collected_at": f"probe {len(calls)}", "facts": {"hostname": host.name}, "state": {}, "versions": {}}
        return fp | ({"facts_from": known[0]} if known else {})

    monkeypatch.setattr(fingerprint, "collect", collect)
    return calls


def _blocks(tmp_path: Path, text: str = BOUNDARY, quieten=lambda: None) -> Blocks:
    spec = load_campaign(text)
    return Blocks(spec, {n: Unprobed(n) for n in ("h1", "h2")}, RawStore(tmp_path, spec.name),
                  Progress(3, 0, stream=io.StringIO()), quieten=quieten)


def _stored(blocks: Blocks, block: int, when: str, host: str) -> dict:
    return json.loads((blocks.store.dir / f"blocks/{block}/fingerprint-{when}-{host}.json").read_text())


def test_without_a_gate_a_blocks_fingerprints_before_are_the_previous_blocks_after(probe, tmp_path, monkeypatch):
    calls = _probes(monkeypatch)
    blocks = _blocks(tmp_path)
    for block in range(3):
        blocks.enter(block)
        blocks.finish()
    assert calls == [(h, phase) for phase in ("before block 0", "after block 0", "after block 1", "after block 2")
                     for h in ("h1", "h2")], "one probe per host at each boundary between two blocks"
    for host in ("h1", "h2"):
        first = _stored(blocks, 0, "before", host)
        assert "probe_from" not in first and "facts_from" not in first, "the run's first probe is a full one"
        for block in (1, 2):
            after = _stored(blocks, block - 1, "after", host)
            assert _stored(blocks, block, "before", host) == after | {
                "probe_from": f"blocks/{block - 1}/fingerprint-after-{host}.json"}
            assert after["facts_from"] == f"blocks/0/fingerprint-before-{host}.json", "digests name the full probe"
        assert blocks.full[host][0] == f"blocks/0/fingerprint-before-{host}.json"
    differences = json.loads((blocks.store.dir / "blocks/2/differences.json").read_text())
    assert differences["since_previous_block"] == [] and differences["changed"] == []


def test_with_a_quiet_gate_every_block_is_probed_before_it(probe, tmp_path, monkeypatch):
    calls, quietened, gated = _probes(monkeypatch), [], []
    blocks = _blocks(tmp_path, BOUNDARY + "quiet: {window: 1}\n", quieten=lambda: quietened.append(len(calls)))
    monkeypatch.setattr(blocks.gate, "before_block", lambda block, stored: gated.append(block))
    for block in range(2):
        blocks.enter(block)
        blocks.finish()
    assert calls == [(h, f"{when} block {b}") for b in (0, 1) for when in ("before", "after") for h in ("h1", "h2")]
    assert gated == [0, 1] and quietened == [0, 4], "the neighbours stop before the gate, then the hosts are probed"
    assert "probe_from" not in _stored(blocks, 1, "before", "h1")


def test_a_boundary_is_shared_only_with_the_next_block_and_only_for_hosts_the_completed_finish_probed(
        probe, tmp_path, monkeypatch):
    calls = _probes(monkeypatch, lose=("h2", "after block 0"))
    blocks = _blocks(tmp_path)
    blocks.enter(0)
    with pytest.raises(remote.HostLost):
        blocks.finish()
    assert blocks.boundary is None and blocks.current == 0
    blocks.finish()  # run again after the reconnection: h1's fingerprint after block 0 predates it
    blocks.enter(1)
    assert calls[-2:] == [("h2", "after block 0"), ("h1", "before block 1")]
    assert "probe_from" not in _stored(blocks, 1, "before", "h1")
    assert _stored(blocks, 1, "before", "h2")["probe_from"] == "blocks/0/fingerprint-after-h2.json"
    blocks.enter(2)  # finished here, as a resumed run does when a block's last sample was stored before
    assert calls[-2:] == [("h1", "after block 1"), ("h2", "after block 1")]
    assert _stored(blocks, 2, "before", "h1")["probe_from"] == "blocks/1/fingerprint-after-h1.json"
    blocks.finish()
    blocks.store.put_file("blocks/4/fingerprint-before-h1.json", json.dumps(_stored(blocks, 0, "before", "h1")))
    blocks.enter(4)  # not the next block: probed, and a fingerprint an earlier run stored is kept
    assert calls[-1] == ("h2", "before block 4") and blocks.boundary is None
    assert _stored(blocks, 4, "before", "h1") == _stored(blocks, 0, "before", "h1")
