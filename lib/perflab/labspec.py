"""Lab descriptions: the links (MTU, rate, offloads), hosts, routers, cgroup limits and scratch devices of a lab.

A description is a YAML file validated against ``schemas/lab.schema.json`` (errors are
``file:line: field: problem`` lines, as for campaign files), or the flat lab of
``perflab lab up --hosts N`` built by :func:`simple`. ``docs/lab.md`` documents each field.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


from .errors import FileError
from .formats import declarations
from .yamlfile import line_of, schema_problems

SCHEMA = declarations.LAB.schema()
#: Versions of the lab file format this perflab reads (the ``format`` key; docs/lab.md).
FORMATS = declarations.LAB.formats
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
#: Smallest device each file system's mkfs accepts (xfsprogs refuses below 300 MiB).
MIN_FS_SIZE = {"ext4": 1 << 20, "xfs": 300 << 20, "btrfs": 120 << 20, "zfs": 64 << 20}


class LabFileError(FileError, ValueError):
    """A lab description is invalid; ``str()`` is a list of ``file:line: field: problem`` lines."""


@dataclass(frozen=True)
class Link:
    """A link (one bridge, one /24): its MTU, optional egress rate of its host interfaces and its offloads.

    ``offloads`` (docs/lab.md, Wire-like links): ``off``, segmentation and receive offloads off on every
    interface of the link, so every packet is a frame of at most the MTU as on a wire; ``kernel``, the
    kernel's defaults left as they are (on a veth TSO and GSO on: ~64 KB packets cross the link).
    """

    name: str
    mtu: int = 1500
    rate: str | None = None
    offloads: str = "kernel"


@dataclass(frozen=True)
class Rule:
    """A forwarding filter rule of a router; unset fields match anything."""

    action: str
    from_link: str | None = None
    to_link: str | None = None
    proto: str | None = None
    dport: int | None = None


@dataclass(frozen=True)
class Router:
    """A host that forwards between its links, with NAT on ``masquerade`` links and filter rules."""

    masquerade: tuple[str, ...] = ()
    filter: tuple[Rule, ...] = ()
    policy: str = "accept"


@dataclass(frozen=True)
class Device:
    """A scratch block device of a host: a loop device over a sparse file, optionally formatted and mounted."""

    name: str
    size: int
    fs: str | None = None
    mkfs: tuple[str, ...] = ()
    options: str | None = None
    direct_io: bool = False


@dataclass(frozen=True)
class Vm:
    """A virtual host's QEMU configuration (``accel`` auto: KVM with hardware virtualization, else TCG)."""

    nic: str = "virtio"
    cache: str = "none"
    cpu: str = "max"
    vcpus: int = 1
    memory: int = 512 << 20
    accel: str = "auto"
    kernel: str | None = None


@dataclass(frozen=True)
class HostSpec:
    """A lab host: its links (eth0, eth1, ... in this order), cgroup limits, router role, devices, VM config."""

    name: str
    links: tuple[str, ...]
    cpuset: str | None = None
    memory: int | None = None
    router: Router | None = None
    devices: tuple[Device, ...] = ()
    vm: Vm | None = None


@dataclass(frozen=True)
class CephOsd:
    """One OSD of a lab's Ceph cluster: its host, CRUSH device class and BlueStore block file size."""

    host: str
    device_class: str
    size: int


@dataclass(frozen=True)
class Ceph:
    """A Ceph cluster on the lab (``perflab.hosts.lab.ceph``): monitor and manager host, client hosts, OSDs."""

    mon: str
    clients: tuple[str, ...]
    osds: tuple[CephOsd, ...]
    osd_memory_target: int = 1 << 30


@dataclass(frozen=True)
class Nfs:
    """An NFS server on the lab (``perflab.hosts.lab.nfs``): its host and the devices of it that it exports."""

    server: str
    exports: tuple[str, ...]


@dataclass(frozen=True)
class LabSpec:
    """A whole lab description; ``source`` is the file it came from (None for :func:`simple`)."""

    name: str
    links: tuple[Link, ...]
    hosts: tuple[HostSpec, ...]
    source: str | None = None
    ceph: Ceph | None = None
    nfs: Nfs | None = None

    def link(self, name: str) -> Link:
        """The link called ``name``."""
        return next(link for link in self.links if link.name == name)

    def to_json(self) -> dict[str, Any]:
        """This description as plain JSON (stored in the lab's state file)."""
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> LabSpec:
        """The inverse of :meth:`to_json`."""
        def host(h: dict) -> HostSpec:
            router = h["router"] and Router(tuple(h["router"]["masquerade"]),
                                            tuple(Rule(**r) for r in h["router"]["filter"]), h["router"]["policy"])
            devices = tuple(Device(**{**d, "mkfs": tuple(d["mkfs"])}) for d in h["devices"])
            return HostSpec(h["name"], tuple(h["links"]), h["cpuset"], h["memory"], router, devices,
                            h["vm"] and Vm(**h["vm"]))
        ceph = doc.get("ceph") and Ceph(doc["ceph"]["mon"], tuple(doc["ceph"]["clients"]),
                                        tuple(CephOsd(**o) for o in doc["ceph"]["osds"]),
                                        doc["ceph"]["osd_memory_target"])
        nfs = doc.get("nfs") and Nfs(doc["nfs"]["server"], tuple(doc["nfs"]["exports"]))
        return cls(doc["name"], tuple(Link(**link) for link in doc["links"]), tuple(map(host, doc["hosts"])),
                   doc["source"], ceph, nfs)


def simple(name: str, hosts: int, *, mtu: int = 1500, rate: str | None = None) -> LabSpec:
    """The flat lab of ``perflab lab up --hosts N``: hosts h1..hN on one link ``lan``."""
    doc = {"format": 1, "lab": name, "links": {"lan": {"mtu": mtu, **({"rate": rate} if rate else {})}},
           "hosts": {"h1": {"links": ["lan"]}}}
    option = {"lab": "--name", "links.lan.mtu": "--mtu", "links.lan.rate": "--rate"}
    problems = []
    for line in _validate(doc):
        field, problem = line.split(": ", 2)[1:]
        problems.append(f"{option.get(field, field)}: {problem}")
    if not 1 <= hosts <= 200:
        problems.append(f"--hosts: {hosts}: a lab has 1 to 200 hosts")
    if problems:
        raise LabFileError("command line", problems)
    return LabSpec(name, (Link("lan", mtu, rate),), tuple(HostSpec(f"h{i}", ("lan",)) for i in range(1, hosts + 1)))


def _validate(doc: dict, lines: dict[tuple, int] | None = None, path: str = "") -> list[str]:
    return schema_problems(doc, SCHEMA, lines or {}, path)


def size_bytes(text: str) -> int:
    """Bytes of a size such as ``512M`` (K, M, G, T are powers of 1024)."""
    unit = text[-1] if text[-1] in _UNITS else ""
    return int(text[: len(text) - len(unit)]) * _UNITS[unit]


def load(path: str | Path, *, text: str | None = None) -> LabSpec:
    """Load and check a lab description; raise :class:`LabFileError` listing every problem."""
    path = str(path)
    doc, lines = declarations.LAB.read(path, text=text, error=LabFileError)
    problems = _semantic_problems(doc, lines, path)
    if problems:
        raise LabFileError(path, problems)
    default = {"offloads": doc.get("offloads", Link.offloads)}
    links = tuple(Link(n, **{**default, **(spec or {})}) for n, spec in doc["links"].items())
    nfs = doc.get("nfs")
    return LabSpec(doc["lab"], links, tuple(_host(n, h) for n, h in doc["hosts"].items()), path,
                   _ceph(doc.get("ceph")), nfs and Nfs(nfs["server"], tuple(nfs["exports"])))


def _ceph(c: dict | None) -> Ceph | None:
    """The lab file's ``ceph`` section (already checked), or None without one."""
    if c is None:
        return None
    osds = tuple(CephOsd(host, cls, size_bytes(size)) for host, classes in c["osds"].items()
                 for cls, size in classes.items())
    memory = size_bytes(c["osd_memory_target"]) if "osd_memory_target" in c else Ceph.osd_memory_target
    return Ceph(c["mon"], tuple(c.get("clients", ())), osds, memory)


def _host(name: str, h: dict) -> HostSpec:
    r = h.get("router")
    router = None if r is None else Router(
        tuple(r.get("masquerade", ())),
        tuple(Rule(rule["action"], rule.get("from"), rule.get("to"), rule.get("proto"), rule.get("dport"))
              for rule in r.get("filter", ())),
        r.get("policy", "accept"))
    devices = tuple(Device(d, size_bytes(spec["size"]), spec.get("fs"), tuple(spec.get("mkfs", ())),
                           spec.get("options"), spec.get("direct_io", False))
                    for d, spec in (h.get("devices") or {}).items())
    memory, vm = h.get("memory"), h.get("vm")
    if vm is not None:
        vm = Vm(**{**vm, **({"memory": size_bytes(vm["memory"])} if "memory" in vm else {})})
    return HostSpec(name, tuple(h["links"]), h.get("cpuset"), memory and size_bytes(memory), router, devices, vm)


def _semantic_problems(doc: dict, lines: dict[tuple, int], path: str) -> list[str]:
    """References to undeclared links, routers with fewer than two links, devices too small for their fs."""
    problems = []
    declared = list(doc["links"])

    def check_link(where: tuple, value: str, among: list[str], what: str) -> None:
        if value not in among:
            problems.append(f"{path}:{line_of(lines, where)}: {'.'.join(map(str, where))}: {value!r} is not "
                            f"{what}; use one of: {', '.join(among)}")

    for name, h in doc["hosts"].items():
        for i, link in enumerate(h["links"]):
            check_link(("hosts", name, "links", i), link, declared, "a link declared under links")
        router = h.get("router")
        if router is not None:
            if len(h["links"]) < 2:
                problems.append(f"{path}:{line_of(lines, ('hosts', name, 'router'))}: hosts.{name}.router: a router "
                                "needs at least two links; add another link to its links")
            for i, link in enumerate(router.get("masquerade", ())):
                check_link(("hosts", name, "router", "masquerade", i), link, h["links"], f"one of {name}'s links")
            for i, rule in enumerate(router.get("filter", ())):
                for key in ("from", "to"):
                    if key in rule:
                        check_link(("hosts", name, "router", "filter", i, key), rule[key], h["links"],
                                   f"one of {name}'s links")
                if "dport" in rule and rule.get("proto") == "icmp":
                    problems.append(f"{path}:{line_of(lines, ('hosts', name, 'router', 'filter', i, 'dport'))}: "
                                    f"hosts.{name}.router.filter.{i}.dport: icmp has no ports; use proto tcp or udp")
        if "vm" in h and router is not None:
            problems.append(f"{path}:{line_of(lines, ('hosts', name, 'vm'))}: hosts.{name}.vm: a virtual host cannot "
                            "be a router; make the router a namespace host (drop vm or router)")
        for dev, spec in (h.get("devices") or {}).items():
            if "vm" in h and "direct_io" in spec:
                where = ("hosts", name, "devices", dev, "direct_io")
                problems.append(f"{path}:{line_of(lines, where)}: {'.'.join(where)}: a virtual host's disks are not "
                                "loop devices; set the guest's disk caching with vm.cache instead")
            fs = spec.get("fs")
            if fs and size_bytes(spec["size"]) < MIN_FS_SIZE[fs]:
                where = ("hosts", name, "devices", dev, "size")
                problems.append(f"{path}:{line_of(lines, where)}: {'.'.join(where)}: {spec['size']} is too small for "
                                f"{fs}; use at least {MIN_FS_SIZE[fs] >> 20}M")
            if fs == "zfs" and ("vm" in h or "mkfs" in spec):
                where = ("hosts", name, "devices", dev)  # type: ignore[assignment]
                problems.append(f"{path}:{line_of(lines, where)}: {'.'.join(where)}: a zfs pool is made by zfs-fuse "
                                "on a namespace host, with dataset properties in options; drop mkfs (and vm)")
            if spec.get("options") and not fs or spec.get("mkfs") and not fs:
                where = ("hosts", name, "devices", dev)  # type: ignore[assignment]
                problems.append(f"{path}:{line_of(lines, where)}: {'.'.join(where)}: mkfs and options need a file "
                                "system; add fs: ext4, xfs, btrfs or zfs")
    ceph = doc.get("ceph") or {}
    named: list[tuple[tuple, Any]] = [(("ceph", "mon"), ceph["mon"])] if ceph else []
    named += [(("ceph", "clients", i), h) for i, h in enumerate(ceph.get("clients", ()))]
    named += [(("ceph", "osds", h), h) for h in ceph.get("osds", {})]
    hosts = [h for h in doc["hosts"] if "vm" not in doc["hosts"][h]]
    for place, host in named:
        check_link(place, host, hosts, "a namespace host of this lab (Ceph daemons do not run in virtual hosts)")
    nfs = doc.get("nfs")
    if nfs:
        check_link(("nfs", "server"), nfs["server"], hosts, "a namespace host of this lab (the NFS server)")
        formatted = [d for d, spec in (doc["hosts"].get(nfs["server"], {}).get("devices") or {}).items()
                     if spec.get("fs")]
        for i, device in enumerate(nfs["exports"] if nfs["server"] in hosts else ()):
            check_link(("nfs", "exports", i), device, formatted, f"a device of {nfs['server']} with a file system")
    return problems
