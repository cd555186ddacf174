"""`perflab plan --check` against lab hosts whose key changed, is revoked, or whose sshd is gone: one line each."""

from __future__ import annotations

import pytest
import yaml

from helpers import ROOT_ONLY
from perflab import cli

pytestmark = [ROOT_ONLY, pytest.mark.lab]

CAMPAIGN = "studies/iperf3-streams/campaigns/iperf3-streams.yaml"
OTHER_KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


def _inventory(lab, tmp_path, known_hosts: str, address: dict[str, str] | None = None) -> str:
    """A copy of the lab's inventory whose hosts use ``known_hosts`` (and other addresses, when given)."""
    doc = yaml.safe_load(lab.inventory_path.read_text())
    (tmp_path / "known_hosts").write_text(known_hosts)
    for name, entry in doc["hosts"].items():
        entry["known_hosts"] = str(tmp_path / "known_hosts")
        entry["address"] = (address or {}).get(name, entry["address"])
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _check(inventory: str, capsys) -> str:
    code = cli.main(["plan", CAMPAIGN, "--check", "--inventory", inventory, "--head", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("perflab plan: error: host h"), err
    return err[0]


def test_a_changed_host_key_refuses_the_host_in_one_line(lab, tmp_path, capsys):
    known = "".join(f"{h.address} ssh-ed25519 {OTHER_KEY}\n" for h in lab.hosts)
    line = _check(_inventory(lab, tmp_path, known), capsys)
    assert "the host key changed" in line and "ssh-keygen -f" in line


def test_a_revoked_host_key_refuses_the_host_in_one_line(lab, tmp_path, capsys):
    known = lab.known_hosts.read_text()
    key = known.split()[1:3]
    line = _check(_inventory(lab, tmp_path, known + f"@revoked * {key[0]} {key[1]}\n"), capsys)
    assert "marks @revoked; the host is refused" in line


def test_a_host_that_does_not_answer_is_one_line(lab, tmp_path, capsys):
    # an address of the lab's link that no host has: nothing answers there
    unused = lab.hosts[0].address.rsplit(".", 1)[0] + ".250"
    line = _check(_inventory(lab, tmp_path, lab.known_hosts.read_text(), {"h1": unused, "h2": unused}), capsys)
    assert "cannot connect" in line and unused in line
