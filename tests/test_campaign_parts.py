"""Several measured clients at once, ordered phases within a sample, and verified setup steps, on a real lab.

Each example campaign of campaigns/examples/ runs shortened (one repetition, 1 s samples) on
one lab brought up here: h1 and h2 on a standard link and a jumbo link (h1 with a scratch ext4
device), h3 and h4 on the standard link.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import ROOT_ONLY, lab_entries
from perflab import campaign as campaign_mod, runner, store, tidy
from perflab.formats import records

pytestmark = [ROOT_ONLY, pytest.mark.lab]

ROOT = Path(__file__).resolve().parents[1]
LAB = """\
format: 1
lab: {name}
links:
  lan: {{mtu: 1500}}
  jumbo: {{mtu: 9000}}
hosts:
  h1: {{links: [lan, jumbo], devices: {{data: {{size: 128M, fs: ext4}}}}}}
  h2: {{links: [lan, jumbo]}}
  h3: {{links: [lan]}}
  h4: {{links: [lan]}}
"""


@pytest.fixture(scope="module")
def entries():
    """The inventory of a four-host lab named after this test process, removed (and checked gone) at the end."""
    with lab_entries("p", LAB) as found:
        yield found


def shortened(example: str, tmp_path: Path, **changes) -> campaign_mod.Campaign:
    """An example campaign with one repetition, no warm-up and ``changes`` (top-level fields), loaded from a copy
    (written as JSON, which is YAML)."""
    doc = {**campaign_mod.load(ROOT / "campaigns/examples" / example).doc, "repetitions": 1, "warmups": 0,
           "fingerprints": False, **changes}
    path = tmp_path / example
    path.write_text(json.dumps(doc, indent=1))
    return campaign_mod.load(path)


def metas(raw: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(raw.glob("samples/*/meta.json"))]


def test_three_clients_run_at_once_each_kept_and_summed(entries, tmp_path):
    campaign = shortened("concurrent-clients.yaml", tmp_path, benchmark={"tool": "iperf3", "params": {"duration": 1}})
    assert runner.run(campaign, entries, tmp_path, stream=open(os.devnull, "w")).complete
    raw = tmp_path / "concurrent-clients"
    for meta in metas(raw):
        sample = raw / "samples" / meta["run_id"]
        assert [c["host"] for c in meta["commands"]] == ["h1", "h3", "h4"]
        assert [c["stdout"] for c in meta["commands"]] == ["stdout", "stdout@h3", "stdout@h4"]
        assert max(c["started"] for c in meta["commands"]) < min(c["ended"] for c in meta["commands"]), \
            "the three clients ran at the same time"
        seen = {}
        for c in meta["commands"]:
            out = json.loads((sample / c["stdout"]).read_text())
            seen[c["host"]] = (out["start"]["connected"][0]["local_host"], out["start"]["connecting_to"]["port"])
        assert seen == {"h1": (entries["h1"].address, 5201), "h3": (entries["h3"].address, 5202),
                        "h4": (entries["h4"].address, 5203)}
    df, quarantine = tidy.frame(raw)
    assert quarantine.empty
    total = df[(df["metric"] == "throughput") & df["summary"]]
    assert sorted(total["host"].unique()) == ["all", "h1", "h3", "h4"]
    for _run_id, rows in total.groupby("run_id"):
        parts = rows[rows["host"] != "all"]["value"]
        assert len(parts) == 3 and (parts > 0).all()
        assert rows[rows["host"] == "all"]["value"].item() == pytest.approx(parts.sum(), rel=1e-12)
    assert not ((df["metric"].isin(["cpu_client", "cpu_server"])) & (df["host"] == "all")).any(), \
        "percentages are never summed"
    cpu = df[(df["tool"] == "cgroup") & (df["metric"] == "cpu_seconds")]
    assert sorted(cpu["host"].unique()) == ["h1", "h2", "h3", "h4"] and (cpu["value"] > 0).all(), \
        "every client's own CPU time, and the server's"


def test_phases_run_in_order_within_a_sample(entries, tmp_path):
    params = {**campaign_mod.load(ROOT / "campaigns/examples/write-then-read.yaml").params, "runtime": 1, "size": "16M"}
    campaign = shortened("write-then-read.yaml", tmp_path, factors={"bs": ["128k"]},
                         benchmark={"tool": "fio", "params": params})
    assert runner.run(campaign, entries, tmp_path, stream=open(os.devnull, "w")).complete
    raw = tmp_path / "write-then-read"
    [meta] = metas(raw)
    write, read = meta["commands"]
    assert (write["phase"], write["stdout"], read["phase"], read["stdout"]) == ("write", "stdout", "read", "stdout+read")
    assert write["ended"] <= read["started"], "the read phase started after the write phase ended"
    sample = raw / "samples" / meta["run_id"]
    jobs = {c["phase"]: json.loads((sample / c["stdout"]).read_text())["jobs"][0] for c in meta["commands"]}
    assert jobs["write"]["write"]["io_bytes"] > 0 and jobs["write"]["read"]["io_bytes"] == 0
    assert jobs["read"]["read"]["io_bytes"] > 0 and jobs["read"]["write"]["io_bytes"] == 0
    check = records.read_verify(raw / meta["verified"]).checks[0]
    assert check["exit_code"] == 0 and check["stdout"].split()[0] == "ext4", check
    df, _ = tidy.frame(raw)
    iops = df[(df["metric"] == "iops") & (df["tool"] == "fio") & df["job"].isna()]
    assert sorted(zip(iops["phase"], iops["direction"])) == [("read", "read"), ("write", "write")]


def test_a_verified_setup_is_recorded_and_one_that_did_not_take_effect_stops_the_run(entries, tmp_path):
    good = shortened("verified-mtu.yaml", tmp_path, benchmark={"tool": "ping", "params": {"count": 3, "interval": 0.2}},
                     monitors=False)
    assert runner.run(good, entries, tmp_path / "good", stream=open(os.devnull, "w")).complete
    raw = tmp_path / "good/verified-mtu"
    for meta in metas(raw):
        record = records.read_verify(raw / meta["verified"])
        mtu = meta["cell"]["mtu"]
        assert [(c["host"], c["exit_code"]) for c in record.checks] == [("h1", 0), ("h2", 0)]
        assert all(c["verify"].endswith(f"-eq {mtu}") for c in record.checks)
        out = (raw / "samples" / meta["run_id"] / "stdout").read_text()
        assert f"{mtu - 28}(" in out and " 0% packet loss" in out  # the largest unfragmented payload went through

    setup = [{**step, "run": "ip link show dev eth1"} if i == 0 else step for i, step in enumerate(good.doc["setup"])]
    bad = shortened("verified-mtu.yaml", tmp_path, setup=setup, benchmark=good.doc["benchmark"], monitors=False)
    with pytest.raises(runner.RunnerError) as caught:
        runner.run(bad, entries, tmp_path / "bad", stream=open(os.devnull, "w"))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{bad.source}: setup[0] did not take effect on host h1 (cell mtu-1500")
    assert "`test \"$(cat /sys/class/net/eth1/mtu)\" -eq 1500` exited 1" in message
    raw = tmp_path / "bad/verified-mtu"
    [failed] = [records.read_verify(p) for p in raw.glob("verify/*.json")
                if records.read_verify(p).checks[-1]["exit_code"] != 0]
    assert failed.levels == {"mtu": 1500} and failed.checks[-1]["host"] == "h1"
    assert failed.checks[-1]["verify"] in message
    assert store.verify(raw) == []
