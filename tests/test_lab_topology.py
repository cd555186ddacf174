"""A routed lab on real namespaces: paths direct and through the NAT router, filter rules, MTU, rate."""

import os
import subprocess
import sys

import pytest

from helpers import ROOT_ONLY, leftovers
from perflab import inventory, labspec
from perflab.hosts import lab as lab_mod, remote

pytestmark = [ROOT_ONLY, pytest.mark.lab]

NAME = f"r{os.getpid() % 100000}"
TEXT = f"""\
format: 1
lab: {NAME}
links:
  lan1: {{mtu: 1500}}
  lan2: {{mtu: 1500, rate: 100mbit}}
  direct: {{mtu: 9000}}
hosts:
  h1: {{links: [lan1, direct]}}
  r1:
    links: [lan1, lan2]
    router:
      masquerade: [lan2]
      filter: [{{from: lan1, to: lan2, proto: tcp, dport: 9, action: reject}}]
  h2: {{links: [lan2, direct]}}
"""
#: A TCP server in h2 that answers each connection with the peer address it sees.
SERVER = ("import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
          "s.bind(('0.0.0.0', 5001)); s.listen(); print('ready', flush=True)\n"
          "for _ in range(2):\n c, a = s.accept(); c.sendall(a[0].encode()); c.close()")
CLIENT = ("python3 -c \"import socket,sys; c=socket.create_connection((sys.argv[1], {port}), timeout=5); "
          "print(c.recv(100).decode())\" {address}")


@pytest.fixture(scope="module")
def routed():
    lab = lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=TEXT))
    try:
        entries = inventory.load(lab.inventory_path)
        with remote.connect(entries) as hosts:
            yield lab, entries, hosts
    finally:
        lab_mod.down(NAME)
        assert leftovers(NAME) == []


def test_inventory_gives_each_host_its_address_per_link(routed):
    lab, entries, _ = routed
    assert entries["h1"].addresses == {"lan1": lab.host("h1").port("lan1").address,
                                       "direct": lab.host("h1").port("direct").address}
    assert entries["h2"].address == entries["h2"].addresses["lan2"]
    assert len({lab.link(n).network for n in ("lan1", "lan2", "direct")}) == 3
    assert all(lab.link(n).network.startswith(("198.18.", "198.19.")) for n in ("lan1", "lan2", "direct"))


def test_tcp_goes_direct_or_through_the_masquerading_router(routed):
    lab, entries, hosts = routed
    before = lab_mod.router_counters(NAME, "r1")
    server = subprocess.Popen(["ip", "netns", "exec", lab.host("h2").netns, sys.executable, "-c", SERVER],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        routed_peer = hosts["h1"].check(CLIENT.format(port=5001, address=entries["h2"].addresses["lan2"])).strip()
        direct_peer = hosts["h1"].check(CLIENT.format(port=5001, address=entries["h2"].addresses["direct"])).strip()
    finally:
        server.kill()
        server.wait()
    assert routed_peer == entries["r1"].addresses["lan2"], "h2 sees the router's address: NAT happened"
    assert direct_peer == entries["h1"].addresses["direct"]
    after = lab_mod.router_counters(NAME, "r1")
    assert after["masquerade lan2"][0] >= before["masquerade lan2"][0] + 1
    assert after["forwarded"][0] >= before["forwarded"][0] + 6, "a TCP exchange through r1 is at least 6 packets"
    out = hosts["h1"].check(f"ping -c 1 -W 5 {entries['h2'].addresses['lan2']}; ip route get {entries['h2'].addresses['lan2']}")
    assert "1 received" in out and f"via {entries['r1'].addresses['lan1']}" in out


def test_the_routers_filter_rule_rejects_and_counts(routed):
    _, entries, hosts = routed
    before = lab_mod.router_counters(NAME, "r1")["filter 0"][0]
    res = hosts["h1"].run(CLIENT.format(port=9, address=entries["h2"].addresses["lan2"]))
    assert res.exit_code != 0 and "ConnectionRefusedError" in res.stderr
    assert lab_mod.router_counters(NAME, "r1")["filter 0"][0] == before + 1


def test_mtu_9000_passes_a_jumbo_df_ping_and_1500_does_not(routed):
    _, entries, hosts = routed
    jumbo = hosts["h1"].run(f"ping -M do -s 8972 -c 1 -W 5 {entries['h2'].addresses['direct']}")
    assert jumbo.exit_code == 0 and "1 received" in jumbo.stdout
    small = hosts["h1"].run(f"ping -M do -s 8972 -c 1 -W 5 {entries['h2'].addresses['lan2']}")
    assert small.exit_code != 0 and "message too long" in (small.stdout + small.stderr).lower()


def test_a_links_rate_shapes_only_that_links_interfaces(routed):
    _, _, hosts = routed
    assert "tbf" in hosts["h2"].check("tc qdisc show dev eth0") and "100Mbit" in hosts["r1"].check("tc qdisc show dev eth1")
    assert "tbf" not in hosts["h1"].check("tc qdisc show dev eth0; tc qdisc show dev eth1")
    assert "mtu 9000" in hosts["h2"].check("ip -o link show dev eth1")


def test_status_draws_the_topology(routed):
    lab, entries, _ = routed
    text = lab_mod.draw(lab_mod.status(NAME))
    assert f"[lan2] {lab.link('lan2').network}" in text and "MTU 9000" in text and "rate 100mbit" in text
    assert "r1 (router)" in text and "masquerade on lan2" in text and "filter 0: from lan1 to lan2" in text
    assert f"route {lab.link('lan2').network} via {entries['r1'].addresses['lan1']} dev eth0" in text


def test_a_different_description_under_the_same_name_is_refused(routed):
    with pytest.raises(lab_mod.LabError, match="up from another description"):
        lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=TEXT.replace("rate: 100mbit", "rate: 10mbit")))
    again = lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=TEXT))
    assert again == routed[0]
