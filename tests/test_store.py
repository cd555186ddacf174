"""The raw store: written once, atomically, checksummed; alterations are detected."""

import json
import subprocess

import pytest

from helpers import campaign_record
from perflab import store
from perflab.ledger import Ledger


@pytest.fixture
def raw(tmp_path):
    s = store.RawStore(tmp_path, "camp")
    s.begin(campaign_record("camp", digest="abc"))
    return s


def test_sample_is_stored_and_listed_in_a_sha256sum_manifest(raw):
    final = raw.put_sample("r1", {"stdout": "hello\n", "stderr": "", "meta.json": "{}"})
    assert (final / "stdout").read_text() == "hello\n"
    assert raw.done_ids() == {"r1"}
    listed = store.read_manifest(raw.dir)
    assert set(listed) == {"campaign.json", "samples/r1/stdout", "samples/r1/stderr", "samples/r1/meta.json"}
    check = subprocess.run(["sha256sum", "-c", "--quiet", store.MANIFEST], cwd=raw.dir, capture_output=True)
    assert check.returncode == 0, check.stdout


def test_samples_and_files_are_written_once(raw):
    raw.put_sample("r1", {"stdout": "a"})
    with pytest.raises(store.StoreError, match="written once"):
        raw.put_sample("r1", {"stdout": "b"})
    raw.put_file("blocks/0/x.json", "{}")
    with pytest.raises(store.StoreError, match="written once"):
        raw.put_file("blocks/0/x.json", "{}")
    assert (raw.dir / "samples/r1/stdout").read_text() == "a"


def test_failed_attempts_are_kept_numbered(raw):
    raw.put_sample("r1", {"stdout": "x"}, failed=True)
    raw.put_sample("r1", {"stdout": "y"}, failed=True)
    assert raw.attempts("r1") == 2 and raw.done_ids() == set()
    assert (raw.dir / "failed/r1.a2/stdout").read_text() == "y"


def test_verify_reports_altered_missing_and_unlisted_files(raw):
    raw.put_sample("r1", {"stdout": "a", "stderr": "b"})
    assert store.verify(raw.dir) == []
    (raw.dir / "samples/r1/stdout").write_text("tampered")
    (raw.dir / "samples/r1/stderr").unlink()
    (raw.dir / "samples/r1/extra").write_text("x")
    problems = "\n".join(store.verify(raw.dir))
    assert "samples/r1/stdout: checksum differs" in problems
    assert "samples/r1/stderr: listed in the manifest but missing" in problems
    assert "samples/r1/extra: not in the manifest" in problems


def test_recover_drops_unfinished_samples_and_seals_complete_files(raw):
    (raw.dir / "samples/.tmp-r9-123").mkdir(parents=True)
    (raw.dir / "samples/.tmp-r9-123/stdout").write_text("half")
    (raw.dir / "experiment.ipynb").write_text("{}")
    notes = raw.recover()
    assert not (raw.dir / "samples/.tmp-r9-123").exists()
    assert "experiment.ipynb" in store.read_manifest(raw.dir)
    assert len(notes) == 2 and store.verify(raw.dir) == []


def test_a_different_design_cannot_continue_a_campaign_directory(raw, tmp_path):
    again = store.RawStore(tmp_path, "camp")
    again.begin(campaign_record("camp", digest="abc"))
    with pytest.raises(store.StoreError, match="different design"):
        again.begin(campaign_record("camp", digest="other"))


def test_manifest_with_a_broken_line_is_reported_with_its_line(raw):
    with open(raw.manifest, "a") as fh:
        fh.write("not a checksum line\n")
    with pytest.raises(store.StoreError, match=r"MANIFEST.sha256:2: expected"):
        store.read_manifest(raw.dir)


def test_ledger_keeps_the_last_state_and_skips_a_line_cut_by_a_crash(tmp_path):
    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.running("a", 1)
    ledger.failed("a", 1, "exit code 1")
    ledger.running("a", 2)
    ledger.done("a", 2)
    ledger.running("b", 1)
    with open(ledger.path, "a") as fh:
        fh.write('{"t": 1, "run_id": "c", "sta')
    assert ledger.states(["a", "b", "c", "d"]) == {"a": "done", "b": "running", "c": "todo", "d": "todo"}
    assert ledger.failures() == {"a": ["exit code 1"]}
    assert json.loads(ledger.path.read_text().splitlines()[0])["state"] == "running"
