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
    assert set(listed) == {"campaign.json", "README.md", "samples/r1/stdout", "samples/r1/stderr", "samples/r1/meta.json"}
    check = subprocess.run(["sha256sum", "-c", "--quiet", store.MANIFEST], cwd=raw.dir, capture_output=True)
    assert check.returncode == 0, check.stdout


def test_every_folder_of_a_sample_is_flushed_before_its_rename(raw, monkeypatch):
    """A file's own fsync does not make its name durable: the folders holding it (a host's monitor archive sits
    in ``monitors/``) are flushed too, before the sample's rename and its parent's flush."""
    flushed = []
    monkeypatch.setattr(store, "fsync", lambda path: flushed.append(path.relative_to(raw.dir).as_posix()))
    raw.put_sample("r1", {"stdout": "x\n", "meta.json": "{}", "monitors/h1/sar.json": "{}\n"})
    tmp = min((p for p in flushed if p.startswith("samples/.tmp-r1")), key=len)
    assert flushed == [f"{tmp}/monitors", tmp, "samples"]


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
    with pytest.raises(store.StoreError, match=r"MANIFEST.sha256:3: expected"):
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


# --- laundering: recovery never adopts sample data; verify cross-checks manifest, ledger and samples ---

def _measure(raw, run_id, text="measured\n", attempt=1):
    ledger = Ledger(raw.dir / "ledger.jsonl")
    ledger.running(run_id, attempt)
    raw.put_sample(run_id, {"stdout": text, "meta.json": "{}"})
    ledger.done(run_id, attempt)


def test_an_edited_sample_whose_manifest_line_was_deleted_is_not_laundered(raw):
    _measure(raw, "r1")
    _measure(raw, "r2")
    (raw.dir / "samples/r1/stdout").write_text("a better number\n")
    kept = [line for line in raw.manifest.read_text().splitlines(keepends=True) if "samples/r1/stdout" not in line]
    raw.manifest.write_text("".join(kept))
    with pytest.raises(store.StoreError, match=r"not in the manifest \(samples/r1/stdout\).*never adopts"):
        raw.recover()
    with pytest.raises(store.StoreError, match="samples/r1/stdout"):
        raw.seal()
    assert "samples/r1/stdout" not in store.read_manifest(raw.dir)
    assert "samples/r1/stdout: not in the manifest" in store.verify(raw.dir)


def test_a_deleted_sample_is_not_measured_again_and_verify_reports_a_re_created_one(raw):
    import shutil
    _measure(raw, "r1")
    shutil.rmtree(raw.dir / "samples/r1")
    with pytest.raises(store.StoreError, match=r"listed file\(s\) missing \(samples/r1/"):
        raw.recover()
    problems = store.verify(raw.dir)
    assert "samples/r1: the ledger says done but the sample directory is missing" in problems
    # measured again anyway (as the old runner did): every trace of it is reported
    _measure(raw, "r1", "again\n")
    problems = "\n".join(store.verify(raw.dir))
    assert "samples/r1/stdout: listed 2 times in the manifest" in problems
    assert "samples/r1: done 2 times in the ledger" in problems
    assert "samples/r1: attempt numbers restart (attempt 1 after it was done)" in problems


def test_verify_reports_a_sample_no_ledger_event_mentions(raw):
    _measure(raw, "r1")
    raw.put_sample("r2", {"stdout": "x"})
    assert store.verify(raw.dir) == ["samples/r2: no ledger event mentions this sample"]


def test_a_crash_between_checksum_and_rename_is_completed_only_with_matching_bytes(raw, monkeypatch):
    real_rename = store.os.rename

    def crash(src, dst):
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(store.os, "rename", crash)
    for run_id in ("r1", "r2"):
        with pytest.raises(KeyboardInterrupt):
            raw.put_sample(run_id, {"stdout": f"{run_id}\n"})
    monkeypatch.setattr(store.os, "rename", real_rename)
    tmp2 = next((raw.dir / "samples").glob(".tmp-r2-*"))
    (tmp2 / "stdout").write_text("edited while nobody looked\n")
    with pytest.raises(store.StoreError, match=r"whose bytes differ from their checksums \(samples/\.tmp-r2-"):
        raw.recover()
    assert (raw.dir / "samples/r1/stdout").read_text() == "r1\n"  # completed: its bytes match
    assert tmp2.exists() and not (raw.dir / "samples/r2").exists()  # evidence kept, never adopted
    (raw.dir / "samples/.tmp-r7-1").mkdir()
    (raw.dir / "samples/.tmp-r7-1/stdout").write_text("half")  # never checksummed: simply unfinished
    import shutil
    shutil.rmtree(tmp2)
    kept = [line for line in raw.manifest.read_text().splitlines(keepends=True) if "samples/r2/" not in line]
    raw.manifest.write_text("".join(kept))
    assert raw.recover() == ["removed unfinished samples/.tmp-r7-1"]


def test_a_crashed_attempt_repeated_or_a_retry_is_not_a_re_measurement(raw):
    ledger = Ledger(raw.dir / "ledger.jsonl")
    ledger.running("r1", 1)  # killed here: nothing stored
    ledger.running("r1", 1)
    ledger.failed("r1", 1, "exit code 1")
    raw.put_sample("r1", {"stdout": "x"}, failed=True)
    ledger.running("r1", 2)
    raw.put_sample("r1", {"stdout": "y"})
    ledger.done("r1", 2)
    assert store.verify(raw.dir) == []
    ledger.running("r1", 2)  # a deleted failed attempt numbered again, or a re-measurement
    assert store.verify(raw.dir) == ["samples/r1: attempt numbers restart (attempt 2 after it was done): "
                                     "the run was measured again"]


def test_a_new_campaign_directory_explains_itself_in_a_checksummed_readme(tmp_path):
    raw = store.RawStore(tmp_path, "camp")
    raw.begin(campaign_record("camp"))
    text = (raw.dir / "README.md").read_text()
    assert "# Raw data of campaign camp" in text and "samples/<run-id>/" in text
    assert "README.md" in store.read_manifest(raw.dir) and store.verify(raw.dir) == []
