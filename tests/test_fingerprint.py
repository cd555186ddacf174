"""Host fingerprints: parsing captured script output, diffs, cross-host checks, and a live lab."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess

import pytest

from perflab import inventory, tools
from perflab.hosts import fingerprint, remote
from perflab.hosts.fingerprint import Difference, FingerprintError
from perflab.formats import fingerprints as fp_format
from perflab.formats.versions import FormatError


# Output of fingerprint.script() on a lab host (captured, trimmed: lscpu and the
# vulnerabilities cut to a few lines). The governor, boost, driver, ethtool and tbf
# sections are written in the formats those files and tools print, as a lab host has none.
CAPTURED = """
@@perflab hostname
h1

@@perflab uname
6.18.44-fc-v782
#1 SMP PREEMPT_DYNAMIC @0
x86_64

@@perflab cmdline
console=ttyS0 quiet mitigations=auto

@@perflab boot_id
13b98a5f-8292-4f6b-bfff-95b4210ac131

@@perflab os
PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"

@@perflab lscpu
Architecture:                            x86_64
CPU(s):                                  2
On-line CPU(s) list:                     0,1
Vendor ID:                               AuthenticAMD
Model name:                              AMD EPYC
Thread(s) per core:                      1
Core(s) per socket:                      2
Socket(s):                               1
Hypervisor vendor:                       KVM
NUMA node(s):                            1
NUMA node0 CPU(s):                       0,1

@@perflab nproc
2

@@perflab microcode
microcode	: 0x1000065

@@perflab governor
performance

@@perflab cpufreq_driver
acpi-cpufreq

@@perflab boost
1

@@perflab no_turbo

@@perflab smt
notsupported

@@perflab isolated


@@perflab vulnerabilities
/sys/devices/system/cpu/vulnerabilities/meltdown:Not affected
/sys/devices/system/cpu/vulnerabilities/spectre_v2:Mitigation: Retpolines; IBPB: conditional

@@perflab thp
always [madvise] never

@@perflab clocksource
tsc

@@perflab meminfo
MemTotal:       24683656 kB
SwapTotal:             0 kB
HugePages_Total:       0
Hugepagesize:       2048 kB

@@perflab uptime
1173.29 1469.54

@@perflab loadavg
2.13 1.12 0.64 9/151 3136

@@perflab link:eth0
[{"ifindex":2,"ifname":"eth0","mtu":1500,"qdisc":"tbf","operstate":"UP","txqlen":1000,"linkinfo":{"info_kind":"veth"},"num_tx_queues":2,"num_rx_queues":2}]

@@perflab speed:eth0
10000

@@perflab qdisc:eth0
[{"kind":"tbf","handle":"8001:","root":true,"refcnt":3,"options":{"rate":125000000,"burst":262125,"lat":50000}}]

@@perflab driver:eth0
../../../../bus/virtio/drivers/virtio_net

@@perflab offload:eth0
Features for eth0:
rx-checksumming: on [fixed]
tx-checksumming: on
	tx-checksum-ipv4: off [fixed]
scatter-gather: on
tcp-segmentation-offload: on
generic-receive-offload: off
large-receive-offload: off [fixed]

@@perflab link:eth9

@@perflab speed:eth9

@@perflab qdisc:eth9

@@perflab driver:eth9

@@perflab offload:eth9

@@perflab tool:iperf3
iperf 3.12 (cJSON 1.7.15)
Linux h1 6.18.44-fc-v782 #1 SMP PREEMPT_DYNAMIC @0 x86_64

@@perflab tool:stress-ng
stress-ng, version 0.15.06 (gcc 12.2.0, x86_64 Linux 6.18.44-fc-v782)

@@perflab tool:hpcc
1.5.0-3

@@perflab tool:netperf

"""


def _fp(host: str, **facts: object) -> dict:
    base = {"cpu.model": "AMD EPYC", "kernel.release": "6.1.0", "hostname": host, "net.eth0.mtu": 1500,
            "tool.iperf3": "3.12", "kernel.cmdline": f"root=UUID={host}"}
    return {"format": fp_format.FORMAT, "host": host, "facts": {**base, **facts}, "state": {}, "versions": {}}


def test_parse_reads_every_section_of_captured_output():
    body = fingerprint.parse(CAPTURED)
    facts = body["facts"]
    assert facts["hostname"] == "h1"
    assert (facts["kernel.release"], facts["kernel.arch"]) == ("6.18.44-fc-v782", "x86_64")
    assert facts["os"] == "Debian GNU/Linux 12 (bookworm)"
    assert (facts["cpu.model"], facts["cpu.count"], facts["cpu.threads_per_core"]) == ("AMD EPYC", 2, 1)
    assert (facts["cpu.governor"], facts["cpu.turbo"], facts["cpu.microcode"]) == ("performance", "on", "0x1000065")
    assert facts["cpu.isolated"] is None
    assert facts["cpu.vulnerability.spectre_v2"] == "Mitigation: Retpolines; IBPB: conditional"
    assert facts["memory.total"] == 24683656 * 1024
    assert (facts["memory.hugepages"], facts["memory.hugepage_size"]) == (0, 2048 * 1024)
    assert facts["memory.thp"] == "madvise"
    assert facts["net.eth0.mtu"] == 1500 and facts["net.eth0.speed"] == 10000
    assert facts["net.eth0.kind"] == "veth" and facts["net.eth0.driver"] == "virtio_net"
    assert facts["net.eth0.qdisc"] == 'tbf root {"burst":262125,"lat":50000,"rate":125000000}'
    assert facts["net.eth0.offload.rx-checksumming"] == "on"
    assert facts["net.eth0.offload.generic-receive-offload"] == "off"
    assert "net.eth0.offload.tx-checksum-ipv4" not in facts
    assert body["state"] == {"uptime_s": 1173.29, "load": [2.13, 1.12, 0.64]}


@pytest.mark.parametrize("boost, no_turbo, turbo", [("1", "", "on"), ("0", "", "off"), ("", "1", "off"),
                                                    ("", "0", "on"), ("", "", None)])
def test_turbo_comes_from_cpufreq_boost_or_intel_pstate(boost, no_turbo, turbo):
    text = CAPTURED.replace("@@perflab boost\n1\n", f"@@perflab boost\n{boost}\n")
    text = text.replace("@@perflab no_turbo\n", f"@@perflab no_turbo\n{no_turbo}\n")
    assert fingerprint.parse(text)["facts"]["cpu.turbo"] == turbo


def test_parse_reports_absent_interfaces_and_tools_as_none():
    body = fingerprint.parse(CAPTURED)
    assert body["facts"]["net.eth9.mtu"] is None and body["facts"]["net.eth9.qdisc"] is None
    assert body["facts"]["tool.netperf"] is None and body["versions"]["netperf"] is None


def test_parse_extracts_versions_and_keeps_banners_verbatim():
    body = fingerprint.parse(CAPTURED)
    assert body["facts"]["tool.iperf3"] == "3.12"
    assert body["facts"]["tool.stress-ng"] == "0.15.06"
    assert body["facts"]["tool.hpcc"] == "1.5.0-3"
    assert body["versions"]["iperf3"] == "iperf 3.12 (cJSON 1.7.15)"


@pytest.mark.parametrize("banner, version", [
    ("iperf version 2.1.8 (12 August 2022) pthreads", "2.1.8"),
    ("fio-3.33", "3.33"),
    ("sysbench 1.0.20 (using bundled LuaJIT 2.1.0-beta2)", "1.0.20"),
    ("sysstat version 12.6.1", "12.6.1"),
    ("ping from iputils 20221126", "20221126"),
    ("no digits here", "no digits here"),
])
def test_version_is_the_first_version_number_of_the_banner(banner, version):
    body = fingerprint.parse(f"@@perflab hostname\nh\n@@perflab uname\nr\nv\nm\n@@perflab tool:x\n{banner}\n")
    assert body["facts"]["tool.x"] == version


def test_parse_refuses_output_that_is_not_the_script():
    with pytest.raises(FingerprintError, match="expected the fingerprint script's sections"):
        fingerprint.parse("sh: 1: syntax error", source="host h9")


def test_parse_names_the_section_of_broken_link_json():
    broken = CAPTURED.replace('[{"ifindex":2', '{oops')
    with pytest.raises(FingerprintError, match="link:eth0"):
        fingerprint.parse(broken)


def test_sectioned_script_runs_in_sh_and_splits_back():
    text = fingerprint.sectioned({"a": "echo one; echo two", "b:c": "printf 'no newline'", "empty": "true"})
    out = subprocess.run(["sh", "-c", text], capture_output=True, text=True, check=True).stdout
    assert fingerprint.split_sections(out) == {"a": "one\ntwo", "b:c": "no newline", "empty": ""}


@pytest.mark.parametrize("bad", ["eth0; rm -rf /", "$(reboot)", "", "a b"])
def test_script_refuses_names_that_are_not_plain(bad):
    with pytest.raises(FingerprintError, match="expected letters"):
        fingerprint.script(interfaces=(bad,))
    with pytest.raises(FingerprintError, match="expected letters"):
        fingerprint.script(tools=(bad,))


def test_script_probes_only_the_tools_asked_for_with_their_adapters_commands():
    assert "@@perflab tool:" not in subprocess.run(["sh", "-c", fingerprint.script(("lo",))],
                                                   capture_output=True, text=True).stdout
    text = fingerprint.script(("lo",), tools=("iperf", "npb"))
    assert shlex.join(tools.get("iperf2").version_command) in text
    assert "tool:iperf2" in text and "tool:npb" not in text  # canonical name; parse-only: no probe
    assert "fio" not in text and "stress-ng" not in text
    with pytest.raises(FingerprintError, match="unknown tool 'netperf'"):
        fingerprint.script(tools=("netperf",))


def test_a_tools_version_is_the_first_line_its_version_command_prints():
    host = remote.Host(inventory.HostEntry("fpcdd", "127.0.0.1", local=True))
    fp = fingerprint.collect(host, interfaces=("lo",), tools=("dd",))
    by_hand = subprocess.run(tools.get("dd").version_command, capture_output=True, text=True, check=True)
    assert fp["versions"] == {"dd": by_hand.stdout.splitlines()[0]}
    assert fp["facts"]["tool.dd"] in by_hand.stdout.splitlines()[0]


def test_a_storage_campaign_records_the_versions_of_the_daemons_its_tool_talks_to():
    """vblade, tgt, libiscsi and nbdkit, as their Debian packages give them, for a blockproto campaign only."""
    host = remote.Host(inventory.HostEntry("fpcdaemons", "127.0.0.1", local=True))
    fp = fingerprint.collect(host, interfaces=("lo",), tools=("blockproto",))
    for daemon, (package, _) in fingerprint.DAEMONS["blockproto"].items():
        by_hand = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True)
        expected = by_hand.stdout.strip() if by_hand.returncode == 0 else None
        if expected is None and shutil.which(fingerprint.DAEMONS["blockproto"][daemon][1]):
            continue  # not a Debian package here: the program's banner, checked by the line below being set
        assert fp["facts"][f"daemon.{daemon}"] == expected, daemon
        assert fp["versions"][daemon] == expected
    assert not any(k.startswith("daemon.") for k in fingerprint.collect(host, interfaces=("lo",),
                                                                         tools=("dd",))["facts"])


def test_diff_of_identical_fingerprints_is_empty():
    assert fingerprint.diff(_fp("h1"), _fp("h1")) == []


def test_diff_reports_changed_added_and_removed_facts():
    before = _fp("h1", **{"net.eth0.mtu": 1500, "cpu.governor": "performance"})
    after = _fp("h1", **{"net.eth0.mtu": 9000, "tool.fio": "3.33"})
    diffs = fingerprint.diff(before, after)
    assert diffs == [Difference("cpu.governor", "performance", None, ("h1",)),
                     Difference("net.eth0.mtu", 1500, 9000, ("h1",)),
                     Difference("tool.fio", None, "3.33", ("h1",))]
    assert str(diffs[1]) == "h1: net.eth0.mtu changed from 1500 to 9000"
    assert str(diffs[0]) == "h1: cpu.governor changed from 'performance' to absent"


def test_diff_ignores_state():
    before, after = _fp("h1"), _fp("h1")
    before["state"], after["state"] = {"load": [0.0, 0, 0]}, {"load": [3.0, 1, 0]}
    assert fingerprint.diff(before, after) == []


def test_diff_refuses_fingerprints_of_two_hosts():
    with pytest.raises(FingerprintError, match="Use compare_hosts"):
        fingerprint.diff(_fp("h1"), _fp("h2"))


def _written_as_schema(fp: dict, version: int) -> dict:
    """``fp`` as formats 1 to 3 wrote it: the version under ``schema``."""
    return {k: v for k, v in fp.items() if k != "format"} | {"schema": version}


def test_fingerprints_of_every_accepted_format_are_compared():
    old = _written_as_schema(_fp("h1"), 1)
    shared = _fp("h1", **{"net.eth0.mtu": 9000}) | {"probe_from": "blocks/0/fingerprint-after-h1.json"}
    assert fp_format.READS == (1, 2, 3, 4) and shared["format"] == 4
    assert fingerprint.diff(old, shared) == [Difference("net.eth0.mtu", 1500, 9000, ("h1",))]
    assert fingerprint.compare_hosts({"h1": shared, "h2": _written_as_schema(_fp("h2"), 2)}) == [
        Difference("net.eth0.mtu", 9000, 1500, ("h1", "h2"))]


@pytest.mark.parametrize("record, problem", [
    ({"format": 5, "facts": {}}, r"before: host fingerprint of format 5; this perflab reads format 1 or 2 or 3 or 4\. "
                                 r"Use the perflab version that wrote it"),
    ({"facts": {}}, r"host fingerprint of format None"),
    ([1, 2], r"before: expected a host fingerprint with a 'facts' mapping; found list\. .*collect")])
def test_records_of_another_format_are_refused_with_the_way_out(record, problem):
    with pytest.raises(FormatError, match=problem):
        fingerprint.diff(record, _fp("h1"))


def test_compare_hosts_checks_only_the_match_keys():
    diffs = fingerprint.compare_hosts({"h1": _fp("h1"), "h2": _fp("h2")})
    assert diffs == []  # hostname and kernel.cmdline differ but are not in MATCH_KEYS


def test_compare_hosts_reports_each_host_against_the_first():
    fps = {"h1": _fp("h1"), "h2": _fp("h2", **{"tool.iperf3": "3.16"}),
           "h3": _fp("h3", **{"net.eth0.mtu": 9000, "cpu.model": "Xeon"})}
    diffs = fingerprint.compare_hosts(fps)
    assert diffs == [Difference("tool.iperf3", "3.12", "3.16", ("h1", "h2")),
                     Difference("cpu.model", "AMD EPYC", "Xeon", ("h1", "h3")),
                     Difference("net.eth0.mtu", 1500, 9000, ("h1", "h3"))]
    assert str(diffs[0]) == "tool.iperf3 differs between hosts: h1='3.12', h2='3.16'"


def test_compare_hosts_of_one_host_is_empty():
    assert fingerprint.compare_hosts({"h1": _fp("h1")}) == []


def test_collect_on_this_machine_without_ssh():
    host = remote.Host(inventory.HostEntry("fpclocal", "127.0.0.1", local=True))
    fp = fingerprint.collect(host, interfaces=("lo",), tools=("fio",))
    assert fp["format"] == fp_format.FORMAT and "schema" not in fp and fp["host"] == "fpclocal"
    assert fp["facts"]["cpu.count"] == os.cpu_count()
    assert fp["facts"]["net.lo.mtu"] == int(open("/sys/class/net/lo/mtu").read())
    assert json.loads(json.dumps(fp)) == fp




def test_a_later_fingerprint_reuses_the_facts_while_the_digest_holds_and_probes_again_when_it_moves(monkeypatch):
    """The digest stands for the facts: equal digests give the earlier probe's facts (saying so), and a fact
    the digest reads changing (here the clock source, as a file the digest script reads) costs a full probe."""
    host = remote.Host(inventory.HostEntry("fpdigest", "127.0.0.1", local=True))
    full = fingerprint.collect(host, interfaces=("lo",), tools=("fio",))
    assert "facts_from" not in full and len(full["digest"]) == 64
    again = fingerprint.collect(host, interfaces=("lo",), tools=("fio",), known=("blocks/0/fp-h1.json", full))
    assert again["facts_from"] == "blocks/0/fp-h1.json" and again["digest"] == full["digest"]
    assert again["facts"] == full["facts"] and again["state"]["uptime_s"] >= full["state"]["uptime_s"]
    assert fingerprint.diff(full, again) == []
    chained = fingerprint.collect(host, interfaces=("lo",), tools=("fio",), known=("blocks/1/fp-h1.json", again))
    assert chained["facts_from"] == "blocks/0/fp-h1.json", "always names the full probe"
    moved = {**full, "digest": "0" * 64}
    probed = fingerprint.collect(host, interfaces=("lo",), tools=("fio",), known=("blocks/0/fp-h1.json", moved))
    assert "facts_from" not in probed and probed["digest"] == full["digest"]


def test_the_digest_reads_what_can_change_without_a_reboot():
    out = remote.Host(inventory.HostEntry("fpd", "127.0.0.1", local=True)).run(
        fingerprint.digest_script(("lo",), ("fio",))).stdout
    sections = fingerprint.split_sections(out)
    assert open("/proc/sys/kernel/random/boot_id").read().strip() in sections["digest.kernel"]
    assert "MemTotal:" in sections["digest.memory"] and "Cpus_allowed_list:" in sections["digest.affinity"]
    assert '"ifname":"lo"' in sections["link:lo"]
    base = fingerprint.digest(out, ("lo",))
    changed = out.replace(sections["digest.memory"], sections["digest.memory"].replace("MemTotal:", "MemTotal: 1"))
    assert fingerprint.digest(changed, ("lo",)) != base
    assert fingerprint.digest(out.replace('"mtu":65536', '"mtu":1500'), ("lo",)) != base
    assert fingerprint.digest(out.replace(sections["uptime"], "1.00 2.00"), ("lo",)) == base, "state is not digested"


@pytest.mark.lab
def test_collect_on_a_lab_host(hosts):
    fp = fingerprint.collect(hosts["h1"], tools=("iperf3",))
    facts = fp["facts"]
    assert facts["hostname"] == "h1"  # the host's own UTS namespace, not this machine's
    assert (facts["net.eth0.mtu"], facts["net.eth0.kind"], facts["net.eth0.state"]) == (1500, "veth", "UP")
    local = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    assert fp["versions"]["iperf3"] == local
    assert facts["kernel.release"] == os.uname().release
    assert json.loads(json.dumps(fp)) == fp


@pytest.mark.lab
def test_an_mtu_change_between_two_fingerprints_is_reported(hosts):
    h1 = hosts["h1"]
    before = fingerprint.collect(h1, tools=())
    h1.check("ip link set eth0 mtu 1400")
    try:
        after = fingerprint.collect(h1, tools=())
        others = fingerprint.collect(hosts["h2"], tools=())
    finally:
        h1.check("ip link set eth0 mtu 1500")
    assert fingerprint.diff(before, after) == [Difference("net.eth0.mtu", 1500, 1400, ("h1",))]
    assert fingerprint.compare_hosts({"h1": after, "h2": others}) == [
        Difference("net.eth0.mtu", 1400, 1500, ("h1", "h2"))]
    assert fingerprint.compare_hosts({"h1": before, "h2": others}) == []


def test_a_storage_lab_campaign_records_the_nfs_and_zfs_daemons_its_tools_reach():
    """nfsbench's server, helpers and client library, and the zfs-fuse behind a ZFS device for fio, as their
    Debian packages give them (a library has no program to ask for a banner)."""
    script = fingerprint.script(interfaces=("lo",), tools=("nfsbench", "fio"))
    for name in ("nfs-ganesha", "nfs-ganesha-vfs", "rpcbind", "libnfs", "zfs-fuse"):
        assert f"%s\\n' daemon:{name}\n" in script, name
    assert "dpkg-query -W -f '${Version}\\n' libnfs13 ;" in script, "no banner asked of a library"
    facts = fingerprint.parse(CAPTURED + "\n@@perflab daemon:nfs-ganesha\n4.3-2\n@@perflab daemon:zfs-fuse\n0.7.0-25+b1\n")
    assert (facts["facts"]["daemon.nfs-ganesha"], facts["facts"]["daemon.zfs-fuse"]) == ("4.3-2", "0.7.0-25+b1")
    assert "ganesha.nfsd" in fingerprint.digest_script(tools=("nfsbench",))