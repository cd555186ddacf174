"""The paper's frame: a bibliography of every seed study, build metadata, no Type 3 fonts."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from perflab.report import frame, leftovers, macros

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ("seed000", "seed001", "seed002", "seed003", "seed004")


def test_every_seed_study_has_an_entry_and_is_cited():
    bib = (ROOT / "paper/references.bib").read_text()
    ids = re.findall(r"ids\s*=\s*\{(seed\d{3})\}", bib)
    assert sorted(ids) == list(SEEDS)
    cited = set(re.findall(r"\\cite\{(seed\d{3})\}", (ROOT / "paper/main.tex").read_text()))
    assert cited == set(SEEDS)


def test_build_macros_name_version_commit_and_date(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    path = macros.write_build(tmp_path / "build.tex", root=ROOT)
    text = path.read_text()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert f"\\plset{{build/commit}}{{{head[:12]}}}" in text
    assert "\\plset{build/date}{2023-11-14}" in text and "\\plset{build/version}{0.1.0}" in text
    assert (tmp_path / "build.lineage.json").exists()


TOOLS = ("latexmk", "biber", "pdffonts", "pdfinfo", "pdftotext")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The paper built once for this module from its tracked sources (never what a pipeline run generated) and the
    frame's generated macros; its directory, the latexmk run and the PDF's text."""
    if not all(shutil.which(t) for t in TOOLS):
        pytest.skip("needs latexmk, biber and poppler-utils")
    tmp_path = tmp_path_factory.mktemp("paper-build")
    paper = tmp_path / "paper"
    tracked = subprocess.run(["git", "ls-files", "paper"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in tracked.stdout.split():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    macros.write_build(paper / "macros/build.tex", root=ROOT)
    run = subprocess.run(["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "main.tex"], cwd=paper,
                         capture_output=True, text=True, timeout=300)
    text = subprocess.run(["pdftotext", "-layout", "main.pdf", "-"], cwd=paper, capture_output=True,
                          text=True).stdout if run.returncode == 0 else ""
    return paper, run, text


@pytest.mark.slow
def test_the_paper_builds_with_metadata_bibliography_and_no_type3_font(built):
    paper, run, text = built
    assert run.returncode == 0, run.stdout[-3000:]
    fonts = subprocess.run(["pdffonts", "main.pdf"], cwd=paper, capture_output=True, text=True).stdout
    assert "Type 3" not in fonts and "Type 1" in fonts
    info = subprocess.run(["pdfinfo", "main.pdf"], cwd=paper, capture_output=True, text=True).stdout
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert f"git commit {head}" in info and "perflab 0.1.0" in info
    log = (paper / "main.log").read_text(errors="replace")
    assert not re.search(r"Citation .* undefined|could not be found", log)
    bbl = (paper / "main.bbl").read_text()
    for name in ("Rocha", "Delacre", "Schuirmann", "Kalibera", "Hoefler", "Georges", "Lakens", "Fieller"):
        assert name in bbl, name
    from perflab.report import frame

    assert frame.undefined_citations(paper / "main.log") == []
    for heading in ("Abstract", "List of Figures", "List of Tables", "Introduction", "Research questions",
                    "Contributions", "Related work", "Method", "Summary of the verdicts", "Conclusion",
                    "Limitations", "Future work", "Seed study", "[Author: set author in config/config.yaml]",
                    "[Degree: set degree in config/config.yaml]"):
        assert heading in text, heading
    assert text.index("Summary of the verdicts") < text.rindex("Conclusion")
    for topic in ("randomized multiple", "Fieller", "Bonferroni", "TOST", "SESOI", "minimum detectable", "steal",
                  "hash", "manifest", "PerfKit", "pbench", "ReBench", "airspeed velocity", "pyperf", "Popper",
                  "showyourwork", "namespaces", "emulated"):
        assert topic in " ".join(text.split()), topic


def test_the_leftover_patterns_find_template_text_and_spare_prose():
    bad = ("Shapiro-Wilk p < x at n = x", "change of b versus against baseline", "3 item(s) unreadable",
           "scipy.stats.ttest_ind_from_stats", "against parallel=1", "declared in study.yaml (questions:)",
           "a mean of nan", "p: None", "[x per question: Q5: 0.002]", "(declarations.yaml, questions:)",
           "Change [adj. CI] s: steal-adj.")
    assert [len(leftovers.find(line)) for line in bad] == [2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
    assert leftovers.find("Welch's t of 4 streams against 1 stream, p < 0.001 at n = 40 (the seed study's claim). "
                          "None of the tools states it.") == []


def test_a_name_the_sources_set_in_typewriter_type_is_code_on_purpose(tmp_path):
    (tmp_path / "c.tex").write_text("with \\texttt{rbd\\_cache\\_writethrough} at its default")
    allowed = leftovers.typewriter([tmp_path / "c.tex"])
    assert allowed == {"rbd_cache_writethrough"}
    assert leftovers.find("with rbd_cache_writethrough at its default", allowed) == []
    assert len(leftovers.find("with rbd_cache at its default, lat_mean", allowed)) == 1


@pytest.mark.skipif(not all(shutil.which(t) for t in ("pdflatex", "pdftotext")), reason="needs pdflatex, pdftotext")
def test_the_paper_check_fails_on_a_leftover_naming_its_page(tmp_path):
    (tmp_path / "t.tex").write_text("\\documentclass{article}\\begin{document}A page.\\clearpage\n"
                                    "Then n = x samples.\\end{document}\n")
    subprocess.run(["pdflatex", "-interaction=nonstopmode", "t.tex"], cwd=tmp_path, capture_output=True, timeout=120)
    (tmp_path / "t.log").write_text("")  # no undefined citation
    assert leftovers.check(tmp_path / "t.pdf") == ["page 2: placeholder sample size: Then n = x samples."]
    with pytest.raises(SystemExit, match=r"t.pdf: 1 line\(s\) .*\npage 2: placeholder sample size"):
        frame.check(tmp_path / "t.log", tmp_path / "t.pdf")


@pytest.mark.slow
def test_the_built_paper_has_no_template_leftovers(built):
    paper, run, _ = built
    assert run.returncode == 0, run.stdout[-3000:]
    assert leftovers.check(paper / "main.pdf") == []
    frame.check(paper / "main.log", paper / "main.pdf")  # the build's last step passes


def _cited(text: str) -> set[str]:
    return {k.strip() for keys in re.findall(r"\\(?:no)?cite[pt]?\*?(?:\[[^\]]*\])*\{([^}]+)\}", text)
            for k in keys.split(",")}


def test_every_work_the_paper_cites_has_a_complete_entry():
    bib = (ROOT / "paper/references.bib").read_text()
    entries = dict(re.findall(r"@\w+\{([^,]+),(.*?)\n\}", bib, re.S))
    keys = set(entries) | set(re.findall(r"ids\s*=\s*\{([^}]+)\}", bib))
    sources = [*ROOT.glob("paper/**/*.tex"), *ROOT.glob("studies/*/chapter.tex")]
    cited = set().union(*(_cited(p.read_text()) for p in sources))
    assert {"delacre2017", "jiangang2013"} <= cited
    assert cited <= keys, cited - keys
    from perflab.report import latex
    assert set(latex.WORKS.values()) <= keys
    for key in ("delacre2017", "jiangang2013"):
        assert re.search(r"\bauthor\s*=", entries[key]) and re.search(r"\bdate\s*=", entries[key]), key
    assert re.search(r"doi\s*=\s*\{10\.5334/irsp\.82\}", entries["delacre2017"])


def test_every_article_has_a_date_so_no_empty_parentheses_are_printed():
    """biblatex prints an @article's year in parentheses after the journal: without a date, "()" reaches the PDF."""
    bib = (ROOT / "paper/references.bib").read_text()
    articles = re.findall(r"@article\{([^,]+),(.*?)\n\}", bib, re.S)
    assert articles
    undated = [key for key, body in articles if not re.search(r"\b(date|year)\s*=", body)]
    assert not undated, f"@article entries without a date (use @misc with howpublished): {undated}"


def test_a_note_naming_a_work_cites_it():
    from perflab.report import latex

    table = latex.float_table("x", caption="c", label="l", note="Welch's t (default, Delacre et al. 2017).")
    assert "Delacre et al.~\\cite{delacre2017}" in table


def test_the_frame_takes_author_and_institution_from_the_configuration(tmp_path):
    from perflab.report import frame

    (tmp_path / "config.yaml").write_text("kernel: perflab\ninventory: lab\nauthor: Ana Pérez & Co\n"
                                          "institution: Universidad_X\n")
    written = frame.write(tmp_path / "paper", tmp_path / "config.yaml")
    text = written[0].read_text()
    assert "\\plset{frame/author}{Ana Pérez \\& Co}" in text and "\\plset{frame/institution}{Universidad\\_X}" in text
    assert "not generated yet" in written[1].read_text()
    main = (ROOT / "paper/main.tex").read_text()
    assert "\\plvor{frame/author}" in main and "\\plvor{frame/institution}" in main
    for part in ("frame/abstract", "frame/introduction", "\\listoffigures", "\\listoftables"):
        assert part in main, part
    summary = (ROOT / "paper/frame/summary.tex").read_text()
    assert "\\input{tables/verdicts-summary.tex}" in summary and "macros/verdicts-pending.tex" in summary


def test_the_build_fails_on_an_undefined_citation(tmp_path):
    from perflab.report import frame

    log = tmp_path / "main.log"
    log.write_text("LaTeX Warning: Citation 'nosuch2020' on page 3 undefined on input line 12.\n"
                   "Package biblatex Warning: Please rerun LaTeX.\nLaTeX Warning: Citation 'other' undefined on in\n"
                   "put line 40.\n")
    assert frame.undefined_citations(log) == ["nosuch2020", "other"]
    with pytest.raises(SystemExit, match="2 citation.* nosuch2020, other; add them to paper/references.bib"):
        frame.check(log)
    log.write_text("LaTeX Warning: Reference `tab:x' on page 2 undefined on input line 3.\n")
    frame.check(log)
    assert "frame.check()" in (ROOT / "rules/paper.smk").read_text()


def test_a_negative_number_in_a_text_column_gets_a_true_minus():
    import pandas as pd

    from perflab.report import latex

    tex = latex.tabular(pd.DataFrame({"Level": ["a", "b"], "Change": ["-0.5", "n/a"], "Range": ["-3--4", "x"]}))
    assert "\\num{-0.5}" in tex and "-3--4" in tex and "\\num{-3" not in tex
    assert "\\DisableLigatures[-]{encoding=T1, family=tt*}" in (ROOT / "paper/perflab.sty").read_text()


def test_a_wide_table_of_a_few_rows_gets_two_column_sets_keyed_by_its_row_names():
    import pandas as pd

    from perflab.report import latex

    frame = pd.DataFrame({"Device": ["hdd", "ssd", "nvme"], "Size": ["4k", "64k", "1M"],
                          **{f"M{i}": [1.5, 2.5, -3.5] for i in range(6)}})
    assert latex.auto_column_sets(frame) == [["Device", "Size", "M0", "M1", "M2"], ["Device", "Size", "M3", "M4", "M5"]]
    tex = latex.latex_table(frame, caption="c", label="l")
    assert tex.count("\\begin{plfit}") == 2 and tex.count("\\begin{tabular}") == 3
    assert latex.auto_column_sets(frame.iloc[:, :5]) == []


def test_the_cross_study_summary_has_a_row_per_question_and_types_no_verdict():
    from perflab import questions, study
    from perflab.report import frame

    table = frame.summary_table(ROOT)
    declared = [(s.id, q.id) for s in study.discover(ROOT, demos=False)
                for q in questions.load(ROOT / s.folder, ROOT)[0]]
    assert len(declared) >= 5
    for sid, qid in declared:
        assert f"\\plv{{{sid}/verdict/{qid}}}" in table
        assert f"\\plv{{{sid}/verdict/{qid}/ci}} \\plv{{{sid}/verdict/{qid}/level}} &" in table, "each row's level"
    body = table.split("\\midrule", 1)[1].split("\\bottomrule", 1)[0]
    rows = [line.rstrip("\\") for line in body.strip().splitlines()]
    assert len(rows) == len(declared)
    for row in rows:  # the verdict (last cell) is a macro; "equivalent" may be typed only as the expected outcome
        *cells, verdict = row.split(" & ")
        assert re.fullmatch(r"\\plv\{[^}]+/verdict/Q\d+\}", verdict), row
        typed = " ".join(cells[:3] + cells[4:]).lower()
        for word in ("supported", "contradicted", "equivalent", "inconclusive", "direction only", "not testable"):
            assert word not in typed, f"a verdict word typed into the summary: {row}"
    header = table.split("\\toprule", 1)[1].split("\\midrule", 1)[0]
    for column in ("Expected", "Change {[}CI{]} (its level)", "SESOI", "Data", "Testable", "Power", "Verdict"):
        assert column in header
    assert all("& published &" in line for line in body.splitlines() if "003-openstack-opennebula/verdict" in line)
    assert "& rerun pfsense-confirm-64 &" in body
    studies = {sid for sid, _ in declared}  # each study's counts before the table, from its macros
    assert table.count("\\item ") == len(studies)
    for sid in studies:
        assert f"\\plv{{{sid}/verdicts/questions}} questions" in table and f"\\plv{{{sid}/verdicts/inconclusive}}" in table
        assert f"\\plv{{{sid}/verdicts/not-testable-here}} not testable here" in table


def test_the_abstract_and_conclusion_findings_are_the_studies_macros_summed_and_listed(tmp_path):
    from perflab import questions, study
    from perflab.report import frame

    found = frame.findings(ROOT)
    declared = [(s.id, q.id) for s in study.discover(ROOT, demos=False)
                for q in questions.load(ROOT / s.folder, ROOT)[0]]
    studies = list(dict.fromkeys(sid for sid, _ in declared))
    for word in ("questions", "supported", "direction-only", "equivalent", "contradicted", "inconclusive",
                 "not-testable-here", "pending"):  # each count summed over the studies by TeX, none typed
        total = "\\the\\numexpr" + "+".join(f"\\plvor{{{sid}/verdicts/{word}}}{{0}}" for sid in studies)
        assert total in found["frame/findings"], word
    for sid, qid in declared:
        assert f"\\plv{{{sid}/verdict/{qid}}}\\plunlesspending{{{sid}/verdict/{qid}}}{{," in found["frame/per-study"]
    for sid in studies:
        assert f"\\plv{{{sid}/verdicts/counts}}" in found["frame/findings"]
    typed = re.sub(r"\\plv(or)?\{[^}]*\}", "", found["frame/per-study"]).lower()
    assert not re.search(r"\b(supported|contradicted|equivalent|inconclusive|direction only|not testable)\b", typed)
    (tmp_path / "config.yaml").write_text("kernel: perflab\ninventory: lab\n")
    text = frame.write(tmp_path / "paper", tmp_path / "config.yaml", root=ROOT)[0].read_text()
    assert "\\plset{frame/degree}{[Degree: set degree in config/config.yaml]}" in text
    assert "\\plset{frame/findings}{\\ifcsname plv@" in text


def _typeset(tmp_path: Path, preamble: str, body: str) -> str:
    """The words of a one-page document typeset with the paper's package, ``preamble`` before the body."""
    shutil.copy(ROOT / "paper/perflab.sty", tmp_path)
    (tmp_path / "t.tex").write_text("\\documentclass{article}\\usepackage{caption}\\usepackage{perflab}\n"
                                    f"{preamble}\n\\begin{{document}}{body}\n\\end{{document}}\n")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "t.tex"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
    return " ".join(subprocess.run(["pdftotext", "t.pdf", "-"], cwd=tmp_path, capture_output=True,
                                   text=True).stdout.split())


@pytest.mark.skipif(not shutil.which("pdflatex") or not shutil.which("pdftotext"), reason="needs pdflatex, pdftotext")
def test_several_verdicts_that_agree_are_said_once(tmp_path):
    text = _typeset(tmp_path, "\\plset{a}{inconclusive}\\plset{b}{inconclusive}\\plset{c}{inconclusive}\\plset{d}{supported}",
                    "X: \\plvwords{a,b,c}. Y: \\plvwords{a,d,c}. Z: \\plvwords{a,b}. W: \\plvwords{d}.")
    assert ("X: all three inconclusive. Y: inconclusive, supported and inconclusive. Z: both inconclusive. "
            "W: supported.") in text


@pytest.mark.skipif(not shutil.which("pdflatex") or not shutil.which("pdftotext"), reason="needs pdflatex, pdftotext")
def test_a_question_not_yet_measured_states_no_change(tmp_path):
    """The conclusion's line per question: a change and its interval once measured, nothing (no dash) before."""
    text = _typeset(
        tmp_path,
        "\\plset{s/verdict/Q1}{supported}\\plset{s/verdict/Q1/change}{+11.7 \\%}\\plset{s/verdict/Q1/ci}{[8.06 \\%, 15.5 \\%]}"
        "\\plset{s/verdict/Q2}{not yet measured}\\plset{s/verdict/Q2/change}{--}\\plset{s/verdict/Q2/ci}{}",
        " ".join(f"{q}: \\plv{{s/verdict/{q}}}\\plunlesspending{{s/verdict/{q}}}{{, change \\plv{{s/verdict/{q}/change}} "
                 f"\\plv{{s/verdict/{q}/ci}}}}." for q in ("Q1", "Q2")))
    assert "Q1: supported, change +11.7 % [8.06 %, 15.5 %]. Q2: not yet measured." in text, text
    assert "\\plunlesspending{000-cedri/verdict/Q1}{, change" in frame.findings(ROOT)["frame/per-study"]


@pytest.mark.parametrize("part", sorted(p.name for p in (ROOT / "paper/frame").glob("*.tex")))
def test_the_frame_types_no_verdict_beside_a_question(part):
    """The frame's findings are generated macros: no verdict word typed in a sentence naming a question."""
    text = re.sub(r"\\(plv|plvor|ref|label|plinput)\{[^}]*\}", "MACRO", (ROOT / "paper/frame" / part).read_text())
    text = "\n".join(line.split("%")[0] for line in text.splitlines())
    for sentence in re.split(r"(?<=[.;:])\s+", text):
        if re.search(r"\b(C\d\d|Q\d+|RQ\d)\b", sentence):
            assert not re.search(r"\b(supported|contradicted|equivalent|inconclusive|direction only|not testable)\b",
                                 sentence), f"{part}: {sentence.strip()[:200]}"


def test_a_macro_value_of_five_or_more_digits_is_grouped_unless_it_names_something():
    text = macros.render({"a/iops": "92335", "a/small": "4096", "a/neg": "-3.5", "a/mean": "12161.5",
                          "p/seed": "20261122", "p/params/port": "10809", "a/size": "12 GB"})
    assert "\\plset{a/iops}{\\num{92335}}" in text and "\\plset{a/small}{4096}" in text
    assert "\\plset{a/neg}{\\num{-3.5}}" in text and "\\plset{a/mean}{\\num{12161.5}}" in text
    assert "\\plset{p/seed}{20261122}" in text and "\\plset{p/params/port}{10809}" in text
    assert "\\plset{a/size}{12 GB}" in text


def test_no_declared_question_brings_a_code_name_into_the_thesis():
    """A question's text (the conclusion lists it) and its testability (the verdict table's note) reach the PDF
    as written: the leftover check of the built paper would stop the pipeline on a code name in them."""
    from perflab import questions, study

    found = []
    for s in study.discover(ROOT, demos=False):
        declared, _ = questions.load(ROOT / s.folder, ROOT)
        for q in declared:
            said = [q.text or ""] + ([q.testable.mechanism, q.testable.reason] if q.testable else [])
            found += [f"{s.id} {q.id}: {item}" for text in said for item in leftovers.find(text)]
    assert not found, found
