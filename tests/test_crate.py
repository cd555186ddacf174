"""Export and import as an RO-Crate: the round trip keeps every byte; altered crates are refused."""

import json
from pathlib import Path

import pytest
from test_site import make_project

from perflab import cli, crate, store, verify

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("source")
    make_project(root, samples=3, notebook=False)
    return root


def _tree(root: Path, under: str) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): store.sha256_file(p) for p in sorted((root / under).rglob("*"))
            if p.is_file()}


def test_a_campaign_round_trips_through_an_ro_crate(project, tmp_path, capsys):
    assert cli.main(["export", "demo", "--out", str(tmp_path / "out"), "--root", str(project)]) == 0
    out = tmp_path / "out/demo"
    meta = json.loads((out / crate.METADATA).read_text())
    graph = {e["@id"]: e for e in meta["@graph"]}
    assert graph[crate.METADATA]["conformsTo"] == {"@id": "https://w3id.org/ro/crate/1.1"}
    assert graph["./"]["@type"] == "Dataset" and graph["./"]["license"] and graph["./"]["datePublished"]
    parts = {p["@id"] for p in graph["./"]["hasPart"]}
    for expected in ("data/raw/demo/MANIFEST.sha256", "data/raw/demo/blocks/0/fingerprint-before-h1.json",
                     "data/processed/demo.csv", "paper/figures/demo-throughput.pdf", crate.LOCK):
        assert expected in parts and graph[expected]["@type"] == "File" and len(graph[expected]["sha256"]) == 64
    assert crate.check(out) == []

    target = tmp_path / "target"
    (target / "data/raw").mkdir(parents=True)
    assert cli.main(["import", str(out), "--root", str(target)]) == 0
    assert "copied" in capsys.readouterr().out
    assert _tree(target, "data/raw/demo") == _tree(project, "data/raw/demo")
    assert verify.repository(target).ok
    assert cli.main(["import", str(out), "--root", str(target)]) == 0, "importing the same crate again is a no-op"
    assert _tree(target, "data/raw/demo") == _tree(project, "data/raw/demo")


def test_an_altered_crate_is_refused_naming_the_file(project, tmp_path, capsys):
    out = crate.export("demo", tmp_path, root=project)
    (out / "data/raw/demo/samples/b1-p4/stdout").write_text("{}")
    assert cli.main(["import", str(out), "--root", str(tmp_path / "target")]) == 2
    err = capsys.readouterr().err
    assert "data/raw/demo/samples/b1-p4/stdout: SHA-256 differs" in err and "nothing imported" in err
    assert not (tmp_path / "target/data/raw/demo").exists()


def test_import_never_overwrites_different_raw_data(project, tmp_path):
    out = crate.export("demo", tmp_path / "out", root=project)
    other = tmp_path / "other"
    (other / "data/raw/demo/samples/b0-p1").mkdir(parents=True)
    (other / "data/raw/demo/samples/b0-p1/stdout").write_text("other bytes")
    with pytest.raises(crate.CrateError, match="never overwritten"):
        crate.import_crate(out, root=other)
    assert (other / "data/raw/demo/samples/b0-p1/stdout").read_text() == "other bytes"


def test_the_published_study_exports_with_its_manifest(tmp_path):
    out = crate.export("003-openstack-opennebula", tmp_path, root=ROOT)
    assert crate.check(out) == []
    assert (out / "data/raw/published/MANIFEST.sha256").exists()
    assert (out / "data/raw/published/003-openstack-opennebula-table3-nas.csv").exists()


def test_an_unknown_name_is_a_clear_error(tmp_path, capsys):
    assert cli.main(["export", "nosuch", "--out", str(tmp_path), "--root", str(ROOT)]) == 2
    assert "nosuch: neither a campaign" in capsys.readouterr().err


def test_a_study_crate_holds_only_its_own_published_files(tmp_path):
    pub = tmp_path / "data/raw/published"
    pub.mkdir(parents=True)
    for name in ("a-table1.csv", "b-table1.csv"):
        (pub / name).write_text(f"{name}\n")
    store.seal_digitized(pub)
    out = crate.export("a", tmp_path / "out", root=tmp_path)
    assert not (out / "data/raw/published/b-table1.csv").exists() and crate.check(out) == []
    (out / "data/raw/published/a-table1.csv").write_text("changed\n")
    problems = crate.check(out)
    assert "data/raw/published/a-table1.csv: SHA-256 differs from ro-crate-metadata.json (the file was altered)" in problems
    assert "data/raw/published/a-table1.csv: checksum differs from data/raw/published/MANIFEST.sha256" in problems
