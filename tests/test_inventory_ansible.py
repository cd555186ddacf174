"""Ansible inventories (YAML and INI) read as perflab inventories: groups, variables, ranges, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab import inventory
from perflab.inventory import HostEntry, InventoryError

EXAMPLES = Path(__file__).resolve().parents[1] / "campaigns/examples/inventories"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_yaml_and_ini_examples_name_the_same_hosts():
    yml, ini = inventory.load(EXAMPLES / "ansible.yml"), inventory.load(EXAMPLES / "ansible.ini")
    assert yml == ini and list(yml) == ["h1", "h2", "h3", "h4"]
    known = str(Path("~/.ssh/perflab_known_hosts").expanduser())
    assert yml["h1"] == HostEntry("h1", "198.18.10.11", user="bench", port=22, known_hosts=known)
    assert yml["h3"] == HostEntry("h3", "h3", user="bench", port=2222, known_hosts=known)


def test_host_vars_beat_child_groups_which_beat_parents_and_all(tmp_path):
    path = _write(tmp_path, "inv.yml", """
all:
  vars: {ansible_user: a, ansible_port: 1000, ansible_ssh_private_key_file: /k/all}
  children:
    site:
      vars: {ansible_user: site, ansible_port: 2000}
      children:
        rack:
          vars: {ansible_user: rack}
          hosts:
            n1: {ansible_user: own}
            n2:
    other:
      hosts:
        n3: {ansible_connection: local}
""")
    hosts = inventory.load(path)
    assert (hosts["n1"].user, hosts["n1"].port, hosts["n1"].key) == ("own", 2000, "/k/all")
    assert (hosts["n2"].user, hosts["n2"].port) == ("rack", 2000)
    assert (hosts["n3"].user, hosts["n3"].port, hosts["n3"].local) == ("a", 1000, True)


def test_ini_children_ports_ranges_and_quoted_values(tmp_path):
    path = _write(tmp_path, "hosts", """
# comment
[web]
node[08:10] ansible_user="deploy user"
db.example.org:5309 ansible_host=10.0.0.5

[dc:children]
web

[dc:vars]
ansible_ssh_user=ops
ansible_port=2200
""")
    hosts = inventory.load(path)
    assert list(hosts) == ["db.example.org", "node08", "node09", "node10"]
    assert hosts["node09"] == HostEntry("node09", "node09", user="deploy user", port=2200)
    assert (hosts["db.example.org"].address, hosts["db.example.org"].port) == ("10.0.0.5", 5309)


def test_perflab_inventories_still_load_as_before(tmp_path):
    entries = {"h1": HostEntry("h1", "198.18.0.11", key="/k", known_hosts="/kh")}
    inventory.dump(entries, tmp_path / "inventory.yaml")
    assert inventory.ansible_format(tmp_path / "inventory.yaml") is None
    assert inventory.load(tmp_path / "inventory.yaml") == entries


@pytest.mark.parametrize(("name", "text", "message"), [
    ("a.yml", "all:\n  hosts:\n    n1: {ansible_port: ssh}\n", r"a\.yml: host 'n1': ansible_port 'ssh' is not a port"),
    ("b.ini", "[web]\nn1 ansible_user\n", r"b\.ini:2: host 'n1': expected key=value"),
    ("c.ini", "[web:stuff]\nn1\n", r"c\.ini:1: section \[web:stuff\]"),
    ("d.yml", "a:\n  children:\n    b:\n      children:\n        a: {}\n", "form a cycle"),
    ("e.yml", "web:\n  hosts: [n1, n2]\n", r"group 'web': 'hosts' must be a mapping"),
])
def test_errors_name_the_file_line_host_and_field(tmp_path, name, text, message):
    with pytest.raises(InventoryError, match=message):
        inventory.load(_write(tmp_path, name, text))
