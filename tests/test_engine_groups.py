"""Parallel host groups: spec checks, plan and run ids, and concurrent runs with resume on the lab."""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from helpers import ROOT_ONLY, load_campaign
from perflab import campaign as campaign_mod, runner, store, tidy
from perflab.campaign import design
from perflab.ledger import Ledger

GROUPS = """\
campaign: groups
benchmark: {tool: probe}
groups: [{client: h1}, {client: h2}]
factors: {cmd: ["sleep 0.5; echo 1", "sleep 0.5; echo 2"]}
repetitions: 2
warmups: 0
seed: 5
monitors: false
fingerprints: false
programs: [cmd]
"""

PING = """\
campaign: pings
benchmark: {tool: ping, params: {count: 1}}
hosts: {neighbour: h9}
%s
parallel_groups: 2
factors: {size: [56, 1000]}
repetitions: 3
warmups: 1
seed: 4
monitors: false
fingerprints: false
"""
THREE = "groups: [{client: h1, server: h2}, {client: h3, server: h4}, {client: h5, server: h6}]"
PING %= THREE


def problems(text: str) -> list[str]:
    with pytest.raises(campaign_mod.SpecError) as info:
        campaign_mod.load("c.yaml", text=text)
    return info.value.problems


def test_groups_suffix_run_ids_keep_the_order_and_leave_campaigns_without_groups_alone(tmp_path):
    c = load_campaign(PING, tmp_path)
    plain = load_campaign(PING.replace("parallel_groups: 2\n", "").replace("hosts: {neighbour: h9}\n", "").replace(
        THREE, "hosts: {client: h1, server: h2}"), tmp_path)
    base = design.schedule(plain)
    runs = design.schedule(c)
    assert [r.group for r in base] == [None] * 8
    assert len(runs) == 3 * 8 and len({r.run_id for r in runs}) == 24
    for k in range(3):
        mine = [r for r in runs if r.group == k]
        assert [r.run_id for r in mine] == [f"{r.run_id}-g{k}" for r in base]
        place = [(r.cell.index, r.block, r.position) for r in base]
        assert [(r.cell.index, r.block, r.position) for r in mine] == place
    assert c.involved() == ["h1", "h2", "h3", "h4", "h5", "h6", "h9"]
    assert c.for_group(1).hosts == {"neighbour": "h9", "client": "h3", "server": "h4"}
    assert c.for_group(1).involved() == ["h3", "h4", "h9"]


def test_plan_counts_samples_over_groups_and_divides_time_by_the_pool(probe, tmp_path):
    c = load_campaign(PING, tmp_path)
    one = load_campaign(PING.replace("parallel_groups: 2\n", "").replace(THREE, "groups: [{client: h1, server: h2}]"), tmp_path)
    info, single = runner.plan(c), runner.plan(one)
    assert (info["samples"], single["samples"]) == (24, 8)
    assert (info["parallel_groups"], single["parallel_groups"]) == (2, 1)
    assert info["estimated_seconds"] == pytest.approx(3 * single["estimated_seconds"] / 2, abs=0.1)
    assert "groups" not in runner.plan(load_campaign(GROUPS.replace("groups: [{client: h1}, {client: h2}]",
                                                                     "hosts: {client: h1}"), tmp_path))


def test_spec_rejects_overlapping_and_incomplete_groups(probe, tmp_path):
    found = problems(PING.replace("{client: h3, server: h4}", "{client: h3, server: h1}"))
    assert found == ["c.yaml:4: groups.1.server: host 'h1' is already in group 0; groups must use disjoint hosts "
                     "(independent groups), so give each group its own hosts"]
    found = problems(PING.replace("{client: h5, server: h6}", "{client: h5}"))
    assert found == ["c.yaml:4: groups.2: incomplete group: expected roles client, server; missing server; "
                     "add e.g. `server: h1` to it"]
    found = problems(PING.replace("{client: h1, server: h2}, ", "{client: h1, server: h2, extra: h7}, "))
    assert found == ["c.yaml:4: groups.1: incomplete group: expected roles client, extra, server; missing extra; "
                     "add e.g. `extra: h1` to it",
                     "c.yaml:4: groups.2: incomplete group: expected roles client, extra, server; missing extra; "
                     "add e.g. `extra: h1` to it"]
    found = problems(GROUPS.replace("groups: [{client: h1}, {client: h2}]", "hosts: {client: h1}\nparallel_groups: 2"))
    assert found == ["c.yaml:4: parallel_groups: only applies with groups; add groups or remove "
                     "parallel_groups"]
    assert problems(GROUPS.replace("groups: [{client: h1}, {client: h2}]", "parallel_groups: 0"))[0] \
        .startswith("c.yaml:3: parallel_groups: 0 is less than the minimum of 1")


def metas(raw: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((raw / "samples").glob("*/meta.json"))]


@ROOT_ONLY
@pytest.mark.lab
def test_groups_run_concurrently_store_every_run_once_and_resume_exactly(probe, lab_inventory, tmp_path):
    c = load_campaign(GROUPS, tmp_path)
    raw = tmp_path / "raw"
    planned = [r.run_id for r in design.schedule(c)]
    first = runner.run(c, lab_inventory, raw, stream=open(os.devnull, "w"), limit=2)
    assert (first.done, first.complete) == (4, False)
    assert Counter(m["group"] for m in metas(first.raw_dir)) == {0: 2, 1: 2}
    summary = runner.run(c, lab_inventory, raw, stream=open(os.devnull, "w"))
    assert summary.complete and (summary.already_done, summary.done, summary.failed) == (4, 4, [])
    found = metas(summary.raw_dir)
    assert sorted(m["run_id"] for m in found) == sorted(planned)
    for m in found:
        assert m["run_id"].endswith(f"-g{m['group']}")
        assert m["group_hosts"] == {"client": f"h{m['group'] + 1}"} == m["roles"]
        assert m["commands"][0]["host"] == f"h{m['group'] + 1}"
    done = Counter(e.run_id for e in Ledger(summary.raw_dir / "ledger.jsonl").events() if e.state == "done")
    assert done == Counter(planned)
    assert store.verify(summary.raw_dir) == []
    spans = {k: [(m["commands"][0]["started"], m["commands"][0]["ended"]) for m in found
                 if m["group"] == k and m["repetition"] == 1] for k in (0, 1)}
    assert any(s0 < e1 and s1 < e0 for s0, e0 in spans[0] for s1, e1 in spans[1]), spans
    df, quarantine = tidy.frame(summary.raw_dir)
    assert quarantine.empty and list(df.columns[7:10]) == ["host", "group", "started_utc"]
    assert sorted(df["group"].tolist()) == [0] * 4 + [1] * 4


@ROOT_ONLY
@pytest.mark.lab
def test_a_group_whose_host_is_gone_stops_alone_and_is_reported(probe, lab_inventory, tmp_path):
    c = load_campaign(GROUPS.replace("{client: h2}", "{client: gone}"), tmp_path)
    entries = {**lab_inventory, "gone": dataclasses.replace(lab_inventory["h2"], name="gone", port=1)}
    with pytest.raises(runner.RunnerError, match=r"^group 1: host gone .*cannot connect.*rerun the same command"):
        runner.run(c, entries, tmp_path / "raw", stream=open(os.devnull, "w"))
    found = metas(tmp_path / "raw" / "groups")
    assert sorted(m["run_id"] for m in found) == sorted(r.run_id for r in design.schedule(c) if r.group == 0)
