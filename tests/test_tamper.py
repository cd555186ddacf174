"""Tamper-evident raw data: consistent rewrites that the manifest alone cannot tell are found by `perflab verify`.

A campaign of the test-only probe tool is run on this machine inside a one-study project, so its raw
directory has a frozen questions record, a chained ledger and samples whose files the ledger binds.
Each test then alters the raw data *consistently*: the manifest line of every changed file is
rewritten to the new bytes, as someone who edits the data on purpose would.
"""

import hashlib
import json
import os
from pathlib import Path

import pytest

from perflab import campaign as campaign_mod, cli, evidence, inventory, ledger, questions, runner, store, verify

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ("campaign: tamper\nbenchmark: {tool: probe}\nprograms: [cmd]\nhosts: {client: h1}\n"
            "factors: {cmd: ['echo 1', 'echo 2']}\nrepetitions: 2\nwarmups: 0\nseed: 7\n"
            "fingerprints: false\n")
QUESTION = ("  - {id: Q1, claim: 'seed:1', quote: q, campaign: tamper, metric: value, factor: cmd, baseline: 'echo 1',\n"
            "     versus: 'echo 2', expected: higher, sesoi: {value: 0.05, source: domain, reason: r}, n: 40,\n"
            "     testable: {value: 'yes', mechanism: m, reason: r}}\n")


@pytest.fixture
def project(probe, tmp_path):
    """A project with one demo study whose campaign (2 cells x 2 repetitions) was measured here."""
    root = tmp_path / "p"
    (root / "studies/demo/campaigns").mkdir(parents=True)
    (root / "studies/demo/campaigns/c.yaml").write_text(CAMPAIGN)
    (root / "studies/demo/study.yaml").write_text(
        "format: 1\nstudy: demo\ntitle: t\ndemo: true\ncampaigns:\n  - {file: campaigns/c.yaml}\n"
        f"questions:\n{QUESTION}")
    spec = campaign_mod.load(root / "studies/demo/campaigns/c.yaml")
    runner.run(spec, inventory.localhost(), root / "data/raw", stream=open(os.devnull, "w"))
    assert (root / "data/raw/tamper" / questions.RECORD).exists()
    assert verify.repository(root).findings == []
    return root


def _cdir(root: Path) -> Path:
    return root / "data/raw/tamper"


def _reseal(cdir: Path, *names: str) -> None:
    """Rewrite the manifest lines of ``names`` to their files' current bytes (a consistent edit)."""
    lines = []
    for line in (cdir / store.MANIFEST).read_text().splitlines(keepends=True):
        name = line.rstrip("\n").partition("  ")[2]
        lines.append(f"{store.sha256_file(cdir / name)}  {name}\n" if name in names else line)
    (cdir / store.MANIFEST).write_text("".join(lines))


def _problems(root: Path) -> list[str]:
    return [str(f) for f in verify.repository(root).findings]


def test_a_frozen_alpha_changed_with_its_manifest_line_and_the_study_is_found(project):
    cdir = _cdir(project)
    record = cdir / questions.RECORD
    text = record.read_text()
    assert '"alpha": 0.05' in text
    record.write_text(text.replace('"alpha": 0.05', '"alpha": 0.2'))
    _reseal(cdir, questions.RECORD)
    study = project / "studies/demo/study.yaml"
    study.write_text(study.read_text().replace("n: 40,", "n: 40, alpha: 0.2,"))
    assert questions.frozen_problems(project) == [], "the record and the study agree: only the digest tells"
    problems = _problems(project)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{record.as_posix()}: its digest ") and "edited after their data existed" \
        in problems[0]


def test_two_samples_stdout_swapped_with_the_manifest_rewritten_is_found(project):
    cdir = _cdir(project)
    schedule = json.loads((cdir / "campaign.json").read_text())["schedule"]
    a, b = (cdir / "samples" / schedule[0] / "stdout"), (cdir / "samples" / schedule[1] / "stdout")
    assert a.read_bytes() != b.read_bytes()
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)
    _reseal(cdir, f"samples/{schedule[0]}/stdout", f"samples/{schedule[1]}/stdout")
    assert [p for p in store.verify(cdir) if "checksum" in p] == []
    problems = _problems(project)
    for run_id in schedule[:2]:
        assert any(p.startswith(f"{cdir.as_posix()}/samples/{run_id}/stdout: has another SHA-256 than the one the "
                                f"ledger bound to run {run_id}") for p in problems), problems
    assert len(problems) == 2, problems


def test_a_changed_seed_with_its_manifest_line_rewritten_is_found(project):
    cdir = _cdir(project)
    path = cdir / "campaign.json"
    record = json.loads(path.read_text())
    record["spec"]["seed"] = 8
    path.write_text(json.dumps(record, indent=1) + "\n")
    _reseal(cdir, "campaign.json")
    problems = _problems(project)
    assert any(p.startswith(f"{path.as_posix()}: its schedule does not follow from its seed 8") for p in problems), \
        problems
    assert any("design_digest" in p for p in problems)
    assert any("ledger.jsonl:1: the hash chain breaks here" in p for p in problems), "the chain starts at the record"


def _lines(cdir: Path) -> list[str]:
    return (cdir / store.LEDGER).read_text().splitlines(keepends=True)


@pytest.mark.parametrize("change", ["deleted", "edited", "reordered", "inserted"])
def test_the_ledger_chain_finds_an_event_deleted_edited_reordered_or_inserted(project, change):
    cdir = _cdir(project)
    lines = _lines(cdir)
    assert len(lines) == 8 and all(json.loads(line)["format"] == 2 for line in lines)
    i = 3
    if change == "deleted":
        del lines[i]
    elif change == "edited":
        event = json.loads(lines[i])
        lines[i] = json.dumps({**event, "t": event["t"] + 1}) + "\n"
    elif change == "reordered":
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    else:
        lines.insert(i, json.dumps({**json.loads(lines[i]), "state": "running"}) + "\n")
    (cdir / store.LEDGER).write_text("".join(lines))
    problems = [p for p in _problems(project) if "hash chain" in p or "chain link" in p]
    assert problems and all(p.startswith(f"{cdir.as_posix()}/ledger.jsonl:") for p in problems), _problems(project)


def test_a_consistent_rewrite_of_the_ledger_changes_the_published_head(project):
    cdir = _cdir(project)
    before = ledger.chain(cdir / store.LEDGER)
    assert before.chained and before.problems == [] and before.events == 8
    assert before.head == hashlib.sha256(_lines(cdir)[-1].encode()).hexdigest()
    (cdir / store.LEDGER).write_text("".join(_lines(cdir)[:-1]))  # the last event dropped: the chain still holds
    after = ledger.chain(cdir / store.LEDGER)
    assert after.problems == [] and after.head != before.head


def test_verify_the_paper_and_the_site_print_each_campaigns_chain_head(project, capsys, monkeypatch):
    head = ledger.chain(_cdir(project) / store.LEDGER).head
    assert cli.main(["verify", "--root", str(project)]) == 0
    out = capsys.readouterr().out
    assert f"  tamper: chain head {head} (8 events, format 2)" in out
    assert cli.main(["verify", str(_cdir(project))]) == 0
    assert f"ledger chain head {head}" in capsys.readouterr().out
    values = evidence.macro_values(evidence.collect(project / "data/raw", project))
    assert values["tamper/evidence/chain"] == head
    from perflab.report import evidence as evidence_tables
    table = evidence_tables.table("demo", evidence.collect(project / "data/raw", project))
    assert f"\\texttt{{{head[:evidence_tables.HEAD_DIGITS]}}} \\\\" in table, "a chained ledger's head, unmarked"
    from perflab.report import site
    monkeypatch.chdir(project)
    site.build([], project / "reports", root=project)
    assert f"Ledger hash chain: <code>chain head {head} (8 events" in (project / "reports/campaigns/tamper.html").read_text()


def test_an_old_ledger_has_no_chain_its_head_is_the_files_digest_and_a_resume_chains_on(tmp_path):
    cdir = tmp_path / "c"
    cdir.mkdir()
    (cdir / "campaign.json").write_text('{"campaign": "c"}\n')
    old = '{"t": 1.0, "run_id": "a", "state": "running", "attempt": 1}\n{"t": 2.0, "run_id": "a", "state": "done", ' \
          '"attempt": 1}\n'
    (cdir / store.LEDGER).write_text(old)
    found = ledger.chain(cdir / store.LEDGER)
    assert not found.chained and found.problems == [] and found.head == hashlib.sha256(old.encode()).hexdigest()
    assert found.describe().startswith("no chain (format 1): 2 events; SHA-256 of the ledger file ")
    book = ledger.Ledger(cdir / store.LEDGER)
    book.running("b", 1)  # a resume by this perflab: the first chained event covers the record and the old lines
    first = json.loads(_lines(cdir)[-1])
    assert first["format"] == 2
    assert first["prev"] == hashlib.sha256((cdir / "campaign.json").read_bytes() + old.encode()).hexdigest()
    book.done("b", 1, files={"stdout": "0" * 64})
    assert json.loads(_lines(cdir)[-1])["prev"] == hashlib.sha256(_lines(cdir)[-2].encode()).hexdigest()
    assert ledger.chain(cdir / store.LEDGER).chained and ledger.chain(cdir / store.LEDGER).problems == []
    (cdir / store.LEDGER).write_text(old.replace("2.0", "3.0") + "".join(_lines(cdir)[2:]))
    assert str(ledger.chain(cdir / store.LEDGER).problems[0]).startswith("ledger.jsonl:3: the hash chain breaks here")


def test_a_committed_campaign_verifies_and_reports_no_chain():
    cdir = ROOT / "data/raw/unnoba-fio-qd"
    assert verify.raw_directory(cdir) == []
    assert verify.head(cdir).startswith("no chain (format 1): 96 events; SHA-256 of the ledger file ")


def test_a_failed_attempts_files_are_bound_to_its_run_too(tmp_path):
    from helpers import campaign_record
    raw = store.RawStore(tmp_path, "c")
    raw.begin(campaign_record("c"))
    book = ledger.Ledger(raw.dir / store.LEDGER)
    book.running("r", 1)
    stored = raw.put_sample("r", {"stdout": "partial\n", "stderr": "timed out\n", "meta.json": "{}"}, failed=True)
    book.failed("r", 1, "timed out", files=raw.digests(stored))
    assert store.verify(raw.dir) == []
    (stored / "stdout").write_text("complete\n")
    _reseal(raw.dir, "failed/r.a1/stdout")
    assert store.verify(raw.dir) == ["failed/r.a1/stdout: has another SHA-256 than the one the ledger bound to run r "
                                     "when it was stored (replaced, swapped with another sample's, or added)"]
