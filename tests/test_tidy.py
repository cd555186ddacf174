"""The tidy stage: real iperf3 output becomes typed rows with units; bad samples are quarantined."""

import json
from pathlib import Path

import pandas as pd
import pytest

from perflab import store, tidy

FIXTURE = Path(__file__).parent / "fixtures/lab/iperf3-tcp-P4.json"


def meta(run_id, parallel, block, warmup=False):
    return json.dumps({"campaign": "c", "run_id": run_id, "tool": "iperf3", "cell": {"parallel": parallel},
                       "repetition": block, "warmup": warmup, "block": block, "position": 0,
                       "commands": [{"host": "h1", "started_utc": "2026-11-22T19:42:11.876Z"}]})


@pytest.fixture
def raw(tmp_path):
    s = store.RawStore(tmp_path / "raw", "c")
    s.begin({"campaign": "c", "design_digest": "d", "spec": {"factors": {"parallel": [1, 4]}}})
    s.put_sample("good", {"stdout": FIXTURE.read_text(), "stderr": "", "meta.json": meta("good", 4, 1)})
    s.put_sample("warm", {"stdout": FIXTURE.read_text(), "stderr": "", "meta.json": meta("warm", 4, 0, True)})
    s.put_sample("bad", {"stdout": '{"start": {}, "error": "unable to connect to server"}', "stderr": "",
                         "meta.json": meta("bad", 1, 2)})
    return s


def test_rows_are_typed_with_units_and_match_the_tools_own_summary(raw):
    df, quarantine = tidy.frame(raw.dir)
    doc = json.loads(FIXTURE.read_text())
    good = df[(df.run_id == "good") & (df.metric == "throughput")]
    summary = good[good["summary"]]
    assert len(summary) == 1 and len(good) > 1, "per-stream/interval rows must be detail rows"
    assert summary["value"].iloc[0] == pytest.approx(doc["end"]["sum_received"]["bits_per_second"])
    assert summary["unit"].iloc[0] == "bit/s"
    assert df["parallel"].dtype == "int64" and df["warmup"].dtype == bool
    assert str(df["started_utc"].dtype).startswith("datetime64")
    assert set(df[df.run_id == "warm"]["warmup"]) == {True}
    assert list(quarantine["run_id"]) == ["bad"]
    assert "unable to connect" in quarantine["reason"].iloc[0]


def test_write_produces_parquet_csv_quarantine_and_lineage(raw, tmp_path):
    paths = tidy.write(raw.dir, tmp_path / "processed")
    back = tidy.load(paths["parquet"])
    assert len(back) == len(pd.read_csv(paths["csv"])) > 0
    lineage = json.loads(paths["lineage"].read_text())
    assert lineage["inputs"]["manifest_sha256"] == store.sha256_file(raw.manifest)
    assert lineage["inputs"]["quarantined"] == 1


def test_altered_raw_data_is_refused(raw):
    (raw.dir / "samples/good/stdout").write_text("{}")
    with pytest.raises(tidy.TidyError, match="checksum differs"):
        tidy.frame(raw.dir)


def test_a_directory_without_campaign_is_a_clear_error(tmp_path):
    with pytest.raises(tidy.TidyError, match="no campaign.json"):
        tidy.frame(tmp_path)


def test_batches_join_into_the_same_table_as_one_batch(raw, monkeypatch):
    ping = (Path(__file__).parent / "fixtures/ping/loopback_c5.txt").read_text()
    ping_meta = json.loads(meta("ping", 1, 3)) | {"tool": "ping"}
    raw.put_sample("ping", {"stdout": ping, "stderr": "", "meta.json": json.dumps(ping_meta)})
    whole, _ = tidy.frame(raw.dir)
    monkeypatch.setattr(tidy, "BATCH_ROWS", 1)
    batched, _ = tidy.frame(raw.dir)
    assert set(whole["tool"]) == {"iperf3", "ping"} and {"stream", "seq"} <= set(whole.columns)
    pd.testing.assert_frame_equal(batched, whole, check_exact=True)
