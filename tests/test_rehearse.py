"""Every real-hosts campaign rehearsed on one lab that provides its roles: what the lab can do runs once,
into scratch, marked as not evidence; every cell that needs what the lab lacks (kernel modules, hardware
virtualization, an SMT switch, a pfSense guest, the target's disk) is named by the preflight and skipped,
one line each."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from helpers import ROOT_ONLY, lab_entries
from perflab import campaign as campaign_mod, rehearse
from test_real_hosts import kit_campaigns

pytestmark = [ROOT_ONLY, pytest.mark.lab]

#: One host per inventory name the kit's campaigns use, all on one link.
NAMES = ("client", "server", "firewall", "neighbour", "peer", "hypervisor", "native", "gsa", "gsb", "srv0", "srv1",
         "srv2", "initiator", "target", "virtual")
LAB = "format: 1\nlab: {name}\nlinks:\n  lan: {{mtu: 1500}}\nhosts:\n" + "".join(f"  {n}: {{{{links: [lan]}}}}\n" for n in NAMES)


@pytest.fixture(scope="module")
def entries():
    """The inventory of a lab playing every real host, named after this test process, removed at the end."""
    with lab_entries("r", LAB) as found:
        yield found


@pytest.mark.parametrize("path", kit_campaigns(), ids=lambda p: p.name)
def test_every_real_hosts_campaign_rehearses_on_a_lab_playing_its_hosts(path, entries, tmp_path):
    campaign = campaign_mod.load(path)
    out = io.StringIO()
    done = rehearse.rehearse(campaign, entries, tmp_path, stream=out)
    lines = out.getvalue().splitlines()
    skips = [line for line in lines if line.startswith("rehearsal: skip cell ")]
    cells = campaign.cells()
    assert len(skips) == len(done.skipped), "one line per skipped cell"
    for slug, problems in done.skipped.items():
        assert problems and all(p.startswith("host ") and "\n" not in p for p in problems), slug
    if done.campaign is None:
        assert len(done.skipped) == len(cells) and lines[-1].endswith("every cell skipped; nothing ran")
        return
    assert done.complete, out.getvalue()
    raw = tmp_path / campaign.name
    record = json.loads((raw / "campaign.json").read_text())
    assert record["spec"]["rehearsal"]["evidence"] is False and record["spec"]["rehearsal"]["of"] == str(path)
    samples = sorted(raw.glob("samples/*/meta.json"))
    groups = max(1, len(campaign.groups))
    assert len(samples) == (len(cells) - len(done.skipped)) * groups, "every cell the lab can run, once per group"
    assert all(not json.loads(p.read_text())["warmup"] for p in samples)


def test_the_lab_lacks_what_the_kit_needs_and_the_rehearsal_says_which_cells(entries, tmp_path):
    """The kernel initiators' cells are skipped per protocol, each for its own module."""
    campaign = campaign_mod.load(Path(__file__).resolve().parents[1] / "studies/004-aoe-iscsi/real-hosts/004-kernel-fio.yaml")
    done = rehearse.rehearse(campaign, entries, tmp_path, stream=io.StringIO())
    assert done.campaign is None and len(done.skipped) == 32
    aoe = [p for slug, p in done.skipped.items() if slug.startswith("protocol-aoe")]
    iscsi = [p for slug, p in done.skipped.items() if slug.startswith("protocol-iscsi")]
    assert all(any("module aoe is missing" in x for x in p) and not any("iscsi_tcp" in x for x in p) for p in aoe)
    assert all(any("module iscsi_tcp is missing" in x for x in p) and not any("module aoe " in x for x in p)
               for p in iscsi)
    assert all(any("device /dev/sdb is missing" in x for x in p) for p in aoe + iscsi), "the target's disk"
