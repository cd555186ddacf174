"""Wire-like lab links on real namespaces: with offloads off every packet is one frame of at most the MTU and a
link's rate holds; with the kernel's offloads ~64 KB packets cross a veth; status and host facts show both."""

import os
import subprocess
import sys
import time

import pytest

from helpers import ROOT_ONLY, leftovers
from perflab import inventory, labspec
from perflab.hosts import fingerprint, lab as lab_mod, remote

pytestmark = [ROOT_ONLY, pytest.mark.lab]

NAME = f"w{os.getpid() % 100000}"
#: 50 Mbit/s: a few MB take about a second on the rate-limited link, far longer than on an unlimited veth.
RATE_BIT = 50_000_000
TEXT = f"""\
format: 1
lab: {NAME}
offloads: off
links:
  ctl: {{offloads: kernel}}
  wire: {{mtu: 1500, rate: 50mbit}}
  jumbo: {{mtu: 9000}}
  veth: {{mtu: 1500, offloads: kernel}}
hosts:
  h1: {{links: [ctl, wire, jumbo, veth]}}
  h2: {{links: [ctl, wire, jumbo, veth]}}
"""
#: The largest frame of an MTU as an interface counts it: the IP packet and the 14-byte Ethernet header (no FCS).
ETHERNET_HEADER = 14
#: tbf's bucket (``burst 256kb``): bytes it may pass at once beyond the rate.
BURST = 256 * 1024
#: Bytes sent per transfer.
SIZE = 4 << 20
PORT = 5301
#: A TCP sink: counts the bytes of one connection and answers with the count.
SINK = ("import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
        f"s.bind(('0.0.0.0', {PORT})); s.listen(); print('ready', flush=True); c, _ = s.accept(); n = 0\n"
        "while (b := c.recv(1 << 20)): n += len(b)\n"
        "c.sendall(str(n).encode()); c.close()")
#: A TCP source: connects, says so, and on a line from stdin sends its bytes and prints the sink's count.
SOURCE = ("import socket, sys; c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=120); "
          "print('connected', flush=True); sys.stdin.readline(); "
          "c.sendall(bytes(int(sys.argv[3]))); c.shutdown(socket.SHUT_WR); print(c.recv(100).decode(), flush=True)")


@pytest.fixture(scope="module")
def wired():
    lab = lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=TEXT))
    try:
        yield lab
    finally:
        lab_mod.down(NAME)
        assert leftovers(NAME) == []


def _rx(lab, host: str, link: str) -> tuple[int, int]:
    """Bytes and packets received so far on ``host``'s interface on ``link``, read from sysfs inside its namespace."""
    h = lab.host(host)
    path = f"/sys/class/net/{h.port(link).ifname}/statistics"
    out = subprocess.run(["ip", "netns", "exec", h.netns, "cat", f"{path}/rx_bytes", f"{path}/rx_packets"],
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), int(out[1])


def _transfer(lab, link: str) -> tuple[int, int, float]:
    """Send :data:`SIZE` bytes over TCP from h1 to h2 on ``link``: the bytes and packets h2's interface received
    meanwhile, and an upper bound of the seconds between the two counter readings."""
    sink = subprocess.Popen(["ip", "netns", "exec", lab.host("h2").netns, sys.executable, "-c", SINK],
                            stdout=subprocess.PIPE, text=True)
    source = None
    try:
        assert sink.stdout.readline().strip() == "ready"
        source = subprocess.Popen(["ip", "netns", "exec", lab.host("h1").netns, sys.executable, "-c", SOURCE,
                                   lab.host("h2").port(link).address, str(PORT), str(SIZE)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert source.stdout.readline().strip() == "connected"
        started = time.monotonic()
        bytes0, packets0 = _rx(lab, "h2", link)
        source.stdin.write("go\n")
        source.stdin.flush()
        got = source.stdout.readline().strip()
        bytes1, packets1 = _rx(lab, "h2", link)
        seconds = time.monotonic() - started
    finally:
        for proc in (p for p in (source, sink) if p):
            proc.kill()
            proc.wait()
    assert got == str(SIZE)
    return bytes1 - bytes0, packets1 - packets0, seconds


def test_offloads_off_make_every_packet_a_frame_of_at_most_the_mtu(wired):
    for link, mtu in (("wire", 1500), ("jumbo", 9000)):
        received, packets, _ = _transfer(wired, link)
        assert received >= SIZE and packets > 0
        per_packet = received / packets
        assert per_packet <= mtu + ETHERNET_HEADER, f"{link}: {per_packet:.0f} B per packet"
    assert per_packet > 4 * (1500 + ETHERNET_HEADER), f"MTU 9000 carries jumbo frames: {per_packet:.0f} B per packet"


def test_the_kernels_offloads_let_64_kb_packets_cross_a_veth(wired):
    received, packets, _ = _transfer(wired, "veth")
    # TSO and GSO on, GRO off: TCP hands the veth segments of up to 64 KB, which cross the bridge whole
    assert received / packets > 8 * (1500 + ETHERNET_HEADER), f"{received / packets:.0f} B per packet"


def test_a_links_rate_holds_within_the_token_buckets_burst(wired):
    received, _, seconds = _transfer(wired, "wire")
    # tbf passes at most its bucket plus the rate over any interval; it counts each frame with 24 bytes of
    # Ethernet framing more than the interface does, so the bound holds for the interface's bytes a fortiori
    assert received <= BURST + RATE_BIT / 8 * seconds, f"{received} B in {seconds:.3f} s"


def test_status_shows_each_links_mtu_rate_and_offloads(wired):
    text = lab_mod.draw(lab_mod.status(NAME))
    line = {name: next(x for x in text.splitlines() if x.startswith(f"  [{name}]")) for name in ("wire", "jumbo", "veth")}
    assert "MTU 1500, rate 50mbit, offloads off (TSO off, GSO off, GRO off, LRO off)" in line["wire"]
    assert "MTU 9000, rate unlimited, offloads off (TSO off" in line["jumbo"]
    assert "MTU 1500, rate unlimited, offloads kernel (TSO on, GSO on" in line["veth"]


def test_host_facts_record_each_interfaces_offloads_and_rate(wired):
    entries = inventory.load(wired.inventory_path)
    with remote.connect({"h2": entries["h2"]}) as hosts:
        facts = fingerprint.collect(hosts["h2"], ("eth0", "eth1", "eth2", "eth3"))["facts"]
    wire, veth = wired.host("h2").port("wire").ifname, wired.host("h2").port("veth").ifname
    assert facts[f"net.{wire}.offload.tcp-segmentation-offload"] == "off"
    assert facts[f"net.{wire}.offload.generic-receive-offload"] == "off"
    assert facts[f"net.{veth}.offload.tcp-segmentation-offload"] == "on"
    assert facts[f"net.{wire}.qdisc"].startswith("tbf root") and f'"rate":{RATE_BIT // 8}' in facts[f"net.{wire}.qdisc"]
    assert '"overhead":24' in facts[f"net.{wire}.qdisc"]
