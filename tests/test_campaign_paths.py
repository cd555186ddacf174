"""A network path as a factor: the same hosts reached directly or through the lab's NAT router."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from helpers import ROOT_ONLY, leftovers
from perflab import campaign as campaign_mod, inventory, labspec, runner
from perflab.hosts import lab as lab_mod

pytestmark = [ROOT_ONLY, pytest.mark.lab]

ROOT = Path(__file__).resolve().parents[1]


def test_links_pick_the_path_per_cell_and_the_router_forwards_only_its_cells(tmp_path):
    name = f"q{os.getpid() % 100000}"
    text = (ROOT / "labs/routed.yaml").read_text().replace("lab: routed", f"lab: {name}")
    lab = lab_mod.bring_up(labspec.load(f"{name}.yaml", text=text))
    try:
        entries = inventory.load(lab.inventory_path)
        full = campaign_mod.load(ROOT / "campaigns/examples/paths.yaml")
        short = dataclasses.replace(full, repetitions=1, warmups=0, params={"duration": 1, "protocol": "tcp"},
                                    doc={**full.doc, "repetitions": 1, "warmups": 0})
        before = lab_mod.router_counters(name, "r1")
        assert runner.run(short, entries, tmp_path, stream=open(os.devnull, "w")).complete
        after = lab_mod.router_counters(name, "r1")
    finally:
        lab_mod.down(name)
    assert leftovers(name) == []
    seen = {}
    for sample in (tmp_path / "paths/samples").iterdir():
        meta = json.loads((sample / "meta.json").read_text())
        out = json.loads((sample / "stdout").read_text())
        seen[meta["cell"]["path"]] = out["start"]["connecting_to"]["host"]
    assert seen == {"direct": entries["h2"].addresses["direct"], "lan2": entries["h2"].addresses["lan2"]}
    grown = {k: after[k][1] - before.get(k, (0, 0))[1] for k in after}
    assert grown["masquerade lan2"] > 0, grown   # the lan2 cell went through r1 and was NATed
    assert grown["forwarded"] > 10 * 2**20, grown  # about a second of TCP data crossed the router


def test_a_link_the_host_is_not_on_is_refused_by_name(lab_inventory, tmp_path):
    full = campaign_mod.load(ROOT / "campaigns/examples/paths.yaml")
    flat = dataclasses.replace(full, hosts={"client": "h1", "server": "h2"}, repetitions=1, warmups=0,
                               doc={**full.doc, "requires": []})
    with pytest.raises(runner.RunnerError, match=r"links.server: host h2 has no address on link '(direct|lan2)' \(its links: lan\)"):
        runner.run(flat, lab_inventory, tmp_path, stream=open(os.devnull, "w"))
