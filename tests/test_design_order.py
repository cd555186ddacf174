"""The RMIT order for a seed never changes: committed campaigns' schedules and ledgers pin it."""

import json
from pathlib import Path

import pytest

from perflab.campaign import design

ROOT = Path(__file__).resolve().parents[1]
#: Committed RMIT campaigns: their campaign.json holds the seed and the planned order, their ledger the order run.
CAMPAIGNS = ("004-confirm-protocols", "004-confirm-mtu", "004-confirm-macro", "unnoba-confirm-grid",
             "unnoba-confirm-bs", "pfsense-calibrate", "pfsense-confirm-64", "pfsense-confirm-512-1518",
             "pfsense-confirm-8192", "pfsense-confirm-ping")


@pytest.mark.parametrize("name", CAMPAIGNS)
def test_planned_order_of_a_committed_campaign_is_its_recorded_schedule_and_ledger(name):
    raw = ROOT / "data/raw" / name
    record = json.loads((raw / "campaign.json").read_text())
    doc = record["spec"]
    assert doc.get("design", "rmit") == "rmit" and isinstance(doc["seed"], int)  # rmit: the schema's default
    planned = design.planned(doc, record["source"])
    assert planned == record["schedule"]
    ledger = [json.loads(line)["run_id"] for line in (raw / "ledger.jsonl").read_text().splitlines()]
    assert list(dict.fromkeys(ledger)) == planned


def test_the_shuffle_is_numpys_permutation_for_any_seed_block_and_size():
    np = pytest.importorskip("numpy")
    for seed in (0, 1, 2017, 3003, 20261123, 2**31 - 1, 2**32 + 5, 2**70 + 3):
        for block in (0, 1, 7, 2**33):
            for n in (0, 1, 2, 3, 8, 13, 64, 300):
                expected = [int(i) for i in np.random.default_rng([seed, block]).permutation(n)]
                assert design.permutation([seed, block], n) == expected, (seed, block, n)
