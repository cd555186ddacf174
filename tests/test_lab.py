"""The embedded lab on real namespaces and sshd: identity, strict host keys, MTU, rate, cleanup."""

import json
import os
import pwd
import subprocess

import pytest

from helpers import LAB_GROUP, ROOT_ONLY, leftovers
from perflab import inventory, labspec
from perflab.hosts import lab as lab_mod, remote

pytestmark = [ROOT_ONLY, pytest.mark.lab]


def test_each_host_has_its_own_hostname_address_and_sshd(lab, lab_inventory):
    with remote.connect(lab_inventory) as hosts:
        for name, host in hosts.items():
            out = host.check("hostname; ip -o -4 addr show dev eth0; cat /proc/sys/net/ipv4/ip_forward")
            assert out.splitlines()[0] == name
            assert f"inet {lab_inventory[name].address}/24" in out
    pids = {h["sshd_pid"] for h in lab_mod.status(lab.name)["hosts"]}
    assert len(pids) == 3 and None not in pids


def test_a_lab_command_does_not_start_with_the_accounts_interactive_bash_setup(lab_inventory):
    entry = lab_inventory["h1"]
    shell = pwd.getpwnam(entry.user).pw_shell
    if os.path.basename(shell) != "bash":
        pytest.skip(f"the lab's account logs in with {shell}, not bash")
    with remote.connect(lab_inventory, ["h1"]) as hosts:
        chan = hosts["h1"].connection().transport.open_session(timeout=30)
        try:
            chan.exec_command('printf %s "$SHLVL"')  # run by the login shell itself
            level = chan.makefile("rb").read().decode()
        finally:
            chan.close()
    # bash sources ~/.bashrc for a command sshd starts at level 1 (SHLVL unset or 0); the lab's sshd sets it to 1
    assert level.isdigit() and int(level) >= 2, level


def test_up_is_idempotent(lab):
    again = lab_mod.up(lab.name, 3)
    assert again == lab
    ns = lab.hosts[0].netns
    addrs = subprocess.run(["ip", "netns", "exec", ns, "ip", "-o", "-4", "addr", "show", "dev", "eth0"],
                           capture_output=True, text=True).stdout
    assert addrs.count("inet ") == 1


def test_strict_host_key_checking_refuses_a_wrong_key(lab, lab_inventory, tmp_path):
    entry = lab_inventory["h1"]
    other = (lab.state_dir / "h2" / "ssh_host_ed25519_key.pub").read_text().split()
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"{entry.address} {other[0]} {other[1]}\n")
    host = remote.Host(inventory.HostEntry("h1", entry.address, key=entry.key, known_hosts=str(wrong)))
    with pytest.raises(remote.HostError, match="cannot connect"):
        host.run("true")


def test_remote_timeout_kills_the_whole_process_group(lab_inventory):
    with remote.connect(lab_inventory, ["h1"]) as hosts:
        res = hosts["h1"].run("sh -c 'sleep 300.3 & sleep 300.3; echo never'", timeout=1)
        assert res.timed_out and "never" not in res.stdout
        assert hosts["h1"].run("pgrep -x sleep -a | grep -c 300.3").stdout.strip() == "0"


def test_services_stop_with_their_process_group(lab_inventory):
    with remote.connect(lab_inventory, ["h2"]) as hosts:
        svc = hosts["h2"].start("sleeper", "sh -c 'sleep 301.7 & sleep 302.7'")
        assert hosts["h2"].run("pgrep -x sleep -a | grep -c 30[12].7").stdout.strip() == "2"
        hosts["h2"].stop(svc)
        assert hosts["h2"].run("pgrep -x sleep -a | grep -c 30[12].7").stdout.strip() == "0"


def test_mtu_and_rate_limit_are_applied_and_down_removes_everything():
    name = f"m{os.getpid() % 100000}"
    created = lab_mod.up(name, 1, mtu=1400, rate="100mbit")
    try:
        entries = inventory.load(created.inventory_path)
        with remote.connect(entries) as hosts:
            out = hosts["h1"].check("ip -o link show dev eth0; tc qdisc show dev eth0")
        assert "mtu 1400" in out and "tbf" in out and "100Mbit" in out
    finally:
        removed = lab_mod.down(name)
    assert any(r.startswith("netns") for r in removed)
    assert leftovers(name) == []
    assert lab_mod.status(name) is None


def test_flat_lab_rejects_bad_names():
    with pytest.raises(labspec.LabFileError, match="--name: 'Bad-Name'.*lowercase"):
        labspec.simple("Bad-Name", 2)


def test_persistent_shell_frames_output_exactly(hosts):
    host = hosts["h1"]
    res = host.run("printf 'x\\n__PERFLAB_REPLY__ 9 9 9\\n'; echo err >&2; exit 7")
    assert (res.stdout, res.stderr, res.exit_code) == ("x\n__PERFLAB_REPLY__ 9 9 9\n", "err\n", 7)
    big = host.run("head -c 300000 /dev/zero | tr '\\0' a")
    assert big.stdout == "a" * 300000
    assert host.run("cat").stdout == "", "a command must not read the shell's own stdin"
    assert host.run("hostname").stdout.strip() == "h1"


def test_down_removes_a_lab_recorded_in_the_first_state_format():
    name = f"o{os.getpid() % 100000}"
    netns, veth, bridge = f"perflab-{name}-h1", f"pl{name}h1", f"plb-{name}"
    state_dir = lab_mod.STATE_ROOT / name
    state_dir.mkdir(parents=True)
    (state_dir / "state.json").write_text(json.dumps({
        "name": name, "bridge": bridge, "gateway": "198.19.255.1", "mtu": 1500, "rate": None,
        "hosts": [{"name": "h1", "netns": netns, "veth": veth, "address": "198.19.255.11"}]}))
    for argv in (["ip", "link", "add", bridge, "type", "bridge"], ["ip", "netns", "add", netns],
                 ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns],
                 ["ip", "link", "set", veth, "master", bridge]):
        subprocess.run(argv, check=True)
    with pytest.raises(lab_mod.LabError, match=f"another perflab version .* `perflab lab down --name {name}`$"):
        lab_mod.status(name)
    removed = lab_mod.down(name)
    assert removed[0] == f"netns {netns} (0 processes killed)" and f"bridge {bridge}" in removed
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    assert bridge not in links and veth not in links and not state_dir.exists()
    assert netns not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_a_new_lab_that_fails_half_way_is_removed_again(monkeypatch):
    name = f"f{os.getpid() % 100000}"
    made = []

    def sshd_fails(lab, host, cgroup_procs):
        made.append(host.name)
        raise lab_mod.LabError(f"sshd of {host.name} did not start")

    monkeypatch.setattr(lab_mod.lifecycle, "sshd_up", sshd_fails)
    with pytest.raises(lab_mod.LabError, match=r"did not start; what was made of the new lab was removed again"):
        lab_mod.up(name, 2)
    assert made and leftovers(name) == []


def test_under_loadgroup_a_lab_modules_tests_are_one_group(request):
    """``make test`` runs a lab module's tests in one process (``--dist loadgroup``), its lab brought up once: each
    carries its module's group in its id, or pytest-xdist spreads them over both processes (as under pytest 9.2)."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run by pytest-xdist with --dist loadgroup")
    assert request.node.nodeid.endswith(f"@{LAB_GROUP}{request.module.__name__}"), request.node.nodeid
