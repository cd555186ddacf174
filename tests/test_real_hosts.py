"""The real-hosts kit of every study: its campaigns plan, its inventory examples load, destructive campaigns
are declared and confirmed, the user's ssh configuration does not redirect a host, and the preflight's checks
for what one machine cannot give (hardware virtualization, SMT switching, a device not mounted, a URL)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import load_campaign
from perflab import campaign as campaign_mod, inventory, rehearse
from perflab.campaign import destructive
from perflab.hosts import preflight, sshconfig
from perflab.hosts.remote import Host, HostError

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ("000-cedri", "001-unnoba-ceph", "002-pfsense-neighbour", "003-openstack-opennebula", "004-aoe-iscsi")


def kit_campaigns() -> list[Path]:
    """Every campaign file under studies/*/real-hosts/ (a YAML mapping with a `campaign` key)."""
    return sorted(p for p in ROOT.glob("studies/*/real-hosts/*.yaml")
                  if isinstance(doc := yaml.safe_load(p.read_text()), dict) and "campaign" in doc)


def cli(*args: str, env: dict | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perflab.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "lib"), **(env or {})}, input=stdin, timeout=120)


@pytest.mark.parametrize("path", kit_campaigns(), ids=lambda p: p.name)
def test_every_real_hosts_campaign_plans(path):
    res = cli("plan", str(path), "--head", "0")
    assert res.returncode == 0, res.stderr
    assert "estimated duration" in res.stdout


@pytest.mark.parametrize("study", STUDIES)
def test_every_study_has_an_inventory_example_naming_every_host_of_its_campaigns(study):
    example = ROOT / "studies" / study / "real-hosts" / "inventory.example.yaml"
    entries = inventory.load(example)
    text = example.read_text()
    assert text.startswith("#") and "Roles -> machines" in text, "the example says which machine plays which role"
    for path in kit_campaigns():
        if path.parent.parent.name != study:
            continue
        missing = set(campaign_mod.load(path).involved()) - set(entries)
        assert not missing, f"{path.name} names hosts the example lacks: {missing}"
    assert f"## Study {study[:3]}:" in (ROOT / "docs/real-hosts.md").read_text(), "a walk-through per study"


def test_kernel_fio_keeps_its_lun_and_login_across_protocols_and_restarts_vblade_per_cell():
    c = campaign_mod.load(ROOT / "studies/004-aoe-iscsi/real-hosts/004-kernel-fio.yaml")
    scopes = {s.name: (s.scope, dict(s.cells)) for s in c.services}
    assert scopes["tgtd"] == ("campaign", {}) and scopes["lun"] == ("campaign", {}) and scopes["login"] == ("campaign", {})
    assert scopes["vblade"] == ("cell", {"protocol": ("aoe",)})
    assert "TARGET_IP" not in (ROOT / "studies/004-aoe-iscsi/real-hosts/004-kernel-fio.yaml").read_text()
    login = next(s for s in c.services if s.name == "login")
    assert login.start.endswith("sh {server_address}"), "the target's address comes from the inventory"



def test_kernel_fio_keeps_ssh_and_monitors_off_the_measured_storage_link():
    """The inventory's address (SSH, monitors) is a management interface; the login goes to the storage address,
    and a setup step on each host stops the run when its SSH connection arrives on the storage interface."""
    c = campaign_mod.load(ROOT / "studies/004-aoe-iscsi/real-hosts/004-kernel-fio.yaml")
    assert dict(c.links) == {"client": "storage", "server": "storage"}
    entries = inventory.load(ROOT / "studies/004-aoe-iscsi/real-hosts/inventory.example.yaml")
    for host in c.involved():
        storage = (entries[host].addresses or {}).get("storage")
        assert storage and storage != entries[host].address, host
    guards = [st for st in c.setup if "SSH_CONNECTION" in st.run and "dev eth1" in st.run]
    assert {c.host_of(st.on) for st in guards} == set(c.involved())
    for st in guards:  # the guard's own logic, on this machine: fails for an address of eth1's, passes otherwise
        script = st.run.replace("ip -o addr show dev eth1", 'echo "2: eth1    inet 198.51.100.40/24 scope global"')
        on_storage = subprocess.run(["sh", "-c", script], env={**os.environ, "SSH_CONNECTION": "192.0.2.9 5 198.51.100.40 22"})
        on_mgmt = subprocess.run(["sh", "-c", script], env={**os.environ, "SSH_CONNECTION": "192.0.2.9 5 192.0.2.40 22"})
        assert on_storage.returncode != 0 and on_mgmt.returncode == 0


RAW_WRITE = """\
campaign: raw-write
benchmark: {tool: fio, params: {rw: randwrite, runtime: 1, filename: /dev/nvme0n1}}
hosts: {client: h1}
factors: {iodepth: [1]}
scratch: [/dev/nvme0n1, /mnt/x]
"""


def test_a_campaign_writing_a_raw_device_must_say_so(tmp_path):
    undeclared = load_campaign(RAW_WRITE, tmp_path)
    assert destructive.writes(undeclared) == ["fio filename /dev/nvme0n1 (randwrite)"]
    with pytest.raises(destructive.DestructiveError, match=r"does not say so; add `destructive: true`"):
        destructive.check(undeclared)
    res = cli("plan", str(tmp_path / "c.yaml"))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "destructive" in res.stderr
    reads = load_campaign(RAW_WRITE.replace("randwrite", "randread"), tmp_path)
    assert destructive.problems(reads) == []
    mkfs = load_campaign(RAW_WRITE.replace("/dev/nvme0n1", "/mnt/x/f") + 'setup: [{on: client, run: "mkfs.ext4 -F /dev/sdb"}]\n',
                         tmp_path)
    assert destructive.writes(mkfs) == ["setup: mkfs.ext4 -F /dev/sdb"]


def test_a_destructive_campaign_runs_only_after_its_devices_are_confirmed(tmp_path):
    declared = load_campaign(RAW_WRITE + "destructive: true\ndevices: {client: [/dev/nvme0n1]}\n", tmp_path)
    destructive.confirm(declared, ["/dev/nvme0n1"])  # the flag confirms: no question, no error
    destructive.confirm(declared, [], ask=lambda prompt: "/dev/nvme0n1")
    with pytest.raises(destructive.DestructiveError, match="not confirmed"):
        destructive.confirm(declared, [], ask=lambda prompt: "yes")
    res = cli("run", str(tmp_path / "c.yaml"), "--inventory", "localhost", "--raw", str(tmp_path / "raw"), stdin="")
    assert res.returncode == 2 and "--yes-destroy /dev/nvme0n1" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "raw").exists(), "nothing ran"


def test_the_preflight_finds_a_mounted_device_a_missing_path_url_and_hardware_virtualization():
    host = Host(inventory.localhost(("me",))["me"])
    root_dev = subprocess.run(["findmnt", "-no", "SOURCE", "/"], capture_output=True, text=True).stdout.strip()
    needs = preflight.Needs(paths={"/nonexistent/perflab"}, urls={"http://127.0.0.1:9/"},
                            unmounted={"/dev/perflab-none"}, writable={"/nonexistent/perflab-w"}, kvm=True, smt=True)
    found = "\n".join(preflight.missing(host, needs))
    assert "path /nonexistent/perflab is missing" in found and "url http://127.0.0.1:9/ is missing" in found
    assert "device /dev/perflab-none is missing" in found and "writable /nonexistent/perflab-w is missing" in found
    has_vmx = " vmx " in Path("/proc/cpuinfo").read_text() or " svm " in Path("/proc/cpuinfo").read_text()
    assert ("kvm hardware is missing" in found) == (not has_vmx)
    smt = Path("/sys/devices/system/cpu/smt/control")
    assert ("smt switch is missing" in found) == (not smt.exists() or smt.read_text().strip() not in ("on", "off"))
    if root_dev.startswith("/dev/"):
        assert preflight.missing(host, preflight.Needs(unmounted={root_dev})) == [
            f"host me: device {root_dev} is mounted; it is mounted there and this destructive campaign would "
            "overwrite it; unmount it or name another device"]


def test_the_users_ssh_config_does_not_redirect_a_host_and_says_so(tmp_path, monkeypatch, caplog):
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh/config").write_text("Host 127.0.0.1\n  HostName 127.0.0.2\n  Port 2200\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    entry = inventory.HostEntry(name="server", address="127.0.0.1", port=9)
    said = sshconfig.redirect(entry)
    assert said and "127.0.0.1 to hostname 127.0.0.2, port 2200" in said and "root@127.0.0.1:9" in said
    assert sshconfig.redirect(inventory.HostEntry(name="other", address="127.0.0.3")) is None
    host = Host(entry, connect_timeout=2)
    with caplog.at_level("WARNING"), pytest.raises(HostError, match=r"root@127\.0\.0\.1:9\)"):
        host.connection()  # nothing listens on port 9: the refusal names the inventory's address, not 127.0.0.2
    assert [r.getMessage() for r in caplog.records if r.name == "perflab.hosts.sshconfig"] == [said]
    from fabric import Config, Connection

    assert Connection("127.0.0.1", config=Config()).host == "127.0.0.2", "what OpenSSH's rules would have done"
    conn = Connection("127.0.0.1", config=Config(overrides=sshconfig.FABRIC_OVERRIDES))
    assert (conn.host, conn.port) == ("127.0.0.1", 22), "perflab's Fabric settings ignore ~/.ssh/config"


def test_a_rehearsal_is_cut_short_and_never_written_under_data_raw(tmp_path):
    c = campaign_mod.load(ROOT / "studies/002-pfsense-neighbour/real-hosts/pfsense-neighbour-kvm.yaml")
    doc = rehearse.shortened_doc(c.doc)
    assert doc["benchmark"]["params"] == {"protocol": "udp", "reverse": True, "duration": 1, "interval": 1}
    assert (doc["repetitions"], doc["warmups"], doc["retries"]) == (1, 0, 0) and "timeout" not in doc
    assert c.doc["repetitions"] == 3, "the campaign itself is unchanged"
    hpcc = rehearse.shortened_doc(campaign_mod.load(ROOT / "studies/003-openstack-opennebula/real-hosts/kvm-hpcc.yaml").doc)
    assert hpcc["factors"]["n"] == [400] and hpcc["benchmark"]["params"]["n"] == 400
    block = campaign_mod.load(ROOT / "studies/004-aoe-iscsi/campaigns/004-wire-mtu.yaml")
    short = rehearse.shortened_doc(block.doc)["benchmark"]["params"]["size"]
    assert short == 16 << 20, "a size given in bytes stays a number of bytes (blockproto takes no suffix)"
    campaign_mod.load(block.source, text=json.dumps(rehearse.shortened_doc(block.doc)))  # and loads
    for root in ("data/raw", "data/raw-virtio"):
        with pytest.raises(rehearse.RehearsalError, match="never goes under data/raw"):
            rehearse.rehearse(c, {}, tmp_path / root, stream=io.StringIO())
    assert not (tmp_path / "data").exists()


def test_plan_check_says_in_one_line_when_a_host_does_not_answer_or_the_inventory_lacks_it(tmp_path):
    campaign = ROOT / "studies/001-unnoba-ceph/real-hosts/unnoba-rbd-fio-grid.yaml"
    silent = tmp_path / "hosts.yaml"
    silent.write_text("format: 1\nhosts:\n  client: {address: 127.0.0.1, port: 9, user: root}\n")  # nothing listens on 9
    res = cli("plan", str(campaign), "--check", "--inventory", str(silent), "--head", "0")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "host client (root@127.0.0.1:9): cannot connect" in res.stderr
    res = cli("plan", str(campaign), "--check", "--inventory", "localhost", "--head", "0")
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, lines
    assert lines[0].startswith("perflab plan: error: inventory localhost has no host 'client' (it has h1, h2, h3, h4)")


def test_perflab_run_rehearse_runs_each_cell_once_into_scratch_and_names_the_cells_it_skips(tmp_path):
    out = tmp_path / "dd.dat"
    (tmp_path / "c.yaml").write_text(f"""\
campaign: rehearsed
benchmark: {{tool: dd, params: {{of: {out}, count: 64, conv: fdatasync}}}}
hosts: {{client: h1}}
scratch: [{tmp_path}]
factors: {{bs: [4k, 64k]}}
repetitions: 40
requires: [{{on: client, paths: [/nonexistent/perflab], cells: {{bs: [64k]}}}}]
fingerprints: false
monitors: false
""")
    res = cli("run", str(tmp_path / "c.yaml"), "--inventory", "localhost", "--rehearse", "--raw", str(tmp_path / "s"))
    assert res.returncode == 0, res.stdout + res.stderr
    skipped = [line for line in res.stdout.splitlines() if line.startswith("rehearsal: skip cell")]
    assert skipped == ["rehearsal: skip cell bs-64k: host h1: path /nonexistent/perflab is missing; it does not "
                       "exist there; run the campaign on a host that has it (docs/real-hosts.md)"]
    raw = tmp_path / "s" / "rehearsed"
    metas = [json.loads(p.read_text()) for p in raw.glob("samples/*/meta.json")]
    assert [(m["cell"], m["warmup"]) for m in metas] == [({"bs": "4k"}, False)], "one sample of the cell it can run"
    record = json.loads((raw / "campaign.json").read_text())
    assert record["spec"]["rehearsal"]["evidence"] is False and record["spec"]["repetitions"] == 1
    assert record["spec"]["benchmark"]["params"]["count"] == 3, "the shortest length"


def test_a_rehearsal_catches_a_step_on_a_role_of_a_grouped_campaign(tmp_path):
    """The broken kvm-iozone.yaml of before: its setup named role `client`, which only the groups define."""
    path = ROOT / "studies/003-openstack-opennebula/real-hosts/kvm-iozone.yaml"
    doc = {**campaign_mod.load(path).doc, "setup": [{"on": "client", "run": "true"}]}
    broken = campaign_mod.load(path, text=json.dumps(doc))
    entries = {n: inventory.HostEntry(name=n, address="127.0.0.1") for n in ("native", "gsa", "gsb")}
    with pytest.raises(rehearse.RehearsalError, match=r"hosts client are not in the inventory \(it has gsa, gsb, "
                                                      r"native\)"):
        rehearse.rehearse(broken, entries, tmp_path / "scratch", stream=io.StringIO())
    assert "client" not in campaign_mod.load(path).involved(), "the kit's file names no such host"
