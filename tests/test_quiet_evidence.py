"""Measurement evidence per campaign: windows, samples overlapping another campaign's, contention, monitors."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from helpers import campaign_record
from perflab import cli, evidence
from perflab.hosts import contention
from perflab.formats import records
from perflab.store import RawStore

T0 = 1_800_000_000.0


def _campaign(raw: Path, name: str, source: str, spans: list[tuple[float, float]], *,
              contended: list[bool | None] | None = None, monitors: bool = False, kernel: bool = False) -> None:
    """A committed campaign made by hand: one sample per (start, end) offset from T0 (``kernel``: contention
    format 2, with the kernel's threads' CPU)."""
    s = RawStore(raw, name)
    s.begin(replace(campaign_record(name), source=source))
    for i, (a, b) in enumerate(spans):
        record = None
        if contended is not None:
            record = {"format": 1, "other_cpus": 0.1 * (i + 1), "contended": contended[i],
                      "steal": 0.02 if contended[i] else 0.004, "bounds": asdict(contention.STUDY_DEFAULT)}
            if kernel:
                busy = ["CPU used outside the lab 0.20 CPUs > 0.1 CPUs", "steal 1.20 % > 1 %"]
                record.update(format=2, kernel_cpus=0.05 * (i + 1), steal=0.021 if i == 0 else 0.012,
                              busiest=[{"name": "stress-ng", "cpus": 0.15, "kernel": False}] if i == 1 else [],
                              exceeded=["steal 2.10 % > 1 %"] if i == 0 else busy)
        meta = records.SampleMeta(
            campaign=name, run_id=f"r{i}", tool="iperf3", cell={}, cell_index=0, repetition=i, warmup=False,
            block=i, position=0, seed=1, attempt=1, status="ok", reason=None, roles={}, settle=None, neighbours=[],
            perflab="test", commands=[{"host": "h1", "started": T0 + a, "ended": T0 + b}], contention=record)
        files = {"stdout": "1\n", "stderr": "", "meta.json": meta.to_json()}
        if monitors:
            files["monitors/h1/proc-before.txt"] = "x\n"
        s.put_sample(f"r{i}", files)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A project with study s1 declaring campaign 'a', and campaigns 'a', 'b' (no study), 'c' (no study)."""
    folder = tmp_path / "studies/s1"
    (folder / "campaigns").mkdir(parents=True)
    (folder / "study.yaml").write_text("format: 1\nstudy: s1\ntitle: t\ncampaigns:\n  - file: campaigns/a.yaml\n")
    (folder / "campaigns/a.yaml").write_text("format: 1\ncampaign: a\nbenchmark: {tool: iperf3, params: {duration: 1}}\n"
                                              "hosts: {client: h1, server: h2}\nfactors: {parallel: [1, 2]}\n")
    raw = tmp_path / "data/raw"
    _campaign(raw, "a", "studies/s1/campaigns/a.yaml", [(0, 10), (20, 30), (40, 50)],
              contended=[False, True, False], monitors=True)
    _campaign(raw, "b", "b.yaml", [(100, 110)])
    _campaign(raw, "c", "c.yaml", [(1000, 1010)])
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_samples_alone_overlap_nothing_and_the_study_check_passes(repo):
    found = {ev.campaign: ev for ev in evidence.collect(repo / "data/raw", repo)}
    a = found["a"]
    assert (a.study, a.study_campaign, a.samples, a.overlapping) == ("s1", True, 3, 0)
    assert (a.recorded, a.contended, a.monitors) == (3, 1, "all")
    assert a.other_cpus_median == pytest.approx(0.2) and a.other_cpus_max == pytest.approx(0.3)
    assert found["b"].study is None and found["b"].monitors == "none"
    assert evidence.failures(list(found.values())) == [] and evidence.study_overlaps(repo) == 0


def test_a_study_sample_that_ran_while_another_campaign_measured_fails_verify(repo, capsys):
    _campaign(repo / "data/raw", "d", "d.yaml", [(25, 26), (49, 60), (1005, 1006)])
    found = {ev.campaign: ev for ev in evidence.collect(repo / "data/raw", repo)}
    assert found["a"].overlapping == 2 and found["a"].overlapping_with == {"d": 2}
    assert found["d"].overlapping == 3 and found["d"].overlapping_with == {"a": 2, "c": 1}
    assert evidence.study_overlaps(repo) == 2
    problems = evidence.failures(list(found.values()))
    assert len(problems) == 1 and "2 of 3 samples of study s1's campaign a ran while another campaign measured" \
        in problems[0], "only the study's campaign fails; d and c belong to no study"
    code = cli.main(["verify"])
    out = capsys.readouterr().out
    assert code == 1
    assert "a (study s1): " in out and "2/3 overlapping (d: 2); 1/3 contended (steal median 0.4 %, p90 1.7 %, max 2.0 %); monitors all" in out
    assert "study campaigns: 2 overlapping sample(s) in 3 (1 campaigns; must be 0); 0 evidence campaign(s)" in out
    assert "make rerun CAMPAIGN=a" in out
    assert cli.main(["verify", "data/raw/a"]) == 1 and cli.main(["verify", "data/raw/c"]) == 0


def test_verify_of_a_repository_measured_alone_prints_the_evidence_and_passes(repo, capsys):
    assert cli.main(["verify"]) == 0
    out = capsys.readouterr().out
    assert "evidence (measurement window;" in out and "c (no study): " in out and "contention not recorded" in out


def test_touching_samples_do_not_overlap_and_one_sentence_per_campaign_says_it_all(repo):
    _campaign(repo / "data/raw", "e", "e.yaml", [(10, 20), (30, 40)])  # each starts as a's sample ends
    found = {ev.campaign: ev for ev in evidence.collect(repo / "data/raw", repo)}
    assert found["a"].overlapping == 0 and found["e"].overlapping == 0
    text = evidence.sentence(found["a"])
    assert text.startswith("Campaign a stored 3 samples, measured 2027-01-15 08:00 to 08:00 UTC")
    assert "none of them ran while another campaign measured" in text
    assert "1 of the 3 samples with a contention record were contended" in text and text.endswith("sample.")
    assert "was not recorded" in evidence.sentence(found["e"])
    assert "kernel's threads" not in text, "format 1 records say nothing of the kernel's threads"
    values = evidence.macro_values(list(found.values()))
    assert values["a/evidence/contended"] == "1" and values["a/evidence/sentence"] == text
    from perflab.report import evidence as evidence_tables
    table = evidence_tables.table("s1", list(found.values()))
    assert "\\label{tab:s1-evidence}" in table and "Campaign & a \\\\" in table, "one campaign: set turned"
    assert "Samples & \\num{3}" in table and "Measured (UTC) & 2027-01-15 08:00--08:00" in table
    assert "No sample of these campaigns ran while another campaign measured." in table
    rows = evidence.site_rows(list(found.values()))
    assert [r["campaign"] for r in rows] == ["a", "b", "c", "e"] and rows[0]["study_campaign"] is True


def test_perflab_evidence_prints_the_summary_and_writes_the_chapters_inline_values(repo, capsys):
    assert cli.main(["evidence"]) == 0
    assert "a (study s1): 2027-01-15 08:00 to 08:00 UTC; 0/3 overlapping" in capsys.readouterr().out
    assert cli.main(["evidence", "--macros", "paper/macros/evidence.tex", "--tables", "paper/tables"]) == 0
    text = (repo / "paper/macros/evidence.tex").read_text()
    assert "\\plset{a/evidence/contended}{1}" in text
    assert "tab:s1-evidence" in (repo / "paper/tables/s1-evidence.tex").read_text()
    assert (repo / "paper/tables/s1-evidence.lineage.json").exists()
    assert "\\plset{c/evidence/sentence}{Campaign c stored 1 sample," in text
    assert (repo / "paper/macros/evidence.lineage.json").exists()


def test_the_committed_study_campaigns_were_measured_alone():
    """No sample of a campaign a study declares ran while another committed campaign's sample ran."""
    assert evidence.study_overlaps(Path(__file__).resolve().parents[1]) == 0


def _cells_campaign(raw: Path, name: str, source: str, counts: dict[str, int]) -> None:
    """A campaign whose schedule plans 40 samples (and a warm-up) per cell, of which ``counts`` were stored good
    (one more per cell stored as failed, and the warm-up)."""
    s = RawStore(raw, name)
    ids = {cell: [f"{cell}-r{i:03d}-{i:08x}" for i in range(40)] for cell in counts}
    s.begin(records.CampaignRecord(campaign=name, design_digest="d", spec={"factors": {}}, source=source,
                                   perflab="test", python="3", inventory={},
                                   schedule=[f"{c}-w000-0000abcd" for c in counts] + sum(ids.values(), [])))
    k = 0
    for cell, n in counts.items():
        stored = [(f"{cell}-w000-0000abcd", True, "ok")] + [(ids[cell][i], False, "ok") for i in range(n)]
        stored += [(ids[cell][n], False, "failed")] if n < 40 else []
        for run_id, warmup, status in stored:
            k += 1
            meta = records.SampleMeta(
                campaign=name, run_id=run_id, tool="iperf3", cell={}, cell_index=0, repetition=0, warmup=warmup,
                block=0, position=0, seed=1, attempt=1, status=status, reason=None, roles={}, settle=None,
                neighbours=[], perflab="test", commands=[{"host": "h1", "started": T0 + 5000 + k,
                                                          "ended": T0 + 5000.5 + k}])
            s.put_sample(run_id, {"stdout": "1\n", "stderr": "", "meta.json": meta.to_json()})


def test_a_study_campaign_short_of_40_samples_in_a_tenth_of_its_cells_fails_verify_unless_a_pilot(repo, capsys):
    raw, study_file = repo / "data/raw", repo / "studies/s1/study.yaml"
    study_file.write_text(study_file.read_text() + "  - file: campaigns/f.yaml\n")
    _cells_campaign(raw, "f", "studies/s1/campaigns/f.yaml", {"parallel-1": 40, "parallel-2": 39})
    (ev,) = [e for e in evidence.collect(raw, repo) if e.campaign == "f"]
    assert (ev.cells, ev.cells_full, ev.fewest, ev.too_few) == (2, 1, 39, True), "warm-ups and failures don't count"
    problems = evidence.failures([ev])
    assert len(problems) == 1 and "has 40 or more good samples in 1 of its 2 cells (fewest 39)" in problems[0]
    assert cli.main(["verify", "data/raw/f"]) == 1
    out = capsys.readouterr().out
    assert "40 or more good samples in 1 of its 2 cells" in out and "role: pilot" in out
    study_file.write_text(study_file.read_text() + "    role: pilot\n")
    (ev,) = [e for e in evidence.collect(raw, repo) if e.campaign == "f"]
    assert (ev.role, ev.too_few, evidence.failures([ev])) == ("pilot", False, [])
    assert "f (study s1, pilot): " in "\n".join(evidence.lines([ev]))
    cli.main(["verify", "data/raw/f"])  # (fails for the hand-made campaign's missing ledger, not for its n)
    out = capsys.readouterr().out
    assert "f (study s1, pilot): " in out and "good samples" not in out


def test_nine_full_cells_of_ten_are_enough(tmp_path):
    folder = tmp_path / "studies/s1"
    folder.mkdir(parents=True)
    (folder / "study.yaml").write_text("format: 1\nstudy: s1\ntitle: t\ncampaigns:\n  - file: a.yaml\n")
    (folder / "a.yaml").write_text("")
    _cells_campaign(tmp_path / "raw", "a", "studies/s1/a.yaml", {f"c-{i}": 40 for i in range(9)} | {"c-9": 12})
    (ev,) = evidence.collect(tmp_path / "raw", tmp_path)
    assert (ev.study, ev.cells, ev.cells_full, ev.too_few) == ("s1", 10, 9, False)


def test_every_committed_study_evidence_campaign_holds_40_samples_in_nine_cells_of_ten():
    """The studies' measured evidence: 40 good samples per cell (a pilot or calibration declared as such apart)."""
    root = Path(__file__).resolve().parents[1]
    found = [ev for ev in evidence.collect(root / "data/raw", root) if ev.evidence]
    assert len(found) >= 10
    assert [line for line in evidence.failures(found) if "good samples" in line] == []


def test_the_sentence_tells_the_labs_kernel_work_from_other_processes_and_states_the_steal(tmp_path):
    _campaign(tmp_path, "k", "k.yaml", [(0, 10), (20, 30), (40, 50)], contended=[True, True, False], kernel=True)
    (ev,) = evidence.collect(tmp_path, tmp_path)
    assert ev.kernel_cpus_median == pytest.approx(0.1) and ev.other_cpus_median == pytest.approx(0.2)
    # sample 0: kernel 0.05 of 0.1 outside; sample 1: kernel 0.1 of 0.2 and stress-ng 0.15; sample 2: kernel 0.15 of 0.3
    assert ev.lab_kernel_cpus_median == pytest.approx(0.1) and ev.outside_cpus_median == pytest.approx(0.15)
    assert (ev.contended, ev.contended_steal, ev.contended_outside) == (3, 3, 2)
    assert ev.steal.median == pytest.approx(0.012) and ev.steal.max == pytest.approx(0.021) and ev.noisy
    text = evidence.sentence(ev)
    assert ("3 of the 3 samples with a contention record were contended (3 for steal beyond its bound, 2 for other "
            "processes' CPU beyond its bound)") in text
    assert ("the CPU used outside the lab had a median of 0.20 and a maximum of 0.30 CPUs, of which the lab's own "
            "kernel work (softirq, loop and block workers, writeback) had a median of 0.10 and other processes one "
            "of 0.15 CPUs") in text
    assert ("the hypervisor took median 1.2 %, p90 1.9 %, max 2.1 % of the CPU time during the samples (steal, "
            "beyond the bound of 1 % in the median)") in text
    said = evidence.machine(ev)
    assert "its median above the gate's bound of 1 %" in said and "median 1.2 %" in said


def test_a_machine_is_called_quiet_only_with_its_steal_within_the_bound_and_stated(repo):
    (a,) = [ev for ev in evidence.collect(repo / "data/raw", repo) if ev.campaign == "a"]
    assert a.steal.median == pytest.approx(0.004) and not a.noisy
    assert evidence.machine(a) == ("alone, the hypervisor taking median 0.4 %, p90 1.7 %, max 2.0 % of the CPU time "
                                   "during the samples (steal, its median within the gate's bound of 1 %)")
    values = evidence.macro_values([a])
    assert values["a/evidence/steal/median"] == "0.4" and values["a/evidence/machine"] == evidence.machine(a)


def test_perflab_evidence_json_gives_steal_per_campaign_and_per_cell(repo, capsys):
    assert cli.main(["evidence", "--json"]) == 0
    rows = {r["campaign"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["a"]["steal"] == {"median": 0.004, "p90": pytest.approx(0.0168), "max": 0.02, "n": 3}
    assert set(rows["a"]["steal_cells"]) == {""} and rows["a"]["quiet"] is True and rows["a"]["steal_bound"] == 1.0
    assert rows["c"]["steal"] is None and rows["c"]["quiet"] is None


def test_every_committed_study_campaign_with_a_contention_record_has_steal_figures():
    root = Path(__file__).resolve().parents[1]
    rows = evidence.site_rows(evidence.collect(root / "data/raw", root))
    recorded = [r for r in rows if r["study_campaign"] and r["recorded"]]
    assert len(recorded) >= 15
    assert all(r["steal"] and set(r["steal"]) == {"median", "p90", "max", "n"} and r["steal_cells"] for r in recorded)


def test_no_chapter_or_frame_calls_the_machine_quiet_in_its_own_words():
    """A quiet machine is only ever said by the evidence macro, which states the steal (and says "not" above the
    bound); the prose names the quiet gate, never a quiet machine."""
    root = Path(__file__).resolve().parents[1]
    texts = [*root.glob("studies/*/chapter.tex"), *root.glob("paper/frame/*.tex"), *root.glob("paper/sections/*.tex")]
    said = [f"{p.relative_to(root)}: {line.strip()}" for p in texts for line in p.read_text().splitlines()
            if "quiet machine" in line.lower() or "alone on a quiet" in line.lower()]
    assert said == []
    noisy = evidence.CampaignEvidence("n", "", "s", False, 3, None, None, recorded=3, steal_bound=1.0,
                                      steal=evidence.Spread(0.15, 0.3, 0.4, 3))
    assert "above the gate's bound of 1 %" in evidence.machine(noisy) and "median 15.0 %" in evidence.machine(noisy)


def test_a_cell_is_named_in_words_in_the_steal_sentence():
    assert evidence.cell_words("frame-1518_scenario-stress_firewall_load-idle") == \
        "frame 1518, scenario stress, firewall load idle"
    assert evidence.cell_words("device_class-hdd_workload-randwrite-4k-qd1") == "device class hdd, workload randwrite-4k-qd1"
    assert "_" not in evidence.cell_words("device-ssd-emulated_numjobs-16_iodepth-16")
    labels = {"stressnet": "stress+net"}  # the slug drops the "+" of a declared label
    assert evidence.cell_words("frame-64_scenario-stressnet", labels) == "frame 64, scenario stress+net"


def test_a_committed_campaigns_cells_are_named_by_their_declared_labels():
    root = Path(__file__).resolve().parents[1]
    ev = evidence.campaign(root / "data/raw/pfsense-confirm-64", root)
    assert ev.labels["stressnet"] == "stress+net"
    words = evidence.site_rows([ev])[0]["cell_words"]
    assert words["frame-64_scenario-stressnet"] == "frame 64, scenario stress+net"
    assert "stressnet" not in evidence.steal_words(ev)


def test_the_per_cell_steal_names_its_extreme_cells_only_when_they_differ():
    def ev(*medians: float) -> evidence.CampaignEvidence:
        cells = {f"link-d{i}": evidence.Spread(m, m, m, 40) for i, m in enumerate(medians)}
        return evidence.CampaignEvidence("c", "data/raw/c", "s", False, 80, None, None,
                                         steal=evidence.Spread(0.0, 0.002, 0.037, 80), steal_cells=cells, steal_bound=1.0)

    same = evidence.steal_words(ev(0.0001, 0.0004))  # both 0.0 % as printed
    assert same.endswith("; per cell, the median steal was 0.0 % in every cell") and "ranged" not in same
    differ = evidence.steal_words(ev(0.0, 0.012))
    assert "; per cell, the median steal ranged from 0.0 % (link d0) to 1.2 % (link d1)" in differ
