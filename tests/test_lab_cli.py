"""`perflab lab up --file`, `lab status` and `lab down` from the command line."""

import os
from pathlib import Path

from helpers import ROOT_ONLY, leftovers
from perflab import cli
from perflab.hosts import lab as lab_mod


def test_a_bad_lab_file_exits_2_with_file_line_field(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: 1\nlab: x\nlinks: {lan: }\nhosts:\n  h1: {links: [lan], memory: lots}\n")
    assert cli.main(["lab", "up", "--file", str(bad)]) == 2
    assert f"{bad}:5: hosts.h1.memory: 'lots' does not match" in capsys.readouterr().err


def test_a_flat_lab_option_out_of_range_is_refused(capsys):
    assert cli.main(["lab", "up", "--hosts", "0", "--name", "x"]) == 2
    assert "--hosts: 0: a lab has 1 to 200 hosts" in capsys.readouterr().err


@ROOT_ONLY
def test_up_status_down_from_a_file(tmp_path, capsys):
    name = f"u{os.getpid() % 100000}"
    path = tmp_path / "lab.yaml"
    path.write_text(f"format: 1\nlab: {name}\nlinks: {{a: {{mtu: 9000}}, b: }}\nhosts:\n  x1: {{links: [a, b]}}\n  x2: {{links: [b]}}\n")
    try:
        assert cli.main(["lab", "up", "--file", str(path), "--name", "other"]) == 2
        assert "drop --name" in capsys.readouterr().err
        assert cli.main(["lab", "up", "--file", str(path), "--hosts", "3"]) == 2
        assert "--hosts: only for the flat lab" in capsys.readouterr().err
        assert cli.main(["lab", "up", "--file", str(path)]) == 0
        out = capsys.readouterr().out
        assert f"lab {name}: 2 hosts up" in out and "x1  a=198.1" in out
        assert cli.main(["lab", "status", "--name", name]) == 0
        drawing = capsys.readouterr().out
        assert f"lab {name} (from {path})" in drawing and "MTU 9000" in drawing and ": x1 -- x2" in drawing
        assert cli.main(["lab", "list"]) == 0
        assert f"lab {name} is up; remove it with: perflab lab down --name {name}" in capsys.readouterr().out
    finally:
        code = cli.main(["lab", "down", "--name", name])
    assert code == 0 and "removed bridge" in capsys.readouterr().out
    cli.main(["lab", "list"])
    assert f"lab {name} is up" not in capsys.readouterr().out
    assert leftovers(name) == []
    assert cli.main(["lab", "status", "--name", name]) == 1


@ROOT_ONLY
def test_a_labfile_inventory_brings_that_lab_up_and_uses_it(tmp_path):
    name = f"y{os.getpid() % 100000}"
    text = (Path(__file__).resolve().parents[1] / "labs/routed.yaml").read_text().replace("lab: routed", f"lab: {name}")
    (tmp_path / "lab.yaml").write_text(text)
    try:
        entries = lab_mod.resolve_inventory(f"labfile:{tmp_path / 'lab.yaml'}")
        again = lab_mod.resolve_inventory(f"labfile:{tmp_path / 'lab.yaml'}")
    finally:
        lab_mod.down(name)
    assert sorted(entries) == ["h1", "h2", "r1"] and set(entries["h2"].addresses) == {"lan2", "direct"}
    assert again["h2"].address == entries["h2"].address
    assert lab_mod.traces(name) == []
