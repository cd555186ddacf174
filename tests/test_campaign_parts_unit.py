"""Several hosts per role, phases and verify checks without a lab: what loads, what is refused and how, which
commands and services a cell gets, and how a wave of commands runs."""

from __future__ import annotations

import pytest

from helpers import load_campaign
from perflab import inventory, runner, tools
from perflab.hosts import remote
from perflab.runner.measured import Measured, build, run_waves
from perflab.runner.samples import _file_names
from perflab.campaign import Phase, Seat

BASE = """\
campaign: parts
benchmark: {tool: iperf3, params: {duration: 2}}
hosts:
  server: h2
  client:
    - {host: h1, set: {port: 5201}}
    - {host: h3, set: {port: 5202}}
    - h4
factors: {parallel: [1, 4]}
phases:
  - {label: up, set: {reverse: false}}
  - {label: down, set: {reverse: true}}
setup:
  - {on: client, run: "ip link set dev eth0 mtu {parallel}", verify: "test \\"$(cat /sys/class/net/eth0/mtu)\\" -eq {parallel}"}
repetitions: 3
warmups: 0
seed: 1
"""


def test_a_role_of_several_hosts_and_phases_load_as_declared():
    c = load_campaign(BASE)
    assert c.hosts == {"server": "h2", "client": "h1"}  # the first host stands for the role
    assert c.concurrent == {"client": (Seat("h1", {"port": 5201}), Seat("h3", {"port": 5202}), Seat("h4"))}
    assert c.involved() == ["h1", "h2", "h3", "h4"]
    assert c.phases == (Phase("up", {"reverse": False}), Phase("down", {"reverse": True}))
    assert c.phase_params({"parallel": 4}) == [("up", {"duration": 2, "parallel": 4, "reverse": False}),
                                               ("down", {"duration": 2, "parallel": 4, "reverse": True})]
    assert c.setup[0].verify.endswith("-eq {parallel}")
    # two phases of iperf3's 2 s + 1 s each, per sample; the clients run at once, so they add nothing
    assert runner.plan(c)["measure_seconds"] == 6 * 2 * 3.0


@pytest.mark.parametrize("edit, message", [
    (("server: h2", "server: [h2, h5]"),
     "c.yaml:4: hosts.server: only a role whose command is measured can have several hosts (iperf3: client); "
     "give server one host"),
    (("    - h4", "    - h3"), "c.yaml:5: hosts.client: host 'h3' is listed twice; list each host once"),
    (("seed: 1", "seed: 1\ngroups: [{server: h5}]"), "hosts.client: several hosts for one role cannot be combined "
                                                     "with groups"),
    (("{port: 5202}", "{parallel: 2}"), "c.yaml:7: hosts.client.1.set.parallel: parameter parallel is set by factor "
                                        "parallel too"),
    (("{port: 5202}", "{port: -1}"), "c.yaml:7: hosts.client.1.set.port: port must be > 0; found -1"),
    (("{port: 5202}", "{protocol: sctp}"), "c.yaml:7: hosts.client.1.set.protocol: parameter protocol takes one of "
                                           "tcp, udp; found 'sctp'"),
    (("{reverse: true}", "{parallel: 2}"), "c.yaml:12: phases.1.set.parallel: parameter parallel is set by factor "
                                           "parallel too; a phase may only set parameters nothing else varies"),
    (("{reverse: true}", "{port: 5300}"), "c.yaml:12: phases.1.set.port: parameter port is set by a host under "
                                          "hosts too"),
    (("{reverse: true}", "{protocol: sctp}"), "c.yaml:12: phases.1.set.protocol: parameter protocol takes one of"),
    (("{reverse: true}", "{reverse: yes}"), "c.yaml:12: phases.1.set.reverse: parameter reverse takes true or false; "
                                            "found 'yes'"),
    (("label: down", "label: up"), "c.yaml:10: phases: label 'up' is used twice; give every phase its own label"),
    (("label: down", "label: Down"), "c.yaml:12: phases.1.label: 'Down' does not match"),
    (("-eq {parallel}", "-eq {parallell}"), "c.yaml:14: setup.0.verify: placeholder {parallell} names no factor"),
    (("factors: {parallel: [1, 4]}", "factors: {phase: [1, 4]}"), "c.yaml:9: factors.phase: 'phase' is a reserved "
                                                                  "column name"),
])
def test_errors_name_the_line_and_field(edit, message):
    assert edit[0] in BASE
    with pytest.raises(Exception) as err:
        load_campaign(BASE.replace(*edit))
    assert message in str(err.value)


def test_a_tool_with_phases_of_its_own_takes_no_phases():
    text = """\
campaign: iozone
benchmark: {tool: fio_iozone, params: {size: 16M}}
hosts: {client: h1}
factors: {bs: [4k]}
phases: [{label: again, set: {iodepth: 2}}]
"""
    with pytest.raises(Exception, match=r"c.yaml:5: phases: fio_iozone runs phases of its own"):
        load_campaign(text)


class _Host:
    """What building the commands reads of a connected host: its name and addresses."""

    def __init__(self, name: str, address: str) -> None:
        self.name, self.address = name, address
        self.entry = type("Entry", (), {"addresses": {}})()


def test_each_host_runs_its_own_command_in_every_phase_and_each_server_port_gets_one_service():
    c = load_campaign(BASE)
    hosts = {f"h{i}": _Host(f"h{i}", f"198.18.0.{10 + i}") for i in range(1, 5)}
    waves, services = build(c, tools.get("iperf3"), hosts, {"parallel": 1})
    assert [[(m.host, m.phase, m.argv[m.argv.index("-p") + 1], "-R" in m.argv) for m in wave] for wave in waves] == [
        [("h1", "up", "5201", False), ("h3", "up", "5202", False), ("h4", "up", "5201", False)],
        [("h1", "down", "5201", True), ("h3", "down", "5202", True), ("h4", "down", "5201", True)]]
    assert [(s.host, s.name, s.line) for s in services] == [
        ("h2", "iperf3-server", "iperf3 -s -B 198.18.0.12 -p 5201"),
        ("h2", "iperf3-server-2", "iperf3 -s -B 198.18.0.12 -p 5202")]
    results = [(m, hosts[m.host], None) for wave in waves for m in wave]
    assert _file_names(results) == ["stdout", "stdout@h3", "stdout@h4", "stdout+down", "stdout@h3+down",
                                    "stdout@h4+down"]


def test_a_wave_starts_on_every_host_at_once_and_one_failure_fails_it_naming_the_host_and_phase():
    c = load_campaign(BASE)
    hosts = {name: remote.Host(inventory.HostEntry(name, "127.0.0.1", local=True)) for name in ("h1", "h3", "h4")}
    wave = [Measured("client", ("sh", "-c", script), host=name, phase="down", params={"duration": 1})
            for name, script in (("h1", "sleep 0.3"), ("h3", "sleep 0.1; exit 3"), ("h4", "sleep 0.3"))]
    later = [Measured("client", ("true",), host="h1", phase="later", params={"duration": 1})]
    results, reason = run_waves(c, hosts, [wave, later])
    assert reason == "exit code 3 on h3 (phase down)"
    assert [m.host for m, _, _ in results] == ["h1", "h3", "h4"], "the failed wave ends the sample"
    assert max(r.started for _, _, r in results) < min(r.ended for _, _, r in results), "they ran at the same time"
