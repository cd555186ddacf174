"""`perflab verify`: a reviewer's check of the whole repository names every file that differs."""

from pathlib import Path

import pandas as pd
import pytest

from helpers import campaign_record, sample_meta
from perflab import cli, store, tidy, verify
from perflab.report import lineage

FIXTURE = Path(__file__).parent / "fixtures/lab/iperf3-tcp-P4.json"
ROOT = Path(__file__).resolve().parents[1]


def _meta(run_id, parallel, block):
    return sample_meta(run_id, {"parallel": parallel}, block)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A tiny project: one raw campaign, its processed table, sealed published data, one lineage sidecar."""
    s = store.RawStore(tmp_path / "data/raw", "c")
    s.begin(campaign_record("c", {"parallel": [1, 4]}))
    for i, p in enumerate((1, 4, 1, 4)):
        s.put_sample(f"r{i}", {"stdout": FIXTURE.read_text(), "stderr": "", "meta.json": _meta(f"r{i}", p, i)})
    pub = tmp_path / "data/raw/published"
    pub.mkdir()
    (pub / "study-table1.csv").write_text("name,mean\nx,1.5\n")
    store.seal_digitized(pub)
    monkeypatch.chdir(tmp_path)
    tidy.write("data/raw/c", "data/processed", csv=True)
    table = lineage.atomic_text("paper/tables/c-summary.tex", "\\begin{tabular}{r}1\\end{tabular}\n")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks/analysis.ipynb").write_text("{}")
    lineage.write([table], ["data/processed/c.parquet"], generator="notebooks/analysis.ipynb")
    return tmp_path


def _verify(capsys, *args):
    code = cli.main(["verify", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_an_untouched_repository_verifies(repo, capsys):
    code, out = _verify(capsys)
    assert code == 0, out
    assert "1 raw campaigns" in out and "1 published files" in out and "2 processed tables" in out
    assert "1 lineage records" in out


def test_a_changed_raw_byte_fails_naming_the_file(repo, capsys):
    path = repo / "data/raw/c/samples/r2/stdout"
    data = bytearray(path.read_bytes())
    data[100] ^= 1
    path.write_bytes(bytes(data))
    code, out = _verify(capsys)
    assert code == 1
    assert "data/raw/c/samples/r2/stdout: checksum differs" in out
    assert "not re-derived" in out, "a processed table is not compared with altered raw data"


def test_a_changed_processed_table_fails_naming_the_file_and_the_value(repo, capsys):
    path = repo / "data/processed/c.parquet"
    df = pd.read_parquet(path)
    df.loc[3, "value"] = df.loc[3, "value"] * (1 + 1e-12)
    df.to_parquet(path, index=False)
    code, out = _verify(capsys)
    assert code == 1
    assert "data/processed/c.parquet: column 'value' differs in 1 row(s), first row 3" in out
    assert "c.csv" not in out


def test_a_changed_processed_csv_fails(repo, capsys):
    path = repo / "data/processed/c.csv"
    path.write_text(path.read_text().replace("iperf3", "iperf2", 1))
    code, out = _verify(capsys)
    assert code == 1 and "data/processed/c.csv: column 'tool' differs in 1 row(s)" in out


def test_a_changed_published_csv_fails_naming_the_file(repo, capsys):
    (repo / "data/raw/published/study-table1.csv").write_text("name,mean\nx,1.6\n")
    code, out = _verify(capsys)
    assert code == 1 and "data/raw/published/study-table1.csv: checksum differs" in out


def test_published_data_without_a_manifest_fails(repo, capsys):
    (repo / "data/raw/published" / store.MANIFEST).unlink()
    code, out = _verify(capsys)
    assert code == 1 and "data/raw/published: no MANIFEST.sha256" in out and "perflab seal" in out


def test_a_changed_generated_table_or_notebook_fails(repo, capsys):
    (repo / "paper/tables/c-summary.tex").write_text("edited by hand\n")
    code, out = _verify(capsys)
    assert code == 1 and "paper/tables/c-summary.tex: output changed since paper/tables/c-summary.lineage.json" in out


def test_a_missing_directory_is_a_clear_error(repo, capsys):
    code, out = _verify(capsys, "data/raw/nosuch")
    assert code == 2 and "data/raw/nosuch: no such directory" in out


def test_an_empty_directory_is_an_error(repo, capsys):
    (repo / "data/raw/empty").mkdir()
    (repo / "data/raw/empty" / store.MANIFEST).write_text("")
    code, out = _verify(capsys, "data/raw/empty")
    assert code == 2 and "lists no file" in out
    code, out = _verify(capsys)
    assert code == 1 and "data/raw/empty: a directory under data/raw/ with no campaign.json" in out


def test_a_repository_with_no_data_is_an_error(tmp_path, capsys):
    (tmp_path / "data/raw").mkdir(parents=True)
    code, out = _verify(capsys, "--root", str(tmp_path))
    assert code == 2 and "nothing to verify" in out


def test_the_projects_published_data_is_sealed():
    assert verify.raw_directory(ROOT / "data/raw/published") == []
    assert "003-openstack-opennebula-table2-microbenchmarks.csv" in store.read_manifest(ROOT / "data/raw/published")


@pytest.fixture
def measured(probe, tmp_path):
    """A complete localhost campaign of the probe tool (2 cells x 3 repetitions) with its ledger."""
    from helpers import load_campaign
    from perflab import inventory, runner
    campaign = load_campaign("campaign: launder\nbenchmark: {tool: probe, params: {cmd: 'echo 1'}}\n"
                             "hosts: {client: h1}\nfactors: {x: [a, b]}\nrepetitions: 3\nwarmups: 0\nseed: 5\n"
                             "monitors: false\nfingerprints: false\nprograms: [cmd]\n"
                             "setup: [{on: client, run: 'echo {x}'}]\n", tmp_path)
    runner.run(campaign, inventory.localhost(), tmp_path / "raw", stream=open("/dev/null", "w"))
    cdir = tmp_path / "raw/launder"
    assert store.verify(cdir) == []
    return cdir


def _drop_lines(path, word):
    path.write_text("".join(line for line in path.read_text().splitlines(keepends=True) if word not in line))


def test_a_sample_deleted_with_its_manifest_and_ledger_lines_fails_verify(measured):
    import json
    import shutil
    run_id = json.loads((measured / "campaign.json").read_text())["schedule"][2]
    shutil.rmtree(measured / "samples" / run_id)
    _drop_lines(measured / store.MANIFEST, run_id)
    _drop_lines(measured / "ledger.jsonl", run_id)
    problems = store.verify(measured)
    assert problems[1:] == [f"samples/{run_id}: planned (campaign.json) but neither stored nor in the "
                            "ledger, although later runs were measured: deleted with its ledger lines?"]
    assert problems[0].startswith("ledger.jsonl:") and "the hash chain breaks here" in problems[0], \
        "the ledger's hash chain finds the deleted lines too"


def test_a_deleted_ledger_fails_verify(measured, capsys):
    (measured / "ledger.jsonl").unlink()
    problems = store.verify(measured)
    assert problems == ["ledger.jsonl: missing: the campaign plans 6 runs and its ledger records which ran; restore "
                        "it from a backup (it cannot be rebuilt)"]
    assert cli.main(["verify", str(measured)]) == 1


@pytest.mark.parametrize("name", ["/etc/shadow", "../outside.txt", "samples/link/stdout", "samples/out.txt"])
def test_a_manifest_path_outside_the_campaign_is_refused_without_being_read(measured, monkeypatch, name):
    outside = measured.parent.parent / "outside.txt"
    outside.write_text("secret\n")
    (measured / "samples/link").symlink_to(outside.parent)  # a directory inside that leads outside
    (measured / "samples/out.txt").symlink_to(outside)  # a file inside that leads outside
    with open(measured / store.MANIFEST, "a") as fh:
        fh.write(f"{'0' * 64}  {name}\n")
    read = []
    real = store.sha256_file
    monkeypatch.setattr(store, "sha256_file", lambda p: read.append(str(p)) or real(p))
    problems = store.verify(measured)
    assert f"{name}: a manifest path outside the campaign directory; refused, not read" in problems
    assert all(p.startswith(str(measured.resolve())) for p in read) and len(read) > 6
