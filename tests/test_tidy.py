"""The tidy stage: real iperf3 output becomes typed rows with units; bad samples are quarantined."""

import json
from pathlib import Path

import pandas as pd
import pytest

from helpers import campaign_record, sample_meta
from perflab import cli, store, tidy

FIXTURE = Path(__file__).parent / "fixtures/lab/iperf3-tcp-P4.json"


def meta(run_id, parallel, block, warmup=False):
    return sample_meta(run_id, {"parallel": parallel}, block, warmup=warmup)


@pytest.fixture
def raw(tmp_path):
    s = store.RawStore(tmp_path / "raw", "c")
    s.begin(campaign_record("c", {"parallel": [1, 4]}))
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
    assert "csv" not in tidy.write(raw.dir, tmp_path / "plain") and not (tmp_path / "plain/c.csv").exists(), \
        "the CSV mirror is written only on request"
    paths = tidy.write(raw.dir, tmp_path / "processed", csv=True)
    back = tidy.load(paths["parquet"])
    assert len(back) == len(pd.read_csv(paths["csv"])) > 0
    lineage = json.loads(paths["lineage"].read_text())
    assert lineage["inputs"]["manifest_sha256"] == store.sha256_file(raw.manifest)
    assert lineage["inputs"]["quarantined"] == 1


def test_each_raw_file_is_read_once_and_every_listed_file_is_checked(raw, monkeypatch):
    reads: list[str] = []
    for name in ("read_bytes", "read_text"):
        original = getattr(Path, name)
        monkeypatch.setattr(Path, name, lambda self, *a, _o=original, **k: reads.append(str(self)) or _o(self, *a, **k))
    hashed = store.sha256_file
    monkeypatch.setattr(store, "sha256_file", lambda path: reads.append(str(path)) or hashed(path))
    monkeypatch.setattr(tidy, "open", lambda path, *a, **k: reads.append(str(path)) or open(path, *a, **k),
                        raising=False)  # the raw reader opens files itself
    tidy.frame(raw.dir)
    listed = {str(raw.dir / name) for name in store.read_manifest(raw.dir)}
    inside = [r for r in reads if r in listed]
    assert set(inside) == listed, "every file the manifest lists is hashed"
    assert sorted(inside) == sorted(set(inside)), "a raw file was read twice"


def test_altered_raw_data_is_refused(raw):
    (raw.dir / "samples/good/stdout").write_text("{}")
    with pytest.raises(tidy.TidyError, match="checksum differs"):
        tidy.frame(raw.dir)


def test_a_directory_without_campaign_is_a_clear_error(tmp_path):
    with pytest.raises(tidy.TidyError, match="no campaign.json"):
        tidy.frame(tmp_path)


def _differences(block, **kinds):
    record = {"block": block, "changed": [], "between_hosts_before": [], "between_hosts_after": [],
              "since_previous_block": []}
    record.update(kinds)
    return json.dumps(record)


def test_a_host_fact_that_changed_between_blocks_is_refused_by_name(raw):
    mtu = {"key": "net.eth0.mtu", "before": 1500, "after": 9000, "hosts": ["h1"]}
    kernel = {"key": "kernel.release", "before": "6.1.0", "after": "6.12.0", "hosts": ["h1", "h2"]}
    boot = {"key": "boot_id", "before": "a", "after": "b", "hosts": ["h1"]}
    raw.put_file("blocks/0/differences.json", _differences(0, between_hosts_before=[kernel]))
    raw.put_file("blocks/1/differences.json", _differences(1, since_previous_block=[mtu, boot]))
    with pytest.raises(tidy.TidyError, match=r"h1: net.eth0.mtu changed from 1500 to 9000 \(before block 1\)"):
        tidy.check_comparable(raw.dir)
    notes = tidy.check_comparable(raw.dir, expected=("net.*.mtu",))
    assert notes == ["kernel.release differs between hosts: h1='6.1.0', h2='6.12.0'"], "boot_id is not a checked fact"
    assert len(tidy.check_comparable(raw.dir, refuse=False)) == 2
    lineage = json.loads(tidy.write(raw.dir, raw.dir.parent / "out")["lineage"].read_text())
    assert "h1: net.eth0.mtu changed from 1500 to 9000" in lineage["host_fact_differences"]
    assert lineage["planned"]["factors"] == {"parallel": [1, 4]}


def test_an_unknown_record_format_is_refused_with_the_file(raw):
    raw.put_sample("future", {"stdout": "", "stderr": "", "meta.json": json.dumps({"format": 99})})
    with pytest.raises(ValueError, match=r"samples/future/meta.json: sample record of format 99; this perflab reads "
                                         r"format 1 or 2"):
        tidy.frame(raw.dir)


def test_samples_of_emulated_and_native_hosts_are_not_compared_unless_told(tmp_path):
    s = store.RawStore(tmp_path / "raw", "c")
    s.begin(campaign_record("c", {"parallel": [1, 4]}))
    native = sample_meta("native", {"parallel": 1}, 0)
    emulated = json.loads(sample_meta("guest", {"parallel": 4}, 0))
    emulated["commands"][0]["emulated"] = True
    s.put_sample("native", {"stdout": FIXTURE.read_text(), "stderr": "", "meta.json": native})
    s.put_sample("guest", {"stdout": FIXTURE.read_text(), "stderr": "", "meta.json": json.dumps(emulated)})
    with pytest.raises(tidy.TidyError, match=r"emulated \(TCG\) hosts \(guest\) and on native ones \(native\)"):
        tidy.check_comparable(s.dir)
    assert tidy.check_comparable(s.dir, expected=("emulated",)) == []


def test_batches_join_into_the_same_table_as_one_batch(raw, monkeypatch):
    ping = (Path(__file__).parent / "fixtures/ping/loopback_c5.txt").read_text()
    ping_meta = json.loads(meta("ping", 1, 3)) | {"tool": "ping"}
    raw.put_sample("ping", {"stdout": ping, "stderr": "", "meta.json": json.dumps(ping_meta)})
    whole, _ = tidy.frame(raw.dir)
    monkeypatch.setattr(tidy, "BATCH_ROWS", 1)
    batched, _ = tidy.frame(raw.dir)
    assert set(whole["tool"]) == {"iperf3", "ping"} and {"stream", "seq"} <= set(whole.columns)
    pd.testing.assert_frame_equal(batched, whole, check_exact=True)


def test_a_campaign_parsed_in_parts_by_several_processes_gives_the_same_table(raw, monkeypatch):
    ping = (Path(__file__).parent / "fixtures/ping/loopback_c5.txt").read_text()
    for i in range(4):  # parts whose columns differ (iperf3's streams, ping's sequence numbers)
        ping_meta = json.loads(meta(f"ping{i}", 1, 3 + i)) | {"tool": "ping"}
        raw.put_sample(f"ping{i}", {"stdout": ping, "stderr": "", "meta.json": json.dumps(ping_meta)})
    one, quarantined_one = tidy.frame(raw.dir, workers=1)
    hashed = store.sha256_file
    rehashed: list[str] = []
    monkeypatch.setattr(store, "sha256_file", lambda path: rehashed.append(str(path)) or hashed(path))
    here: list[str] = []  # the samples parsed in this process (a worker process has the original function)
    samples = tidy._samples
    monkeypatch.setattr(tidy, "_samples", lambda raw_dir, reader, factors, names: here.extend(names) or samples(
        raw_dir, reader, factors, names))
    parts, quarantined_parts = tidy.frame(raw.dir, workers=3)
    assert 0 < len(here) < len(one["run_id"].unique()) + len(quarantined_one), "the first parts were parsed elsewhere"
    assert set(one["tool"]) == {"iperf3", "ping"}
    pd.testing.assert_frame_equal(parts, one, check_exact=True)
    pd.testing.assert_frame_equal(quarantined_parts, quarantined_one, check_exact=True)
    assert not [p for p in rehashed if "/samples/" in p], "the workers' digests served the manifest check"


def test_an_error_in_a_worker_is_raised_as_itself_and_altered_data_is_refused(raw):
    raw.put_sample("a-future", {"stdout": "", "stderr": "", "meta.json": json.dumps({"format": 99})})
    with pytest.raises(ValueError, match=r"samples/a-future/meta.json: sample record of format 99"):
        tidy.frame(raw.dir, workers=2)  # the first part's, parsed in a worker process
    (raw.dir / "samples/a-future/meta.json").write_text("{}")
    with pytest.raises(tidy.TidyError, match="checksum differs"):
        tidy.frame(raw.dir, workers=2)


def _monitored_sample(tmp_path: Path, name: str, data: bytes) -> Path:
    """A sample directory under ``tmp_path/c`` whose ``monitors/`` holds one file ``name`` with ``data``."""
    target = tmp_path / "c/samples/r1/monitors" / name
    target.parent.mkdir(parents=True)
    target.write_bytes(data)
    return tmp_path / "c/samples/r1"


SAR = (Path(__file__).parent / "fixtures/sysstat/sadf_u_all_q_dev_d.json").read_text()


def _rows(sample: Path, base: Path) -> tuple[list, list]:
    batch, quarantine = tidy._Batch(), []
    tidy.monitor_rows(batch, sample, base, {"run_id": "r1"}, quarantine)
    return batch.columns.get("value", []), quarantine


def test_every_stored_form_of_a_monitor_file_gives_the_same_rows(tmp_path):
    """A host's archive (today's runs), a file gzipped on its own and a plain file (earlier runs)."""
    import gzip

    archive = store.pack_monitors({"monitors/h1/sar.json": SAR})["monitors/h1.tar.xz"]
    forms = {"archive": ("h1.tar.xz", archive), "gzip": ("h1/sar.json.gz", gzip.compress(SAR.encode(), mtime=0)),
             "plain": ("h1/sar.json", SAR.encode())}
    values = {}
    for form, (name, data) in forms.items():
        values[form], quarantine = _rows(_monitored_sample(tmp_path / form, name, data), tmp_path / form)  # type: ignore[arg-type]
        assert quarantine == [] and values[form], form
    assert values["archive"] == values["gzip"] == values["plain"]


@pytest.mark.parametrize("name, data, where", [
    ("h1.tar.xz", "archive", "monitors/h1.tar.xz"),
    ("h1/sar.json.gz", "gzip", "monitors/h1/sar.json.gz"),
])
def test_a_damaged_monitor_file_is_quarantined_naming_it(tmp_path, name, data, where):
    import gzip

    whole = (store.pack_monitors({"monitors/h1/sar.json": SAR})["monitors/h1.tar.xz"] if data == "archive"
             else gzip.compress(SAR.encode(), mtime=0))
    _, quarantine = _rows(_monitored_sample(tmp_path, name, whole[: len(whole) // 2]), tmp_path)  # type: ignore[index]
    assert len(quarantine) == 1 and "complete" in quarantine[0]["reason"]
    assert quarantine[0]["source"].endswith(where) and quarantine[0]["host"] == "h1"


def test_the_command_takes_a_number_of_workers_and_refuses_a_wrong_one(raw, tmp_path, capsys, monkeypatch):
    asked: list[int | None] = []
    frame = tidy.frame
    monkeypatch.setattr(tidy, "frame", lambda raw_dir, **kw: asked.append(kw.get("workers")) or frame(raw_dir, **kw))
    assert cli.main(["tidy", str(raw.dir), "--out", str(tmp_path / "out"), "--workers", "2"]) == 0
    assert asked == [2]
    written = pd.read_parquet(tmp_path / "out" / f"{raw.dir.name}.parquet")
    one, _ = frame(raw.dir, workers=1)
    pd.testing.assert_frame_equal(written.reset_index(drop=True), one.reset_index(drop=True), check_dtype=False)
    for wrong in ("0", "two", "-1"):
        with pytest.raises(SystemExit) as exc:
            cli.main(["tidy", str(raw.dir), "--workers", wrong])
        assert exc.value.code == 2
        assert f"--workers: expected a whole number of processes, at least 1; got '{wrong}'" in capsys.readouterr().err
