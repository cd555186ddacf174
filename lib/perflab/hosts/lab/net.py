"""The lab's network: a bridge per link, each host's interfaces (MTU, rate, offloads) and routes, router hosts'
nftables rules."""

from __future__ import annotations

import json
from collections import deque

from .model import Lab, LabError, LabHost, LabLink
from .shell import link_exists, sh
from .state import load

#: The offloads a wire-like link (``offloads: off``) turns off, as ``ethtool -K`` names them, with the feature
#: ``ethtool -k`` shows for each: segmentation (TSO, GSO) and receive coalescing (GRO, LRO).
WIRE_OFFLOADS: dict[str, str] = {"tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload",
                                 "gro": "generic-receive-offload", "lro": "large-receive-offload"}
#: What a link's rate counts per frame beyond the bytes the kernel sends (Ethernet header included): preamble
#: and start delimiter 8, FCS 4 and inter-frame gap 12 bytes; and the smallest frame on the wire (64 + 8 + 12).
FRAME_OVERHEAD, FRAME_MIN = 24, 84


def shaper(rate: str) -> tuple[str, ...]:
    """The qdisc of a link's ``rate`` as ``tc qdisc replace dev IF root`` arguments: a token bucket (tbf) that
    counts each frame as a wire does (:data:`FRAME_OVERHEAD`, :data:`FRAME_MIN`), burst 256 kB, latency 50 ms."""
    return ("tbf", "rate", rate, "burst", "256kb", "latency", "50ms", "overhead", str(FRAME_OVERHEAD),
            "mpu", str(FRAME_MIN))


def offloads_argv(link: LabLink, dev: str) -> tuple[str, ...]:
    """The ``ethtool -K`` command that gives interface ``dev`` of ``link`` its offloads; empty for ``kernel``."""
    if link.offloads != "off":
        return ()
    return ("ethtool", "-K", dev, *(word for name in WIRE_OFFLOADS for word in (name, "off")))


def set_offloads(link: LabLink, dev: str, netns: str | None = None) -> None:
    """Give interface ``dev`` (in ``netns``) the offloads of ``link``: nothing to do for ``kernel``."""
    argv = offloads_argv(link, dev)
    if argv:
        sh(*(("ip", "netns", "exec", netns) if netns else ()), *argv)


def offload_state(dev: str, netns: str | None = None) -> dict[str, str] | None:
    """``tso``, ``gso``, ``gro``, ``lro`` -> ``on``/``off`` of interface ``dev`` (in ``netns``), read with
    ``ethtool -k``; None when ethtool or the interface is missing."""
    argv = (*(("ip", "netns", "exec", netns) if netns else ()), "ethtool", "-k", dev)
    try:
        proc = sh(*argv, check=False)
    except FileNotFoundError:
        return None
    if proc.returncode != 0:
        return None
    shown = dict(line.strip().partition(":")[::2] for line in proc.stdout.splitlines())
    return {name: shown[feature].split()[0] for name, feature in WIRE_OFFLOADS.items()
            if shown.get(feature, "").split()}


def link_offload_state(lab: Lab, link: LabLink, namespaces: set[str]) -> dict[str, list[str]] | None:
    """Offload (``tso``, ...) -> the states found on ``link``'s interfaces (both ends of each namespace host's veth
    in ``namespaces``, a virtual host's tap), e.g. ``["off"]``; None when none could be read (no ethtool)."""
    found: dict[str, set[str]] = {}
    for host in lab.hosts:
        for port in (p for p in host.ports if p.link == link.name):
            inside = host.netns in namespaces and not lab.described(host.name).vm
            for dev, netns in ((port.veth, None), *(((port.ifname, host.netns),) if inside else ())):
                for name, value in (offload_state(dev, netns) or {}).items():
                    found.setdefault(name, set()).add(value)
    return {name: sorted(found[name]) for name in WIRE_OFFLOADS if name in found} or None


def host_routes(lab: Lab) -> dict[str, list[tuple[str, str, str]]]:
    """host -> (network, via, ifname) for every link it is not on but reaches through routers."""
    routers = [h for h in lab.spec.hosts if h.router]
    out: dict[str, list[tuple[str, str, str]]] = {}
    for host in lab.spec.hosts:
        seen = set(host.links)
        queue: deque[tuple[str, tuple[str, str] | None]] = deque((link, None) for link in host.links)
        first: dict[str, tuple[str, str]] = {}
        while queue:
            link, hop = queue.popleft()
            for r in routers:
                if r.name == host.name or link not in r.links:
                    continue
                for nxt in r.links:
                    if nxt not in seen:
                        seen.add(nxt)
                        first[nxt] = hop or (r.name, link)
                        queue.append((nxt, first[nxt]))
        me = lab.host(host.name)
        out[host.name] = [(lab.link(target).network, lab.host(r).port(via).address, me.port(via).ifname)
                          for target, (r, via) in first.items()]
    return out


def ruleset(lab: Lab, host: str) -> str:
    """The router's nftables ruleset: filter rules and masquerade, each with a counter and a comment."""
    me, router = lab.host(host), next(h.router for h in lab.spec.hosts if h.name == host)
    assert router is not None, f"{host} is not a router"
    ifname = {p.link: p.ifname for p in me.ports}
    lines = []
    for i, rule in enumerate(router.filter):
        match = [f'iifname "{ifname[rule.from_link]}"' if rule.from_link else "",
                 f'oifname "{ifname[rule.to_link]}"' if rule.to_link else "",
                 f"meta l4proto {rule.proto}" if rule.proto else "",
                 f"th dport {rule.dport}" if rule.dport else ""]
        lines.append(f'{" ".join(m for m in match if m)} counter {rule.action} comment "filter {i}"')
    nat = [f'oifname "{ifname[link]}" counter masquerade comment "masquerade {link}"' for link in router.masquerade]
    return "\n".join([
        "table inet perflab {}", "delete table inet perflab",
        "table inet perflab {", f"  chain forward {{ type filter hook forward priority 0; policy {router.policy};",
        *(f"    {line}" for line in lines), '    counter comment "forwarded"', "  }",
        "  chain postrouting { type nat hook postrouting priority 100;", *(f"    {line}" for line in nat), "  }",
        "}", ""])


def router_counters(name: str, host: str) -> dict[str, tuple[int, int]]:
    """Packets and bytes of each rule of a router host, by comment (``filter 0``, ``masquerade lan2``,
    ``forwarded``: what no rule dropped), read from nftables inside the router's namespace."""
    lab = load(name)
    if lab is None:
        raise LabError(f"lab {name} is not up; bring it up with `perflab lab up`")
    out = json.loads(sh("ip", "netns", "exec", lab.host(host).netns, "nft", "-j", "list", "table", "inet",
                         "perflab").stdout)
    counters = {}
    for item in out["nftables"]:
        rule = item.get("rule")
        if rule and "comment" in rule:
            counter = next(e["counter"] for e in rule["expr"] if "counter" in e)
            counters[rule["comment"]] = (counter["packets"], counter["bytes"])
    return counters


def link_up(link: LabLink) -> None:
    """Create (or complete) a link's bridge with its MTU and the controller's address on it."""
    if not link_exists(link.bridge):
        sh("ip", "link", "add", link.bridge, "type", "bridge")
    sh("ip", "link", "set", link.bridge, "mtu", str(link.mtu))
    if f" {link.gateway}/" not in sh("ip", "-o", "addr", "show", "dev", link.bridge).stdout:
        sh("ip", "addr", "add", f"{link.gateway}/24", "dev", link.bridge)
    sh("ip", "link", "set", link.bridge, "up")


def host_net_up(lab: Lab, host: LabHost, exists: bool) -> None:
    """Create (or complete) a host's namespace and interfaces (a virtual host: its taps), with MTU, rate limit and
    offloads (both ends of each veth; a virtual host's guest sets its own, see :mod:`.vm`)."""
    if lab.described(host.name).vm:
        for port in host.ports:
            if not link_exists(port.veth):
                sh("ip", "tuntap", "add", "dev", port.veth, "mode", "tap")
            sh("ip", "link", "set", port.veth, "mtu", str(lab.link(port.link).mtu), "master",
                lab.link(port.link).bridge, "up")
            set_offloads(lab.link(port.link), port.veth)
        return
    ns = ("ip", "netns", "exec", host.netns)
    if not exists:
        sh("ip", "netns", "add", host.netns)
    sh(*ns, "ip", "link", "set", "lo", "up")
    for port in host.ports:
        link = lab.link(port.link)
        if not link_exists(port.veth):
            sh("ip", "link", "add", port.veth, "type", "veth", "peer", "name", port.ifname, "netns", host.netns)
        sh("ip", "link", "set", port.veth, "mtu", str(link.mtu), "master", link.bridge, "up")
        sh(*ns, "ip", "link", "set", port.ifname, "mtu", str(link.mtu), "up")
        set_offloads(link, port.veth)
        set_offloads(link, port.ifname, host.netns)
        if f" {port.address}/" not in sh(*ns, "ip", "-o", "addr", "show", "dev", port.ifname).stdout:
            sh(*ns, "ip", "addr", "add", f"{port.address}/24", "dev", port.ifname)
        if link.rate:
            sh(*ns, "tc", "qdisc", "replace", "dev", port.ifname, "root", *shaper(link.rate))
        else:
            sh(*ns, "tc", "qdisc", "del", "dev", port.ifname, "root", check=False)
    if next(h for h in lab.spec.hosts if h.name == host.name).router:
        sh(*ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
