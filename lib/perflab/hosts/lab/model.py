"""The lab's model: its links, hosts and interfaces with the names and addresses ``up`` gives them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...errors import UserError
from ...labspec import HostSpec, LabSpec

#: Where each lab keeps its state directory (state file, keys, known_hosts, inventory, disks).
STATE_ROOT = Path(os.environ.get("PERFLAB_LAB_DIR", "/run/perflab"))


class LabError(UserError, RuntimeError):
    """The lab could not be brought up, inspected or down; the message says what to do."""


@dataclass(frozen=True)
class Port:
    """One interface of a host: on ``link``, called ``ifname`` inside the host, ``veth`` outside."""

    link: str
    ifname: str
    veth: str
    address: str


@dataclass(frozen=True)
class LabHost:
    """One lab host: its name, namespace and interfaces (the first one's address is its SSH address)."""

    name: str
    netns: str
    ports: tuple[Port, ...]

    @property
    def address(self) -> str:
        """The address the controller reaches the host at (on its first link)."""
        return self.ports[0].address

    def port(self, link: str) -> Port:
        """The host's interface on ``link``."""
        return next(p for p in self.ports if p.link == link)


@dataclass(frozen=True)
class LabLink:
    """One link: its bridge, its /24, the controller's address on it, its MTU, rate and offloads (``off``, ``kernel``)."""

    name: str
    bridge: str
    network: str
    gateway: str
    mtu: int
    rate: str | None
    offloads: str


@dataclass(frozen=True)
class Lab:
    """A lab's fixed layout: its description with the names and addresses ``up`` gives it."""

    name: str
    spec: LabSpec
    links: tuple[LabLink, ...]
    hosts: tuple[LabHost, ...]
    state_dir: Path

    @property
    def inventory_path(self) -> Path:
        """Where ``up`` writes the lab's inventory."""
        return self.state_dir / "inventory.yaml"

    @property
    def key(self) -> Path:
        """The lab's client private key."""
        return self.state_dir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        """The lab's known_hosts file, with the host keys made by ``up``."""
        return self.state_dir / "known_hosts"

    def host(self, name: str) -> LabHost:
        """The host called ``name``; :class:`LabError` when there is none."""
        for h in self.hosts:
            if h.name == name:
                return h
        raise LabError(f"lab {self.name} has no host {name!r}; its hosts: {', '.join(h.name for h in self.hosts)}")

    def link(self, name: str) -> LabLink:
        """The link called ``name``."""
        return next(link for link in self.links if link.name == name)

    def described(self, name: str) -> HostSpec:
        """The description of host ``name``."""
        return next(h for h in self.spec.hosts if h.name == name)

    def device_file(self, host: str, device: str) -> Path:
        """The sparse file behind a host's scratch device."""
        return self.state_dir / host / f"disk-{device}.img"

    def mount_point(self, host: str, device: str) -> Path:
        """Where a host's scratch device is mounted, inside the host's own mount namespace."""
        return self.state_dir / host / "mnt" / device


def layout(spec: LabSpec, slots: dict[str, int]) -> Lab:
    """Names and addresses of every part of the lab, from its description and its links' slots."""
    links = []
    for i, link in enumerate(spec.links, 1):
        slot = slots[link.name]
        net = f"198.{18 + slot // 256}.{slot % 256}"
        links.append(LabLink(link.name, f"p{spec.name}-b{i}", f"{net}.0/24", f"{net}.1", link.mtu, link.rate,
                             link.offloads))
    index = {link.name: i for i, link in enumerate(spec.links, 1)}
    nets = {link.name: link.gateway.rsplit(".", 1)[0] for link in links}
    hosts = tuple(
        LabHost(h.name, f"perflab-{spec.name}-{h.name}",
                tuple(Port(link, f"eth{k}", f"p{spec.name}-{j}-{index[link]}", f"{nets[link]}.{10 + j}")
                      for k, link in enumerate(h.links)))
        for j, h in enumerate(spec.hosts, 1))
    return Lab(spec.name, spec, tuple(links), hosts, STATE_ROOT / spec.name)
