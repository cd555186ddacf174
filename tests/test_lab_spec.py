"""Lab descriptions: errors with file:line, routes, subnets, and every shipped example brought up for real."""

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from helpers import ROOT_ONLY, leftovers
from perflab import inventory, labspec
from perflab.hosts import lab as lab_mod, remote

ROOT = Path(__file__).resolve().parent.parent
GOOD = """\
lab: demo
links:
  lan1: {mtu: 1500}
  lan2: {mtu: 9000, rate: 1gbit}
  lan3:
hosts:
  h1: {links: [lan1]}
  r1:
    links: [lan1, lan2]
    router: {masquerade: [lan2], filter: [{from: lan1, proto: tcp, dport: 80, action: drop}]}
  r2: {links: [lan2, lan3], router: {}}
  h2:
    links: [lan3]
    cpuset: "0-1"
    memory: 512M
    devices:
      data: {size: 1G, fs: xfs, options: noatime, mkfs: [-K]}
      raw: {size: 64M, direct_io: true}
format: 1
"""


def _errors(text: str) -> list[str]:
    with pytest.raises(labspec.LabFileError) as info:
        labspec.load("lab.yaml", text=text)
    return info.value.problems


def test_a_good_description_loads_with_every_field():
    spec = labspec.load("lab.yaml", text=GOOD)
    assert [link.name for link in spec.links] == ["lan1", "lan2", "lan3"]
    assert spec.link("lan2") == labspec.Link("lan2", 9000, "1gbit") and spec.link("lan3").mtu == 1500
    h2 = spec.hosts[3]
    assert (h2.cpuset, h2.memory) == ("0-1", 512 << 20)
    assert h2.devices[0] == labspec.Device("data", 1 << 30, "xfs", ("-K",), "noatime", False)
    assert h2.devices[1].direct_io and h2.devices[1].fs is None
    r1 = spec.hosts[1].router
    assert r1.masquerade == ("lan2",) and r1.filter == (labspec.Rule("drop", "lan1", None, "tcp", 80),)
    assert labspec.LabSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec


@pytest.mark.parametrize("edit, expected", [
    (("  h1: {links: [lan1]}", "  h1: {links: [lan1], cpus: 2}"), "lab.yaml:7: hosts.h1.cpus: unknown field; did you mean 'cpuset'?"),
    (("  h1: {links: [lan1]}", "  h1: {links: [lan9]}"),
     "lab.yaml:7: hosts.h1.links.0: 'lan9' is not a link declared under links; use one of: lan1, lan2, lan3"),
    (("masquerade: [lan2]", "masquerade: [lan3]"),
     "lab.yaml:10: hosts.r1.router.masquerade.0: 'lan3' is not one of r1's links; use one of: lan1, lan2"),
    (("r2: {links: [lan2, lan3]", "r2: {links: [lan3]"),
     "lab.yaml:11: hosts.r2.router: a router needs at least two links"),
    (("size: 1G, fs: xfs", "size: 100M, fs: xfs"),
     "lab.yaml:17: hosts.h2.devices.data.size: 100M is too small for xfs; use at least 300M"),
    (("mtu: 9000", "mtu: 9001"), "lab.yaml:4: links.lan2.mtu: 9001 is greater than the maximum of 9000"),
    (("lab: demo", "lab: Demo-Lab"), "lab.yaml:1: lab: 'Demo-Lab' does not match"),
    (("raw: {size: 64M, direct_io: true}", "raw: {size: 64M, options: ro}"),
     "lab.yaml:18: hosts.h2.devices.raw: mkfs and options need a file system"),
    (("raw: {size: 64M, direct_io: true}", "raw: {size: 64M, fs: zfs, mkfs: [-o, ashift=12]}"),
     "lab.yaml:18: hosts.h2.devices.raw: a zfs pool is made by zfs-fuse on a namespace host"),
    (("raw: {size: 64M, direct_io: true}", "raw: {size: 32M, fs: zfs}"),
     "lab.yaml:18: hosts.h2.devices.raw.size: 32M is too small for zfs; use at least 64M"),
    (("dport: 80, action: drop", "dport: 80, action: log"), "lab.yaml:10: hosts.r1.router.filter.0.action: got 'log'"),
    (("cpuset: \"0-1\"", "cpuset: \"0-1; reboot\""), "lab.yaml:14: hosts.h2.cpuset: '0-1; reboot' does not match"),
    (("router: {}", "router: {}, vm: {}"), "lab.yaml:11: hosts.r2.vm: a virtual host cannot be a router"),
    (("memory: 512M\n", "memory: 512M\n    vm: {nic: rtl8139}\n"), "lab.yaml:16: hosts.h2.vm.nic: got 'rtl8139'"),
    (("memory: 512M\n", "memory: 512M\n    vm: {cache: none}\n"),
     "lab.yaml:19: hosts.h2.devices.raw.direct_io: a virtual host's disks are not loop devices"),
])
def test_errors_name_file_line_field_and_problem(edit, expected):
    old, new = edit
    assert old in GOOD
    problems = _errors(GOOD.replace(old, new))
    assert any(p.startswith(expected) for p in problems), problems


def test_yaml_errors_and_missing_files_are_one_line():
    assert _errors("lab: x\nlinks: [\n")[0].startswith("lab.yaml:3: not valid YAML")
    with pytest.raises(labspec.LabFileError, match="nope.yaml: cannot read lab file"):
        labspec.load("nope.yaml")


@pytest.mark.parametrize("path", sorted((ROOT / "labs").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_lab_files_load(path):
    spec = labspec.load(path)
    others = {labspec.load(p).name for p in (ROOT / "labs").glob("*.yaml") if p != path}
    assert spec.name not in others, f"{path.name}: lab name {spec.name} is used by another shipped lab file"


def test_routes_lead_through_routers_hop_by_hop_and_names_fit_the_kernel():
    spec = labspec.load("lab.yaml", text=GOOD.replace("lab: demo", "lab: abcdefg"))
    lab = lab_mod.model.layout(spec, {"lan1": 0, "lan2": 300, "lan3": 511})
    assert lab.link("lan2").network == "198.19.44.0/24" and lab.link("lan3").gateway == "198.19.255.1"
    names = [link.bridge for link in lab.links] + [p.veth for h in lab.hosts for p in h.ports]
    assert max(map(len, names)) <= 15 and len(set(names)) == len(names)
    routes = lab_mod.net.host_routes(lab)
    r1_lan1, r2_lan2 = lab.host("r1").port("lan1").address, lab.host("r2").port("lan2").address
    assert sorted(routes["h1"]) == [("198.19.255.0/24", r1_lan1, "eth0"), ("198.19.44.0/24", r1_lan1, "eth0")]
    assert routes["h2"] == [("198.19.44.0/24", lab.host("r2").port("lan3").address, "eth0"),
                            ("198.18.0.0/24", lab.host("r2").port("lan3").address, "eth0")]
    assert routes["r1"] == [("198.19.255.0/24", r2_lan2, "eth1")]
    ruleset = lab_mod.net.ruleset(lab, "r1")
    assert 'iifname "eth0" meta l4proto tcp th dport 80 counter drop comment "filter 0"' in ruleset
    assert 'oifname "eth1" counter masquerade comment "masquerade lan2"' in ruleset


def test_subnets_avoid_other_labs_and_keep_their_slot(tmp_path, monkeypatch):
    monkeypatch.setattr(lab_mod.model, "STATE_ROOT", tmp_path)
    spec = labspec.simple("alpha", 2)
    first = lab_mod.state.allocate(spec, {})
    (tmp_path / "beta").mkdir()
    (tmp_path / "beta" / "state.json").write_text(json.dumps({"slots": {"lan": first["lan"]}}))
    moved = lab_mod.state.allocate(spec, {})
    assert moved["lan"] != first["lan"]
    assert lab_mod.state.allocate(spec, {"lan": 7}) == {"lan": 7}


@ROOT_ONLY
@pytest.mark.lab
@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(p for p in (ROOT / "labs").glob("*.yaml")
                                       if p.name not in ("virtual.yaml", "001-ceph.yaml")), ids=lambda p: p.name)
# virtual.yaml boots a guest and 001-ceph.yaml a Ceph cluster: tests/test_lab_vm.py and tests/test_ceph_lab.py
# bring each up once (hostnames over SSH there too)
def test_shipped_lab_files_come_up_answer_ssh_and_go_down(path):
    spec = dataclasses.replace(labspec.load(path), name=f"e{os.getpid() % 100000}")
    if any(h.vm for h in spec.hosts) and not shutil.which(lab_mod.QEMU):
        pytest.skip("QEMU is missing (make deps)")
    lab = lab_mod.bring_up(spec)
    try:
        entries = inventory.load(lab.inventory_path)
        routes = lab_mod.net.host_routes(lab)
        with remote.Hosts({n: remote.Host(e, connect_timeout=120) for n, e in entries.items()}) as hosts:
            for name, host in hosts.items():
                assert host.check("hostname").strip() == name
                reachable = {lab.link(p.link).network for p in lab.host(name).ports} | {r[0] for r in routes[name]}
                for other in lab.hosts:
                    for port in other.ports:
                        if lab.link(port.link).network in reachable:
                            assert host.run(f"ping -c 1 -W 10 {port.address}", timeout=120).ok, f"{name}: {port}"
    finally:
        lab_mod.down(spec.name)
    assert leftovers(spec.name) == []


def test_cgroup_v2_only_writes_limits_where_the_kernel_reads_them_and_parses_counters(tmp_path):
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cpuset.cpus.effective").write_text("0-3\n")
    spec = labspec.load("lab.yaml", text="format: 1\nlab: v\nlinks: {lan: }\nhosts:\n  h1: {links: [lan], cpuset: '1', "
                        "memory: 64M}\n  h2: {links: [lan]}\n")
    lab = lab_mod.model.layout(spec, {"lan": 3})
    lab_mod.cgroups.cgroups_up(lab, {"unified": root})
    for d in (root, root / "perflab", root / "perflab" / "v"):
        assert (d / "cgroup.subtree_control").read_text() == "+cpuset +memory +cpu"
    h1, h2 = root / "perflab" / "v" / "h1", root / "perflab" / "v" / "h2"
    assert (h1 / "cpuset.cpus").read_text() == "1" and (h1 / "memory.max").read_text() == str(64 << 20)
    assert not (h2 / "cpuset.cpus").exists() and (h2 / "memory.max").read_text() == "max"
    (h1 / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 0\n")
    (h1 / "memory.current").write_text("1048576\n")
    (h1 / "cpuset.cpus.effective").write_text("1\n")
    (h1 / "cpu.pressure").write_text("some avg10=1.50 avg60=0.00 avg300=0.00 total=10\n")
    assert lab_mod.cgroups.cgroup_usage({"unified": str(h1)}) == lab_mod.HostUsage(2.5, 2.0, 0.5, 1 << 20, None, 64 << 20, "1", 1.5)


def test_the_shipped_lab_files_are_found():
    assert len(list((ROOT / "labs").glob("*.yaml"))) >= 5, "the parametrized lab file tests found no lab files"


def test_an_nfs_server_exports_formatted_devices_of_a_namespace_host_and_its_config_names_them():
    from perflab.hosts.lab import model, nfs

    spec = labspec.load("lab.yaml", text=GOOD + "nfs: {server: h2, exports: [data]}\n")
    assert spec.nfs == labspec.Nfs("h2", ("data",)) and labspec.LabSpec.from_json(spec.to_json()) == spec
    lab = model.layout(spec, {"lan1": 1, "lan2": 2, "lan3": 3})
    conf = nfs.config(lab)
    assert f'Path = "{lab.mount_point("h2", "data")}";' in conf and 'Pseudo = "/data";' in conf
    assert "Mount_Path_Pseudo = true;" in conf and "Graceless = true;" in conf and "Squash = No_Root_Squash;" in conf
    problems = _errors(GOOD + "nfs: {server: h3, exports: [raw, data]}\n")
    assert problems == ["lab.yaml:20: nfs.server: 'h3' is not a namespace host of this lab (the NFS server); use one "
                        "of: h1, r1, r2, h2"]
    problems = _errors(GOOD + "nfs: {server: h2, exports: [raw]}\n")
    assert any(p.startswith("lab.yaml:20: nfs.exports.0: 'raw' is not a device of h2 with a file system")
               for p in problems), problems
