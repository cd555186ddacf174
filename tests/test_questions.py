"""Pre-registered questions: declared by every seed study, checked at load, frozen with the data, decided."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perflab import questions, verify
from perflab.report import verdicts
from perflab.study import MIN_N
from perflab.stats import verdict
from perflab.stats.verdict import EXPECTED, NOT_TESTABLE, decide, decide_summary, required_n

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ("000-cedri", "001-unnoba-ceph", "002-pfsense-neighbour", "003-openstack-opennebula", "004-aoe-iscsi")
#: Verdict words that only a macro may print next to a claim or question.
VERDICT_WORDS = re.compile(r"\b(supported|unsupported|contradicted|equivalent|inconclusive|confirmed|refuted|"
                           r"reproduced|not reproduced|direction only|not testable here)\b", re.I)
CLAIM_REF = re.compile(r"\b(C\d\d|Q\d+|claims?)\b")


@pytest.mark.parametrize("study", SEEDS)
def test_every_seed_study_declares_questions_with_a_sesoi_and_a_planned_n(study):
    declared, devs = questions.load(f"studies/{study}", ROOT)
    assert declared, f"{study} declares no question"
    for q in declared:
        assert 0 < q.sesoi < 1 and q.sesoi_source in ("seed", "tool", "domain") and q.sesoi_reason
        assert q.n >= MIN_N and q.expected in EXPECTED
        plan = q.planning
        if "cv" not in plan:  # no pilot to take a CV from: the note says so and n is the floor
            assert plan.get("note") and q.n == MIN_N, (q.id, plan)
            continue
        m = plan.get("m", questions.family_size(declared, q))  # the family's size when the plan was made
        assert plan["required_n"] == required_n(q.sesoi, plan["cv"], alpha=q.alpha, m=m, power=plan["power"],
                                                expected=q.expected), q.id
        assert q.n >= plan["required_n"] or plan.get("note") or any(d.question == q.id and d.field == "n" for d in devs), \
            (q.id, q.n, plan)


@pytest.mark.parametrize("study", SEEDS)
def test_every_question_declares_its_testability_and_its_n_or_a_deviation(study):
    """Yes, partly or no with the mechanism and the reason; a question below its own required n is declared
    underpowered before its data or names it under deviations:, and so does a testability declared after the data."""
    declared, devs = questions.load(f"studies/{study}", ROOT)
    fields = {(d.question, d.field) for d in devs}
    for q in declared:
        assert q.testable and q.testable.value in ("yes", "partly", "no") and q.testable.mechanism and q.testable.reason
        if q.planning.get("required_n", 0) > q.n:
            assert (q.id, "n") in fields or q.planning.get("underpowered"), \
                f"{study} {q.id}: n {q.n} below its required n without a deviation"
    assert ("*", "testable") in fields


def _project(tmp_path: Path, study: str = "004-aoe-iscsi") -> Path:
    """A copy of one study with what loading it needs (its campaigns, published files, templates)."""
    root = tmp_path / "p"
    shutil.copytree(ROOT / "studies" / study, root / "studies" / study,
                    ignore=shutil.ignore_patterns("real-hosts"))
    shutil.copytree(ROOT / "notebooks", root / "notebooks")
    (root / "data/raw/published").mkdir(parents=True)
    for f in (ROOT / "data/raw/published").glob(f"{study}-*"):
        shutil.copy(f, root / "data/raw/published" / f.name)
    return root


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_load_names_file_line_and_field_of_a_bad_question(tmp_path):
    root = _project(tmp_path)
    yml = root / "studies/004-aoe-iscsi/study.yaml"
    _edit(yml, "claim: C02", "claim: C99")
    with pytest.raises(questions.QuestionError) as err:
        questions.load("studies/004-aoe-iscsi", root)
    assert re.search(r"study\.yaml:\d+: questions\.1\.claim: 'C99' is not a claim", str(err.value))


def test_a_study_with_a_claims_file_takes_a_seed_line_with_its_quote_for_a_statement_the_file_lacks(tmp_path):
    """The claims file is raw data: a statement it does not hold (a figure's reading) is named by its seed line and
    quoted; a seed line without a quote is refused."""
    root = _project(tmp_path)
    yml = root / "studies/004-aoe-iscsi/study.yaml"
    _edit(yml, "claim: C02", "claim: 'seed:7'")
    with pytest.raises(questions.QuestionError) as err:
        questions.load("studies/004-aoe-iscsi", root)
    assert re.search(r"study\.yaml:\d+: questions\.1\.claim: 'seed:7' is not a claim of the study's claims file; "
                     r"use one of .*, or 'seed:<line>' with a `quote:`", str(err.value))
    _edit(yml, "claim: 'seed:7'", "claim: 'seed:7'\n  quote: the same result")
    declared, _ = questions.load("studies/004-aoe-iscsi", root)
    assert next(q for q in declared if q.id == "Q2").claim == "seed:7"


def test_a_question_changed_after_its_data_fails_verify_unless_declared(tmp_path):
    root = _project(tmp_path)
    declared, _ = questions.load("studies/004-aoe-iscsi", root)
    record = questions.for_campaign_file(root / "studies/004-aoe-iscsi/campaigns/004-confirm-protocols.yaml",
                                         "004-confirm-protocols")
    assert json.loads(record)["digest"] == questions.digest([q for q in declared if q.campaign == "004-confirm-protocols"])
    raw = root / "data/raw/004-confirm-protocols"
    raw.mkdir(parents=True)
    (raw / questions.RECORD).write_text(record)
    assert questions.frozen_problems(root) == []
    yml = root / "studies/004-aoe-iscsi/study.yaml"
    _edit(yml, "sesoi: {value: 0.05, source: domain, reason: 'as in Q1: within", "sesoi: {value: 0.1, source: domain, reason: 'as in Q1: within")
    problems = questions.frozen_problems(root)
    assert len(problems) == 1 and "question Q2 field sesoi changed" in problems[0][1]
    assert any("question Q2 field sesoi" in f.problem for f in verify.repository(root).findings)
    _edit(yml, "deviations:\n", "deviations:\n  - {question: Q2, field: sesoi, reason: the tool's precision was "
                                "found to be 8 % before the confirmatory run}\n")
    assert questions.frozen_problems(root) == []
    _, devs = questions.load("studies/004-aoe-iscsi", root)
    assert "the tool's precision" in verdicts.deviations_tex(devs, caption="c", label="l")


def test_a_field_added_after_the_data_is_a_change_unless_declared_and_a_default_one_is_none():
    """A record frozen before testability existed: the declared testability is a change (a deviation, for one
    question or for every question with '*'); a new field left at its default (no replication) is none."""
    declared, _ = questions.load("studies/004-aoe-iscsi", ROOT)
    own = [q for q in declared if q.campaign == "004-confirm-protocols"]
    record = json.loads(questions.freeze("004-aoe-iscsi", "004-confirm-protocols", own))
    for frozen in record["questions"]:
        frozen.pop("testable")
    assert "replication" not in record["questions"][0]
    found = questions.changes(record, declared, [])
    assert len(found) == len(own) and all("field testable changed" in t for t in found)
    assert questions.changes(record, declared, [questions.Deviation("Q1", "testable", "r")]) == found[1:]
    assert questions.changes(record, declared, [questions.Deviation("*", "testable", "r")]) == []
    # the committed records predate testability: every study declares it as a deviation, and verify is clean
    assert questions.frozen_problems(ROOT) == []


def test_a_question_below_its_required_n_is_refused_unless_declared_underpowered(tmp_path):
    root = _project(tmp_path)
    yml = root / "studies/004-aoe-iscsi/study.yaml"
    text = yml.read_text()
    deviations = text[text.index("deviations:"):]
    kept = "".join(line + "\n" for line in deviations.splitlines()[1:] if "field: n," not in line)
    yml.write_text(text[:text.index("deviations:")] + "deviations:\n" + kept)
    with pytest.raises(questions.QuestionError) as err:
        questions.load("studies/004-aoe-iscsi", root)
    assert re.search(r"study\.yaml:\d+: questions\.0\.n: 40 is below the planning's required_n 8512", str(err.value))
    assert str(err.value).count("below the planning's required_n") == 3
    yml.write_text(re.sub(r"power: 0\.8, required_n: (\d+), note:", r"power: 0.8, underpowered: only 40 fit, required_n: \1, note:",
                          yml.read_text(), count=3))  # Q1-Q3, the questions measured below their n
    assert len(questions.load("studies/004-aoe-iscsi", root)[0]) >= 3


def test_a_family_that_separates_two_looks_at_one_claim_is_refused(tmp_path):
    root = _project(tmp_path, "002-pfsense-neighbour")
    yml = root / "studies/002-pfsense-neighbour/study.yaml"
    text = yml.read_text()
    at = text.index("- id: Q9")
    yml.write_text(text[:at] + text[at:].replace("family: pfsense-confirm-ping", "family: pfsense-latency-idle", 1))
    with pytest.raises(questions.QuestionError) as err:
        questions.load("studies/002-pfsense-neighbour", root)
    assert re.search(r"study\.yaml:\d+: questions\.8\.family: 'pfsense-latency-idle' separates this look at claim C18 "
                     r"from Q5 \(family 'pfsense-confirm-ping'\)", str(err.value))
    assert any("separates this look" in text for _, text in questions.frozen_problems(root))
    assert any("separates this look" in f.problem for f in verify.repository(root).findings)  # perflab verify refuses
    text = yml.read_text()
    at = text.index("- id: Q9")
    yml.write_text(text[:at] + text[at:].replace("  family: pfsense-latency-idle\n", "  family: pfsense-latency-idle\n"
                                                 "  replication: its own campaign, measured after Q5 was decided\n", 1))
    declared, _ = questions.load("studies/002-pfsense-neighbour", root)
    assert next(q for q in declared if q.id == "Q9").replication


def _blocked(effect: float, sd: float, blocks: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for b in range(blocks):
        shift = rng.normal(0, 5)
        rows += [{"block": b, "cell": "a", "v": 100 + shift + rng.normal(0, sd)},
                 {"block": b, "cell": "b", "v": 100 * (1 + effect) + shift + rng.normal(0, sd)}]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("effect, sd, blocks, expected, verdict", [
    (-0.20, 2.0, 40, "lower", "supported"),
    (+0.20, 2.0, 40, "lower", "contradicted"),
    (+0.001, 0.5, 40, "lower", "contradicted"),  # a negligible change on a directional claim: never "equivalent"
    (-0.03, 0.5, 40, "lower", "contradicted"),  # shown in the claimed direction, and shown to be under the SESOI
    (-0.05, 6.0, 40, "lower", "direction only"),  # shown in the claimed direction, not shown to reach the SESOI
    (-0.02, 10.0, 5, "lower", "inconclusive"),
    (0.0, 0.5, 40, "equivalent", "equivalent"),
    (-0.30, 1.0, 40, "equivalent", "contradicted"),
    (-0.05, 10.0, 5, "equivalent", "inconclusive"),
])
def test_the_data_decide_the_verdict(effect, sd, blocks, expected, verdict):
    d = decide(_blocked(effect, sd, blocks), value="v", factor="cell", a="a", b="b", expected=expected, sesoi=0.05, m=2)
    assert d.verdict == verdict and d.test == "paired t" and d.m == 2 and d.ci_level == pytest.approx(0.975)


def test_a_question_the_lab_cannot_test_gets_no_verdict_but_its_numbers():
    d = decide(_blocked(-0.20, 2.0, 40), value="v", factor="cell", a="a", b="b", expected="lower", sesoi=0.05,
               testable="no")
    assert d.verdict == NOT_TESTABLE and d.rel_diff < -0.15 and d.ci_high < -0.05 and d.testable == "no"
    s = decide_summary((100.0, 2.0, 40), (130.0, 3.0, 40), expected="higher", sesoi=0.05, testable="no")
    assert s.verdict == NOT_TESTABLE and s.rel_diff == pytest.approx(0.30)


def test_a_question_on_a_published_table_is_decided_from_its_summaries():
    """Welch's t and TOST from mean, SD and n: a large difference is supported, a tiny one within the SESOI is
    equivalent, and the p-value is scipy's."""
    from scipy import stats

    big = decide_summary((100.0, 2.0, 40), (130.0, 3.0, 40), expected="higher", sesoi=0.05, m=1)
    assert big.verdict == "supported" and big.rel_diff == pytest.approx(0.30) and big.ci_low > 0.25
    assert big.p_value == pytest.approx(stats.ttest_ind_from_stats(130, 3, 40, 100, 2, 40, equal_var=False).pvalue)
    tiny = decide_summary((100.0, 1.0, 40), (100.3, 1.0, 40), expected="equivalent", sesoi=0.02, m=2)
    assert tiny.verdict == "equivalent" and tiny.tost_p < 0.025 and tiny.ci_level == pytest.approx(0.975)
    assert "published summaries" in tiny.notes[0]
    wide = decide_summary((100.0, 40.0, 40), (101.0, 40.0, 40), expected="equivalent", sesoi=0.02)
    assert wide.verdict == "inconclusive"


def test_a_published_question_names_a_published_table_and_an_existing_row(tmp_path):
    root = _project(tmp_path, "003-openstack-opennebula")
    yml = root / "studies/003-openstack-opennebula/study.yaml"
    declared, _ = questions.load("studies/003-openstack-opennebula", root)
    published = [q for q in declared if q.published]
    assert published and all(q.test == "welch" and q.campaign == "" for q in published)
    q = published[0]
    _edit(yml, f"item: {q.item}", "item: No Such Benchmark")
    with pytest.raises(questions.QuestionError, match=r"study\.yaml:\d+: questions\.\d+\.published: no row with name "
                                                      "'No Such Benchmark'"):
        questions.load("studies/003-openstack-opennebula", root)


def test_verdicts_of_a_study_are_written_as_table_and_macros(tmp_path):
    from perflab import tidy
    tables = {c: tidy.frame(ROOT / "data/raw" / c)[0] for c in ("004-confirm-protocols", "004-confirm-mtu")}
    out = verdicts.write("studies/004-aoe-iscsi", ROOT, paper_dir=tmp_path, tables=tables, inputs=[], generator="test")
    text = out["macros"].read_text()
    words = re.findall(r"\\plset\{004-aoe-iscsi/verdict/Q\d\}\{([\w ]+)\}", text)
    # a Python AoE initiator against libiscsi: no verdict on the protocols; the wire-like links' questions
    # (Q4, Q5), declared before their campaign's data, wait for it
    assert words == [NOT_TESTABLE] * 3 + [verdicts.PENDING] * 2
    assert "\\plset{004-aoe-iscsi/verdicts/counts}{3 not testable here" in text
    powers = re.findall(r"\\plset\{004-aoe-iscsi/verdict/Q\d/power\}\{([\d.]+)\}", text)
    assert len(powers) >= 3 and all(0 <= float(p) <= 1 for p in powers)
    table_text = out["verdicts"].read_text()
    assert "\\plv{004-aoe-iscsi/verdict/Q1}" in table_text and "Secondary metrics" in table_text
    assert "Testable" in table_text and "Power" in table_text and "004-confirm-protocols" in table_text
    assert "Testability: Q1: no, the lab's AoE initiator is a Python program" in table_text
    # the interval's level in the header (its range: Q1, Q2 in a family of two, Q3 alone), each question's in a note
    assert "Change\\\\{}{[}95--97.5\\,\\% CI{]}" in table_text and "adj. CI" not in table_text
    assert "Levels of the adjusted intervals (Bonferroni over each question's family): Q1, Q2: 97.5\\,\\%; Q3: 95\\,\\%." \
        in table_text
    assert "\\plset{004-aoe-iscsi/verdict/Q1/level}{(97.5\\,\\%)}" in text
    assert "\\plset{004-aoe-iscsi/verdict/Q4/level}{}" in text, "no data: no level"


def test_a_verdict_table_of_more_than_four_questions_is_one_long_table(tmp_path):
    out = verdicts.write("studies/002-pfsense-neighbour", ROOT, paper_dir=tmp_path, tables={}, inputs=[],
                         generator="test")
    text = out["verdicts"].read_text()
    assert r"\plfloat" not in text and r"\pllong" in text and "questions Q1--" not in text
    assert set(re.findall(r"\\label\{([^}]*)\}", text)) == {"tab:002-pfsense-neighbour-verdicts"}
    whole = text.split(r"\pllong{")[1].split(r"\end{longtable}")[0]
    assert all(f"\\plv{{002-pfsense-neighbour/verdict/Q{k}}}" in whole for k in range(1, 14))
    assert "rtt_avg" not in text and "firewall_load" not in text and "mean round-trip time" in text
    devs = out["deviations"].read_text()
    assert "Q1, Q3, Q4 &" in devs and devs.count("the family grew to five") == 1


@pytest.mark.parametrize("study", SEEDS)
def test_chapters_take_verdicts_from_macros_only(study):
    """A verdict word typed within a sentence of a claim or question id must come from \\plv."""
    text = (ROOT / "studies" / study / "chapter.tex").read_text()
    assert f"tables/{study}-verdicts.tex" in text and f"tables/{study}-deviations.tex" in text
    prose = re.sub(r"\\(plv|ref|label|plinput)\{[^}]*\}", "MACRO", text)
    prose = "\n".join(line.split("%")[0] for line in prose.splitlines())
    for sentence in re.split(r"(?<=[.;:])\s+", prose):
        if CLAIM_REF.search(sentence):
            typed = VERDICT_WORDS.findall(sentence)
            assert not typed, f"{study}: hand-typed verdict {typed} in: {sentence.strip()[:200]}"


@pytest.mark.parametrize("study", SEEDS)
def test_chapters_speak_of_the_machine_not_of_how_they_were_made(study):
    text = (ROOT / "studies" / study / "chapter.tex").read_text().lower()
    assert not re.search(r"(?<!ssh )(?<!iscsi )\bsessions?\b|\bhelpers?\b|\bagents? (?:wrote|made|ran)", text)


def test_the_schema_refuses_a_question_with_too_few_samples(tmp_path):
    from perflab import study
    root = _project(tmp_path)
    yml = root / "studies/004-aoe-iscsi/study.yaml"
    _edit(yml, "  n: 40\n", "  n: 12\n")
    with pytest.raises(study.StudyError, match=r"study\.yaml:\d+: questions\.0\.n"):
        questions.load("studies/004-aoe-iscsi", root)


def test_a_pilot_or_calibration_decides_no_question(tmp_path):
    root = _project(tmp_path)
    yml = root / "studies/004-aoe-iscsi/study.yaml"
    _edit(yml, "campaigns/004-confirm-protocols.yaml\n    inventory: labfile:labs/004-aoe-iscsi.yaml\n    planned: true\n",
          "campaigns/004-confirm-protocols.yaml\n    inventory: labfile:labs/004-aoe-iscsi.yaml\n    planned: true\n"
          "    role: pilot\n")
    with pytest.raises(questions.QuestionError) as err:
        questions.load("studies/004-aoe-iscsi", root)
    assert re.search(r"study\.yaml:\d+: questions\.0\.campaign: '004-confirm-protocols' is declared `role: pilot`",
                     str(err.value))
    _edit(yml, "    role: pilot\n", "    role: warm-up\n")
    from perflab import study
    with pytest.raises(study.StudyError, match=r"study\.yaml:\d+: campaigns\.0\.role"):
        questions.load("studies/004-aoe-iscsi", root)


def test_the_runner_freezes_the_questions_with_the_first_sample(tmp_path, monkeypatch):
    import os

    from perflab import campaign as campaign_mod, inventory, runner, tools
    monkeypatch.setitem(tools.REGISTRY, "probe", "helpers:Probe")
    root = tmp_path / "p"
    (root / "studies/demo/campaigns").mkdir(parents=True)
    (root / "studies/demo/campaigns/c.yaml").write_text(
        "campaign: frozen\nbenchmark: {tool: probe}\nprograms: [cmd]\nhosts: {client: h1}\n"
        "factors: {cmd: ['echo 1', 'echo 2']}\nrepetitions: 1\nwarmups: 0\nseed: 1\n"
        "fingerprints: false\n")
    question = ("  - {id: Q1, claim: 'seed:1', quote: q, campaign: frozen, metric: value, factor: cmd, baseline: 'echo 1',\n"
                "     versus: 'echo 2', expected: higher, sesoi: {value: 0.05, source: domain, reason: r}, n: 40,\n"
                "     testable: {value: 'yes', mechanism: m, reason: r}}\n")
    decl = root / "studies/demo/study.yaml"
    decl.write_text("format: 1\nstudy: demo\ntitle: t\ndemo: true\ncampaigns:\n  - {file: campaigns/c.yaml}\n"
                    f"questions:\n{question}")
    c = campaign_mod.load(root / "studies/demo/campaigns/c.yaml")
    runner.run(c, inventory.localhost(), tmp_path / "raw", stream=open(os.devnull, "w"), limit=1)
    record = questions.read_record(tmp_path / "raw/frozen" / questions.RECORD)
    assert [q["id"] for q in record["questions"]] == ["Q1"] and record["questions"][0]["sesoi"] == 0.05
    decl.write_text(decl.read_text().replace("value: 0.05", "value: 0.2"))
    runner.run(c, inventory.localhost(), tmp_path / "raw", stream=open(os.devnull, "w"))  # resumes
    again = questions.read_record(tmp_path / "raw/frozen" / questions.RECORD)
    assert again == record  # written once, with the first sample; the change is visible to verify
    declared, devs = questions.load("studies/demo", root)
    assert any("field sesoi changed" in t for t in questions.changes(again, declared, devs))


def test_a_note_shared_by_questions_is_said_once_with_its_numbers_per_question():
    note = "normality is rejected (Shapiro-Wilk p < 0.001); robust at n = {} unless skewed"
    said = verdicts._grouped([("Q1", note.format(80)), ("Q2", note.format(40)), ("Q3", "loss"), ("Q4", "loss")])
    assert said.count("normality is rejected") == 1
    assert "Q1, Q2: normality is rejected (Shapiro-Wilk p < 0.001); robust at n = 80 in Q1 and 40 in Q2" in said
    assert "Q3, Q4: loss" in said and " x" not in said
    said = verdicts._grouped([("Q1", "n = 40"), ("Q2", "n = 40"), ("Q3", "n = 78"), ("Q8", "no data of pfsense-64 yet"),
                              ("Q9", "no data of pfsense-8192 yet")])
    assert "Q1, Q2, Q3: n = 40 in Q1 and Q2 and 78 in Q3" in said
    assert "Q8: no data of pfsense-64 yet; Q9: no data of pfsense-8192 yet" in said


def test_the_planning_floor_of_the_statistics_is_the_study_schemas_minimum_n():
    assert verdict.MIN_N == MIN_N
