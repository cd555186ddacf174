"""The readers of ``perflab.formats``: each checks its ``format``, reads the older ones through its migrations,
and refuses a newer one with the file and what to do; the committed published files read as they are."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from perflab.formats import declarations, findings, fingerprints, lineage, locks, published, questions, quiet, versions
from perflab.formats.versions import FormatError

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "data" / "raw" / "published"


def test_a_document_is_migrated_one_version_at_a_time_and_a_newer_one_is_refused(tmp_path):
    steps = {1: lambda d: {**d, "b": d["a"] * 2}, 2: lambda d: {**d, "c": d["b"] + 1}}
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"format": 1, "a": 1}))
    assert versions.load_json(path, "thing", 3, steps) == {"format": 3, "a": 1, "b": 2, "c": 3}
    path.write_text(json.dumps({"format": 4, "a": 1}))
    with pytest.raises(FormatError, match=rf"^{path}: thing of format 4; this perflab reads format 1 or 2 or 3\. "
                                          r"Use the perflab version that wrote it .* or upgrade perflab\.$"):
        versions.load_json(path, "thing", 3, steps)
    path.write_text("[1]")
    with pytest.raises(FormatError, match=r"thing must be a JSON object; found list"):
        versions.load_json(path, "thing", 3, steps)
    path.write_text('{"format": 1,')
    with pytest.raises(FormatError, match=rf"^{path}:1: thing is not valid JSON"):
        versions.load_json(path, "thing", 3, steps)


def test_a_version_without_a_chain_of_migrations_up_to_the_current_one_is_not_read():
    with pytest.raises(FormatError, match="reads format 2 or 3"):
        versions.migrate({"format": 1}, "f", "thing", 3, {2: lambda d: d})
    with pytest.raises(FormatError, match="of format True"):
        versions.migrate({"format": True}, "f", "thing", 1)


def test_write_json_is_atomic_and_reads_back(tmp_path):
    path = versions.write_json(tmp_path / "d" / "x.json", {"format": 1, "v": [1, 2]})
    assert path.read_text() == '{\n "format": 1,\n "v": [\n  1,\n  2\n ]\n}\n'
    assert versions.load_json(path, "thing", 1) == {"format": 1, "v": [1, 2]}


def test_a_fingerprint_written_under_schema_reads_as_the_current_format_and_is_written_under_format(tmp_path):
    old = {"schema": 3, "host": "h1", "facts": {"cpu.count": 2}, "probe_from": "blocks/0/x.json"}
    path = tmp_path / "fingerprint-before-h1.json"
    path.write_text(json.dumps(old))
    read = fingerprints.read(path)
    assert read["format"] == fingerprints.FORMAT == 4 and "schema" not in read and read["facts"] == old["facts"]
    assert json.loads(fingerprints.dumps(read))["format"] == 4
    path.write_text(json.dumps({**read, "format": 5}))
    with pytest.raises(FormatError, match=rf"^{path}: host fingerprint of format 5; this perflab reads format 1 or 2 "
                                          r"or 3 or 4\."):
        fingerprints.read(path)


@pytest.mark.parametrize("name", ["000-cedri", "002-pfsense-neighbour", "003-openstack-opennebula", "004-aoe-iscsi"])
def test_every_committed_claims_file_reads_without_its_format_column(name):
    path = PUBLISHED / f"{name}-claims.csv"
    claims = published.read_claims(path)
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert "format" not in claims.columns and len(claims) == len(raw) > 0
    assert list(claims.columns) == [c for c in raw.columns if c != "format"]
    assert claims["claim"].is_unique and claims.attrs["source"] == str(path)


def test_a_claims_file_is_written_with_its_format_first_and_reads_back(tmp_path):
    legacy = published.read_claims(PUBLISHED / "000-cedri-claims.csv")
    path = published.write_claims(tmp_path / "x-claims.csv", legacy)
    assert path.read_text().splitlines()[0] == "format," + ",".join(legacy.columns)
    assert published.read_claims(path).equals(legacy)


@pytest.mark.parametrize("column, problem", [
    (["2", "2"], r"claims file of format 2; this perflab reads format 0 or 1\."),
    (["1", "2"], r"column format: rows of formats \['1', '2'\]; a claims file has one format"),
    (["x", "x"], r"claims file of format 'x'")])
def test_a_claims_file_of_an_unknown_format_names_the_file(tmp_path, column, problem):
    path = tmp_path / "x-claims.csv"
    pd.DataFrame({"format": column, "claim": ["C1", "C2"], "line": ["1", "2"], "quote": ["a", "b"]}).to_csv(
        path, index=False)
    with pytest.raises(FormatError, match=rf"^{path}: {problem}"):
        published.read_claims(path)


def test_a_claims_file_without_the_shared_columns_is_refused(tmp_path):
    path = tmp_path / "x-claims.csv"
    path.write_text("claim,stated\nC1,3\n")
    with pytest.raises(FormatError, match=r"has the columns claim, line, quote; missing line, quote"):
        published.read_claims(path)


def test_a_questions_record_reads_back_and_one_of_another_kind_or_format_names_the_file(tmp_path):
    path = tmp_path / questions.NAME
    path.write_text(questions.dumps("s", "c", "d" * 64, [{"id": "Q1"}]))
    assert questions.read(path) == {"format": 1, "kind": "questions record", "study": "s", "campaign": "c",
                                    "digest": "d" * 64, "questions": [{"id": "Q1"}]}
    path.write_text(json.dumps({**questions.read(path), "format": 2}))
    with pytest.raises(FormatError, match=rf"^{path}: questions record of format 2; this perflab reads format 1\."):
        questions.read(path)
    path.write_text(json.dumps({"format": 1, "kind": "campaign record"}))
    with pytest.raises(FormatError, match=rf"^{path}: expected a questions record; found kind 'campaign record'"):
        questions.read(path)


def test_a_lineage_sidecar_of_either_format_or_a_tidy_record_is_read_as_it_is_and_a_newer_one_is_refused(tmp_path):
    path = tmp_path / "x.lineage.json"
    for doc in ({"format": 1, "outputs": [], "inputs": [], "generator": "g"},
                {"format": 2, "outputs": [], "inputs": [], "generator": "g", "git": None},
                {"output": ["c.parquet"], "generator": "perflab.tidy.write", "inputs": {"raw_dir": "data/raw/c"}}):
        lineage.write(path, doc)
        assert lineage.read(path) == doc and path.read_text() == json.dumps(doc, indent=1) + "\n"
    lineage.write(path, {"format": 3, "outputs": []})
    with pytest.raises(FormatError, match=rf"^{path}: lineage sidecar of format 3; this perflab reads format 1 or 2\."):
        lineage.read(path)
    path.write_text("{")
    with pytest.raises(FormatError, match=rf"^{path}:1: lineage sidecar is not valid JSON"):
        lineage.read(path)


def test_a_verify_finding_keeps_its_path_apart_from_its_problem_even_when_the_problem_holds_a_colon():
    found = findings.Finding("ledger.jsonl:3", "the hash chain breaks here: edited")
    assert str(found.under("data/raw/c")) == "data/raw/c/ledger.jsonl:3: the hash chain breaks here: edited"
    assert found.under("data/raw/c").to_json() == {"path": "data/raw/c/ledger.jsonl:3",
                                                  "problem": "the hash chain breaks here: edited"}


def test_the_raw_store_reports_findings_typed_and_verify_takes_them_unsplit(tmp_path):
    from perflab import store, verify

    store.RawStore(tmp_path, "c").put_file("samples/r1/stdout", "x")
    (tmp_path / "c" / "samples" / "r1" / "stdout").write_text("y: z")
    (tmp_path / "c" / "extra: file").write_text("e")
    found = store.findings(tmp_path / "c")
    assert findings.Finding("extra: file", "not in the manifest") in found
    assert findings.Finding("samples/r1/stdout", "checksum differs from the manifest (the file was altered)") in found
    assert store.verify(tmp_path / "c") == [str(f) for f in found]
    assert findings.Finding(f"{(tmp_path / 'c').as_posix()}/extra: file", "not in the manifest") in \
        verify.raw_directory(tmp_path / "c")


def test_a_quiet_gate_record_of_every_committed_format_reads_and_a_newer_one_is_refused(tmp_path):
    committed = sorted(ROOT.glob("data/raw/*/blocks/*/quiet*.json"))
    seen = {quiet.read_gate(p)["format"] for p in committed[:: max(1, len(committed) // 50)]}
    assert seen and seen <= set(quiet.READS)
    path = tmp_path / "quiet.json"
    path.write_text(quiet.gate_text({"format": 3, "block": 1, "quiet": True, "waited": 0.5, "steal": 0.0}))
    assert quiet.read_gate(path)["waited"] == 0.5
    path.write_text(quiet.gate_text({"format": 4, "block": 1}))
    with pytest.raises(FormatError, match=rf"^{path}: quiet gate record of format 4; this perflab reads format 1 or 2 "
                                          r"or 3\."):
        quiet.read_gate(path)


@pytest.mark.parametrize("text, holder", [('{"pid": 7}\n', {"pid": 7}), ("7\n", 7), ('{"pid": ', None), ("", None)])
def test_a_lock_file_being_written_reads_as_no_holder(text, holder):
    assert locks.parse(text) == holder


def test_a_lock_holder_is_written_as_one_json_line():
    assert locks.dumps({"format": 1, "pid": 7}) == b'{"format": 1, "pid": 7}\n'


def test_every_declaration_kind_reads_through_the_one_yaml_loader_with_its_format(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("format: 2\nlab: x\n")
    with pytest.raises(Exception, match=rf"^{path}:1: format: lab format 2; this perflab reads format 1"):
        declarations.LAB.read(path)
    path.write_text("lab: x\n")
    with pytest.raises(Exception, match=rf"^{path}:1: format: missing"):
        declarations.LAB.read(path)
    assert declarations.CAMPAIGN.format_required is False and declarations.STUDY.format_required is True
    assert declarations.CAMPAIGN.schema()["type"] == "object" and declarations.INVENTORY.schema() == {}
