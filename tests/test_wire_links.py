"""Wire-like links without a lab: how a lab file declares offloads and rates, how a virtual host and the status
drawing apply and show them, and how a change of offloads between two runs is refused in one line."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from perflab import labspec
from perflab.hosts import fingerprint
from perflab.hosts.lab import lifecycle, model, net, vm
from perflab.cli.stats import main as stats_main

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "data/raw/unnoba-fio-qd"
TEXT = """\
format: 1
lab: wires
offloads: off
links:
  wire: {mtu: 1500, rate: 1gbit}
  fast: {offloads: kernel}
  plain:
hosts:
  h1: {links: [wire, fast, plain]}
  v1: {links: [wire], vm: {}}
"""


def test_a_labs_offloads_are_every_links_default_and_a_link_may_keep_the_kernels():
    spec = labspec.load("lab.yaml", text=TEXT)
    assert spec.link("wire") == labspec.Link("wire", 1500, "1gbit", "off")
    assert spec.link("fast").offloads == "kernel" and spec.link("plain").offloads == "off"
    assert labspec.LabSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec


def test_a_lab_file_without_offloads_keeps_the_kernels_and_old_state_files_read_so():
    spec = labspec.load("lab.yaml", text=TEXT.replace("offloads: off\n", ""))
    assert spec.link("wire").offloads == "kernel" and spec.link("plain").offloads == "kernel"
    doc = spec.to_json()
    for link in doc["links"]:
        del link["offloads"]  # a lab brought up before links had offloads
    assert labspec.LabSpec.from_json(doc).link("wire").offloads == "kernel"


def test_an_unknown_offload_setting_is_one_error_line():
    with pytest.raises(labspec.LabFileError) as info:
        labspec.load("lab.yaml", text=TEXT.replace("{offloads: kernel}", "{offloads: on}"))
    assert info.value.problems == ["lab.yaml:6: links.fast.offloads: got 'on'; allowed: 'off', 'kernel'"]


@pytest.mark.parametrize("path, rates", [
    ("labs/000-cedri.yaml", {name: "10gbit" for name in ("inside1500", "nat1500", "direct1500", "inside9000",
                                                           "nat9000", "direct9000")}),
    ("labs/002-pfsense-neighbour.yaml", {"lan": None, "wan": None, "side": None}),
    ("labs/004-aoe-iscsi.yaml", {"mgmt": None, "std": "1gbit", "jumbo": "1gbit"}),
])
def test_the_study_labs_are_wire_like_at_their_seeds_speeds(path, rates):
    spec = labspec.load(ROOT / path)
    assert {link.name: link.rate for link in spec.links} == rates
    assert {link.offloads for link in spec.links} == {"off"}


def test_the_offloads_command_turns_off_segmentation_and_receive_coalescing_only_for_wire_like_links():
    lab = model.layout(labspec.load("lab.yaml", text=TEXT), {"wire": 1, "fast": 2, "plain": 3})
    assert net.offloads_argv(lab.link("wire"), "eth0") == ("ethtool", "-K", "eth0", "tso", "off", "gso", "off",
                                                           "gro", "off", "lro", "off")
    assert net.offloads_argv(lab.link("fast"), "eth1") == ()


def test_a_virtual_host_sets_its_offloads_and_the_links_shaper_inside_the_guest():
    lab = model.layout(labspec.load("lab.yaml", text=TEXT), {"wire": 1, "fast": 2, "plain": 3})
    init = vm._guest_init(lab, lab.host("v1"), [])
    assert "ethtool -K eth0 tso off gso off gro off lro off" in init
    assert "tc qdisc replace dev eth0 root tbf rate 1gbit burst 256kb latency 50ms overhead 24 mpu 84" in init


def test_status_says_when_a_wire_like_links_interfaces_still_offload():
    link = {"offloads": "off", "offload_state": {"tso": ["off", "on"], "gso": ["off"], "gro": ["off"], "lro": ["off"]}}
    assert lifecycle._offloads_text(link) == "offloads off NOT APPLIED (TSO off/on, GSO off, GRO off, LRO off)"
    assert lifecycle._offloads_text({"offloads": "kernel", "offload_state": None}) == \
        "offloads kernel (not read: ethtool missing)"


def _offloads(state: str) -> dict:
    return {f"net.eth0.offload.{feature}": state for feature in ("tcp-segmentation-offload",
                                                                 "generic-segmentation-offload",
                                                                 "generic-receive-offload", "large-receive-offload")}


def test_offload_differences_are_one_sentence_per_host_and_interface_and_absent_ones_unknown():
    facts = {"cpu.model": "X", "net.eth0.mtu": 1500}
    old = {"schema": 3, "host": "h1", "facts": facts}
    new = {"schema": 3, "host": "h1", "facts": {**facts, "net.eth0.mtu": 9000, **_offloads("off")}}
    assert fingerprint.describe(fingerprint.diff(old, new)) == [
        "h1: net.eth0.mtu changed from 1500 to 9000",
        "h1: eth0 offloads changed from unknown (not recorded) to tso off, gso off, gro off, lro off"]
    on = {**new, "facts": {**new["facts"], **_offloads("on"), "net.eth0.offload.large-receive-offload": "off"}}
    assert fingerprint.describe(fingerprint.diff(on, new)) == [
        "h1: eth0 offloads changed from tso on, gso on, gro on to tso off, gso off, gro off"]
    assert fingerprint.describe(fingerprint.compare_hosts({"h1": new, "h2": {**on, "host": "h2"}})) == [
        "eth0 offloads differ between hosts: h1 tso off, gso off, gro off; h2 tso on, gso on, gro on"]


def test_compare_runs_refuses_runs_across_a_change_of_offloads_in_one_line(tmp_path, capsys):
    new = tmp_path / "new"
    shutil.copytree(RUN, new)
    for path in (new / "blocks/0").glob("fingerprint-before-*.json"):
        fp = json.loads(path.read_text())
        assert not any(".offload." in key for key in fp["facts"]), "committed fingerprints record no offloads"
        fp["facts"] |= _offloads("off")
        path.write_text(json.dumps(fp))
    assert stats_main(["compare-runs", str(RUN), str(new), "--metric", "iops"]) == 2
    err = capsys.readouterr().err
    assert "eth0 offloads changed from unknown (not recorded) to tso off, gso off, gro off, lro off" in err
    assert len(err.strip().splitlines()) == 1 and "--allow-host-change" in err


def test_the_fingerprint_reads_offloads_and_qdisc_where_the_accounts_path_lacks_sbin():
    out = subprocess.run(["sh", "-c", fingerprint.script(("lo",))], env={"PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=True).stdout
    facts = fingerprint.parse(out)["facts"]
    assert facts["net.lo.offload.tcp-segmentation-offload"] in ("on", "off") and facts["net.lo.qdisc"]
