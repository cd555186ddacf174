"""Security on the lab: strict host keys, values that never become shell, raw bytes kept verbatim."""

from __future__ import annotations

import dataclasses
import os
import shlex

import pytest

from helpers import ROOT_ONLY
from perflab import inventory
from perflab.hosts import remote

pytestmark = [ROOT_ONLY, pytest.mark.lab]


def _host_with(entry: inventory.HostEntry, **changes) -> remote.Host:
    return remote.Host(dataclasses.replace(entry, **changes))


def _pub(lab, name: str) -> list[str]:
    return (lab.state_dir / name / "ssh_host_ed25519_key.pub").read_text().split()


def test_a_wrong_key_in_known_hosts_is_refused_with_the_ssh_keygen_fix(lab, lab_inventory, tmp_path):
    entry = lab_inventory["h1"]
    key_type, key = _pub(lab, "h2")[:2]
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"{entry.address} {key_type} {key}\n")
    host = _host_with(entry, known_hosts=str(wrong))
    with pytest.raises(remote.HostError, match="host key changed") as err:
        host.run("true")
    assert f"ssh-keygen -f {wrong} -R {entry.address}" in str(err.value)
    assert "\n" not in str(err.value)
    # accept-new never replaces a changed key
    with pytest.raises(remote.HostError, match="host key changed"):
        _host_with(entry, known_hosts=str(wrong), accept_new_host_keys=True).run("true")


def test_a_host_absent_from_known_hosts_is_refused_with_the_ssh_keyscan_fix(lab_inventory, tmp_path):
    entry = lab_inventory["h1"]
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(remote.HostError, match="cannot connect: no host key") as err:
        _host_with(entry, known_hosts=str(empty)).run("true")
    assert f"ssh-keyscan -p 22 {entry.address} >> {empty}" in str(err.value)
    assert empty.read_text() == ""


def test_without_an_inventory_file_the_users_known_hosts_is_checked(lab, lab_inventory, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    entry = dataclasses.replace(lab_inventory["h1"], known_hosts=None)
    with pytest.raises(remote.HostError, match="no host key"):
        remote.Host(entry).run("true")
    key_type, key = _pub(lab, "h2")[:2]
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "known_hosts").write_text(f"{entry.address} {key_type} {key}\n")
    with pytest.raises(remote.HostError, match="host key changed"):
        remote.Host(entry).run("true")


def test_accepting_new_keys_is_an_explicit_recorded_opt_in(lab_inventory, tmp_path):
    entry = lab_inventory["h1"]
    known = tmp_path / "known_hosts"
    host = _host_with(entry, known_hosts=str(known), accept_new_host_keys=True)
    assert host.run("hostname").stdout.strip() == "h1"
    assert host.host_key["accepted_new"] is True and host.host_key["policy"] == "accept-new"
    assert known.read_text().startswith(f"{entry.address} ssh-ed25519 ")
    host.close()
    strict = _host_with(entry, known_hosts=str(known))
    assert strict.run("true").ok  # the appended key now passes strict checking
    assert strict.host_key["accepted_new"] is False and strict.host_key["policy"] == "strict"
    assert strict.host_key["key"].startswith("ssh-ed25519 SHA256:")
    strict.close()


def test_an_inventory_flag_must_be_a_boolean(tmp_path):
    path = tmp_path / "inv.yml"
    path.write_text("format: 1\nhosts:\n  h1: {address: 198.18.0.11, accept_new_host_keys: 'yes'}\n")
    with pytest.raises(inventory.InventoryError, match="accept_new_host_keys: expected true or false"):
        inventory.load(path)


def test_non_utf8_output_is_returned_byte_for_byte(hosts):
    res = hosts["h1"].run("printf '\\377\\376ok\\n'; printf '\\200' >&2")
    assert res.out == b"\xff\xfeok\n" and res.err == b"\x80"
    assert res.stdout == "\ufffd\ufffdok\n"  # decoded only for parsers


def test_local_hosts_return_bytes_too():
    host = remote.Host(inventory.localhost()["h1"])
    res = host.run("printf '\\377\\376'; exit 3")
    assert (res.out, res.exit_code) == (b"\xff\xfe", 3)


def test_canary_values_never_run_as_shell_on_a_lab_host(hosts, tmp_path):
    from perflab import tools
    from perflab.campaign import values as campaign_values
    host = hosts["h2"]
    canary = f"/tmp/canary-{os.getpid()}"
    payloads = [f"1; touch {canary}", f"$(touch {canary})", f"x' `touch {canary}` '"]
    iperf3 = tools.get("iperf3")
    lines = [iperf3.ready({"port": p}, {"client": "198.18.0.1", "server": "198.18.0.1"}) for p in payloads]
    lines += [c.line().replace("iperf3 ", "true ", 1) for p in payloads
              for c in iperf3.commands({"port": p, "duration": 1}, {"client": "198.18.0.1", "server": "198.18.0.1"})]
    for p in payloads:  # a value outside the safe alphabet never reaches a template
        with pytest.raises(ValueError, match="not a safe command-line token"):
            campaign_values.fill("echo {x}", {"x": p})
    for line in lines:
        host.run(line, timeout=10)
    assert host.run(f"test -e {canary}").exit_code == 1, "a value ran as shell on the host"
    # the unsafe form is really unsafe (so the check above could fail)
    host.run("sh -c 'echo {x}'".replace("{x}", shlex.quote(payloads[0])), timeout=10)
    assert host.run(f"test -e {canary} && rm {canary}").ok
