"""perflab.report.latex: booktabs tables, escaping, notes and number formatting."""

from __future__ import annotations

import math
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from perflab.report.latex import (ci_decimals, escape_latex, fixed, format_ci, format_number, format_p, latex_table,
                                  num, significance_marker, significance_note)
from perflab.report import latex, tables
from perflab.report.tables import comparison_table as comparison_table_tex
from perflab.stats import compare, comparison_table, describe

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def test_latex_table_is_a_complete_booktabs_environment():
    df = pd.DataFrame({"cell_name": ["a&b", "100%"], "mean": [1.23456, float("nan")], "n": [3, 40]})
    tex = latex_table(df, caption="Runs_per cell", label="tab:runs", notes=[r"Welch's $t$."])
    assert tex.startswith(r"\begin{lrbox}{\pltabbox}\begin{tabular}") and tex.count(r"\begin{tabular}") == 1
    assert r"\plfloat{\caption{Runs\_per cell}\label{tab:runs}}" in tex
    assert tex.index(r"\toprule") < tex.index(r"\midrule") < tex.index(r"\bottomrule") < tex.index("Welch's $t$.")
    assert r"cell\_name & {mean} & {n} \\" in tex
    assert r"a\&b & 1.23 & 3 \\" in tex and r"100\% & {--} & 40 \\" in tex
    assert r"\begin{tabular}{lS[table-format=1.2]S[table-format=2]}" in tex
    assert r"\plnote{Welch's $t$.}" in tex


def test_latex_table_without_escape_keeps_latex_and_column_format():
    df = pd.DataFrame({"$p$": ["$<0.001$"]})
    tex = latex_table(df, caption="c", label="l", escape=False, column_format="c")
    assert r"$p$ \\" in tex and r"$<0.001$ \\" in tex and r"\begin{tabular}{c}" in tex


def test_formatters():
    assert escape_latex("50% of a_b & c") == r"50\% of a\_b \& c"
    assert format_number(float("nan")) == "--" and format_number(math.inf) == r"$\infty$"
    assert format_number(12) == "12" and format_number(0.000123456) == "0.000123"
    assert format_number(12345.6) == "12346" and format_number(0.5) == "0.5" and format_number(-1.0) == "-1"
    assert format_number(1.5e20) == "1.5e+20"
    assert format_p(0.0004) == "$<0.001$" and format_p(0.0421) == "0.042" and format_p(0.5) == "0.50"
    assert format_p(0.003, markers=True) == "0.003**"
    assert [significance_marker(p) for p in (0.0001, 0.005, 0.03, 0.2, float("nan"))] == ["***", "**", "*", "", ""]
    assert format_ci(-0.01, 0.052, percent=True) == r"[\num{-1}\,\%, \num{5.2}\,\%]"
    assert format_ci(float("nan"), 3.0) == r"[--, \num{3}]"
    assert num(-0.5) == r"\num{-0.5}" and num(4540.123, 4) == r"\num{4540}" and num(float("nan")) == "--"
    assert significance_note().startswith("* $p < 0.05$")


def test_comparison_table_corrects_the_family():
    rng = np.random.default_rng(8)
    a, b, c = rng.normal(10, 1, 30), rng.normal(11, 1, 30), rng.lognormal(2.3, 0.5, 30)
    table = comparison_table([compare(a, b, labels=("A", "B"), n_resamples=999),
                              compare(a, c, labels=("A", "C"), n_resamples=999)], correction="bh")
    assert (table["p_adjusted"] >= table["p_value"]).all() and set(table["correction"]) == {"Benjamini-Hochberg"}
    assert list(table["effect"]) == ["difference of means"] * 2


def test_paper_comparison_table_names_test_effect_and_adjusted_p():
    rng = np.random.default_rng(8)
    a, b, c = rng.normal(10, 1, 30), rng.normal(11, 1, 30), rng.lognormal(2.3, 0.5, 30)
    results = [compare(a, b, labels=("A", "B")), compare(a, c, labels=("A", "C"), test="mannwhitney")]
    tex = comparison_table_tex(results, caption="Comparisons", label="tab:cmp", p_adjusted=[0.0001, 0.5],
                               unit="ms")
    assert "B vs A" in tex and "Welch's t" in tex and "Mann-Whitney U" in tex
    assert "effect: difference of means" in tex and "effect: Hodges-Lehmann shift" in tex
    assert r"$p_\mathrm{Holm}$" in tex and "0.50" in tex and "***" in tex
    assert r"95\,\% CI" in tex and "(ms)" in tex and not re.search(r"\de[+-]?\d", tex)
    assert tex.count(r"\begin{tabular}{") == 4, "one whole tabular, and three column sets: test, effect, sizes"


def test_estimates_are_rounded_to_the_precision_of_their_interval():
    assert ci_decimals(4528.0, 4552.0) == 0 and ci_decimals(0.1, 0.12) == 3 and ci_decimals(1.0, 1.0) is None
    assert ci_decimals(1e6, 1.2e6) == -4 and fixed(1_234_567.0, -4) == "1230000"
    assert tables.estimate(4540.123, 4528.0, 4552.0) == ("4540", r"[\num{4528}, \num{4552}]", 0)
    assert tables.estimate(-0.5123, -0.61, -0.41)[0] == "-0.51" and fixed(-0.0001, 2) == "0.00"
    assert tables.estimate(2.0, float("nan"), float("nan"), digits=3) == ("2", "--", None)


def test_a_table_of_ordinary_numbers_has_no_e_notation_and_aligns_them():
    tex = latex_table(pd.DataFrame({"x": ["a", "b"], "v": [4540.123, -0.5], "p": [format_p(0.0004), format_p(0.2)]}),
                      caption="c", label="l", escape=False)
    assert not re.search(r"\de[+-]?\d", tex)
    assert r"S[table-format=-4.1]" in tex and "4540 &" in tex and "-0.5 &" in tex
    assert r"$<0.001$" in tex and "= <" not in tex and r"$<$" not in tex
    huge = latex_table(pd.DataFrame({"v": [1.5e20, 2.0]}), caption="c", label="l")
    assert r"{\num{1.5e+20}} \\" in huge, "an extreme magnitude is typeset by siunitx, not printed raw"


def test_generated_tables_are_never_shrunk():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"g": np.repeat(["1", "4", "16"], [4, 8, 8]), "v": rng.normal(4540, 1, 20)})
    results = [compare(df.v[:4], df.v[4:12], labels=("g=1", "g=4")), compare(df.v[:4], df.v[12:], labels=("g=1", "g=16"))]
    texts = [tables.describe_table(describe(df, "v", "g"), factor="g", factor_label="Streams", scale=1, unit="ms",
                                   caption="c", label="l"),
             tables.comparison_table(results, caption="c", label="l", unit="ms")]
    for tex in texts:
        assert not any(word in tex for word in ("adjustbox", "resizebox", "scalebox", r"\tiny", r"\scriptsize",
                                                r"\small"))
        whole, sets = tex.split(r"\plfloat", 1)
        assert whole.count(r"\begin{tabular}") == 1, "one tabular, turned sideways whole when wider than the text"
        assert sets.count(r"\begin{plfit}") >= 2, "split into column sets only as the fallback"


def test_an_undefined_median_interval_is_explained_in_the_note():
    df = pd.DataFrame({"g": ["a"] * 5 + ["b"] * 8, "v": np.arange(13, dtype=float)})
    summary = describe(df, "v", "g", level=0.99)
    tex = tables.describe_table(summary, factor="g", factor_label="Group", scale=1, unit="ms", caption="c", label="l")
    assert r"99\,\% CI" in tex and r"95\,\%" not in tex
    assert r"undefined (--) for a ($n = 5$)" in tex and "[--, --]" not in tex and " & -- \\\\" in tex


def test_the_p_phrase_never_says_p_equals_less_than():
    assert latex.p_phrase(0.0004) == "$p < 0.001$" and latex.p_phrase(0.042) == "$p = 0.042$"


@pytest.mark.skipif(not shutil.which("pdflatex") or not shutil.which("pdftotext")
                    or subprocess.run(["kpsewhich", "siunitx.sty"], capture_output=True).returncode,
                    reason="pdflatex, siunitx or pdftotext not installed")
def test_a_generated_table_typesets_with_true_minus_signs_and_no_e_notation(tmp_path):
    rng = np.random.default_rng(2)
    a, b = rng.normal(4540.123, 2, 10), rng.normal(4539.623, 2, 10)
    df = pd.DataFrame({"g": ["1"] * 10 + ["4"] * 10, "v": np.r_[a, b]})
    body = "\n".join([tables.describe_table(describe(df, "v", "g"), factor="g", factor_label="Streams", scale=1,
                                            unit="ms", caption="Summary", label="tab:s"),
                      tables.comparison_table([compare(a, b, labels=("g=1", "g=4"))], caption="Comparison",
                                              label="tab:c", unit="ms"),
                      latex_table(pd.DataFrame({"p": [format_p(1e-5)]}), caption="p", label="tab:p", escape=False)])
    (tmp_path / "t.tex").write_text("\\documentclass[11pt,a4paper]{report}\\usepackage[T1]{fontenc}\\usepackage{lmodern}"
                                    "\\usepackage[a4paper,margin=2.5cm]{geometry}\\usepackage{amsmath}"
                                    "\\usepackage{perflab}\\begin{document}" + body + "\\end{document}\n")
    env = {**__import__("os").environ, "TEXINPUTS": f"{ROOT / 'paper'}:"}
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:]
    assert "Overfull" not in run.stdout, "no table runs into the margin"
    text = subprocess.run(["pdftotext", "-layout", "t.pdf", "-"], cwd=tmp_path, capture_output=True,
                          text=True).stdout
    assert "4540" in text and "e+" not in text and "\u2212" in text, "true minus signs"
    assert "< 0.001" in text.replace("<0.001", "< 0.001") and "= <" not in text


def test_a_long_table_is_one_longtable_with_its_header_repeated_never_numbered_parts():
    tex = latex_table(pd.DataFrame({"x": [f"r{i}" for i in range(30)], "v": range(30)}), caption="Runs", label="tab:r",
                      notes=["Runs in order."])
    assert r"\plfloat" not in tex and tex.count(r"\begin{longtable}") == 1 and "rows 1--" not in tex
    assert tex.count(r"\label{") == 1 and r"\caption{Runs}\label{tab:r} \\" in tex
    head, rest = tex.split(r"\endfirsthead")
    assert r"\caption[]{Runs (continued)} \\" in rest.split(r"\endhead")[0] and "x & {v}" in rest.split(r"\endhead")[0]
    assert "continued on the next page" in rest.split(r"\endfoot")[0] and "r29 & 29" in tex
    assert tex.index(r"\end{longtable}") < tex.index(r"\plnote{Runs in order.}")


def test_a_long_table_too_wide_for_the_text_is_its_column_sets_under_one_number():
    r"""``\pllong`` sets the whole when it fits the text width, else each column set as a longtable; the later
    sets take the first one's number (the counter stepped back) and say they continue it."""
    from perflab.report.latex import long_table

    df = pd.DataFrame({"k": [f"k{i}" for i in range(3)], "a": [1, 2, 3], "b": [4, 5, 6]})
    tex = long_table(df, caption="Wide", label="tab:w", column_sets=[["k", "a"], ["k", "b"]])
    whole, sets, note = re.match(r"(?s).*\\pllong\{(.*)\}\n\{(.*)\}\n\{(.*)\}\n$", tex).groups()
    assert whole.count(r"\begin{longtable}") == 1 and sets.count(r"\begin{longtable}") == 2 and note == ""
    first, second = sets.split(r"\end{longtable}")[:2]
    assert r"\label{tab:w}" in first and r"\label" not in second
    assert r"\addtocounter{table}{-1}\begin{longtable}" in second and r"\caption[]{Wide (continued)} \\" in second


def test_a_table_of_two_line_rows_is_a_float_up_to_half_as_many_rows():
    """Twenty-three rows of a change above its interval (004's protocol summary ran past its page's foot): one
    longtable; twenty rows fit a float."""
    from perflab.report.latex import cell

    rows = pd.DataFrame({"Workload": [f"w{i}" for i in range(23)], "Change": [cell("+1 %", "[0 %, 2 %]")] * 23})
    tex = latex_table(rows, caption="Changes", label="tab:c", escape=False)
    assert r"\plfloat" not in tex and r"\caption{Changes}\label{tab:c}" in tex
    assert r"\plfloat" in latex_table(rows[:20], caption="Changes", label="tab:c", escape=False)


def test_the_claims_table_of_study_003_has_each_label_once():
    """One table, one label: its longtable's whole and its first column set carry it (only one is set)."""
    from pathlib import Path

    from perflab.report import recheck

    root = Path(__file__).resolve().parents[1]
    _, claims, _ = recheck.run("003-openstack-opennebula", root / "data/raw/published")
    tex = recheck.claims_table(claims, caption="C", label="tab:c")
    assert set(re.findall(r"\\label\{([^}]*)\}", tex)) == {"tab:c"} and "rows 1--" not in tex


def test_a_plain_number_in_a_text_column_is_grouped_by_siunitx():
    tex = latex_table(pd.DataFrame({"Rate": ["20000", "7500", "--"], "Name": ["a", "b", "c"]}), caption="R",
                      label="tab:n", escape=False)
    assert r"\num{20000} & a" in tex and r"\num{7500} & b" in tex and "-- & c" in tex


def test_a_long_note_a_family_of_tables_shares_is_said_once():
    from perflab.report.latex import SHARED_NOTE, note_text

    long, short = "L" * SHARED_NOTE, "* p < 0.05."
    text = note_text([long, short])
    assert re.fullmatch(r"\\plshared\{[0-9a-f]{12}\}\{L+\} \* p < 0\.05\.", text)
    assert note_text([long]) in text and note_text(["M" * SHARED_NOTE]) not in text


# A caption from a declaration or data is text, never LaTeX: `%` would comment out the rest of the line, `}` end the
# caption, `\input{x}` read a file into the PDF and `^^5c` is TeX's way of writing a backslash.
HOSTILE_CAPTION = "Rates 5 % } \\input{x} ^^5c\n\nend"
ESCAPED_CAPTION = ("\\caption{Rates 5 \\% \\} \\textbackslash{}input\\{x\\} \\textasciicircum{}\\textasciicircum{}5c"
                   "  end}")


def _hostile_tables() -> dict[str, str]:
    """A table of each template that took its caption as LaTeX (calibrate, scenarios, sweep), captioned from data."""
    from types import SimpleNamespace

    from perflab.report import calibrate, scenarios, sweep

    rates = pd.DataFrame({"frame": [64], "rungs": [5], "n": [8], "rate": [1e5], "loss": [0.1], "step": [1e4],
                          "next_rate": [1.1e5], "next_loss": [2.0]})
    rows = [{"run_id": f"{s}{b}", "block": b, "frame": "64", "scenario": s, "value": v + b + (s == "stress") * 0.1 * b}
            for b in range(8) for s, v in (("alone", 100.0), ("stress", 98.0))]
    result = scenarios.analyse({"t": pd.DataFrame(rows)}, panel="frame", scenario="scenario", baseline="alone",
                               order=["alone", "stress"])
    summary = pd.DataFrame({"device": ["ssd"], "iodepth": [1], "n": [40], "mean": [1e3], "mean_ci_low": [9e2],
                            "mean_ci_high": [1.1e3]})
    swept = SimpleNamespace(summary=summary, facet=None, series="device", factor="iodepth")
    return {
        "calibrate": calibrate.table(rates, threshold=1.0, caption=HOSTILE_CAPTION, label="tab:c"),
        "scenarios": scenarios.table(result, [scenarios.Metric(key="t", label="T")], panel="frame",
                                     panel_label="Frame", scenario="scenario", caption=HOSTILE_CAPTION, label="tab:s"),
        "sweep": sweep.summary_table(swept, scale=1.0, unit="IOPS", quantity="IOPS", xlabel="iodepth",
                                     caption=HOSTILE_CAPTION, label="tab:w"),
        "label": latex_table(pd.DataFrame({"a": [1]}), caption="c", label="tab:x}\\input{y", escape=False),
    }


@pytest.mark.parametrize("kind", ["calibrate", "scenarios", "sweep"])
def test_a_caption_from_data_is_escaped_whatever_the_cells_hold(kind):
    tex = _hostile_tables()[kind]
    assert ESCAPED_CAPTION in tex, re.findall(r"\\caption\{.*", tex)
    assert "\\input{" not in tex and "^^" not in tex


def test_a_label_keeps_only_the_characters_of_a_label():
    assert "\\label{tab:x--input-y}" in _hostile_tables()["label"]


@pytest.mark.skipif(not shutil.which("latexmk") or not shutil.which("pdftotext")
                    or subprocess.run(["kpsewhich", "siunitx.sty"], capture_output=True).returncode,
                    reason="latexmk, siunitx or pdftotext not installed")
def test_tables_captioned_from_data_compile_with_the_papers_preamble_and_read_nothing(tmp_path):
    (tmp_path / "x.tex").write_text("CANARY-FROM-INPUT\n")  # what \input{x} would put into the PDF
    body = "\n".join(_hostile_tables().values())
    (tmp_path / "t.tex").write_text("\\documentclass[11pt,a4paper]{report}\\usepackage[T1]{fontenc}\\usepackage{lmodern}"
                                    "\\usepackage[a4paper,margin=2.5cm]{geometry}\\usepackage{amsmath}"
                                    "\\usepackage{perflab}\\begin{document}" + body + "\\end{document}\n")
    env = {**__import__("os").environ, "TEXINPUTS": f"{ROOT / 'paper'}:"}
    run = subprocess.run(["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    text = subprocess.run(["pdftotext", "t.pdf", "-"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert "CANARY-FROM-INPUT" not in text
    assert text.count("\\input{x}") == 3 and text.count("^^5c") == 3, text[:2000]


def test_levels_and_tests_are_named_in_words_not_code():
    from perflab.report import recheck
    from perflab.report.latex import level_words

    assert level_words("vm_bytes=32M") == "vm bytes 32M" and level_words("parallel=1") == "parallel 1"
    assert level_words("vm_bytes=32M", {"vm_bytes": "working set"}) == "working set 32M"
    rng = np.random.default_rng(2)
    a, b = rng.normal(10, 1, 8), rng.normal(11, 1, 8)
    tex = comparison_table_tex([compare(a, b, labels=("vm_bytes=32M", "vm_bytes=64M"))], caption="c", label="l")
    assert "vm bytes 64M vs vm bytes 32M" in tex and "vm\\_bytes" not in tex and "=32M" not in tex
    skewed = [rng.lognormal(0, 1.5, 40), rng.lognormal(0.5, 1.5, 40)]
    tex = comparison_table_tex([compare(*skewed, labels=("vm_bytes=32M", "vm_bytes=64M"))], caption="c", label="l")
    assert "Normality is rejected for vm bytes 32M (Shapiro" in tex and "with 40 samples per group" in tex
    assert "n = " not in tex and "test=" not in tex and "vm\\_bytes" not in tex
    pub = pd.DataFrame([("x", "A", "10", "1", "40", "0.01"), ("x", "B", "", "1", "40", "0.01")],
                       columns=["name", "group", "mean", "sd", "n", "published_p"])
    from perflab.stats.published import recheck as recheck_p
    table = recheck.recheck_table_latex(recheck_p(pub), caption="p", label="tab:p")
    assert "scipy" not in table and "Welch's $t$" in table and "mean of B" in table


def test_a_product_of_factors_in_words_is_a_times_sign():
    from perflab.report.latex import times

    assert times("(4 jobs x iodepth 4)?") == "(4 jobs $\\times$ iodepth 4)?"
    assert times("a box of x and y") == "a box of x and y" and times("x axis") == "x axis"


def test_a_short_table_is_turned_only_when_its_first_column_names_each_row():
    wide = {"Mean": ["1", "2"], "Change": ["--", "+1 %"], "p": ["--", "0.2"], "MDE": ["--", "3 %"]}
    grouped = pd.DataFrame({"Metric": ["RTT", ""], "Scenario": ["alone", "stress"], **wide})
    upright = latex_table(grouped, caption="c", label="l")
    assert "Metric & Scenario &" in upright and "RTT & alone" in upright
    named = pd.DataFrame({"Scenario": ["alone", "stress"], "Metric": ["RTT", "RTT"], **wide})
    turned = latex_table(named, caption="c", label="l")
    assert "Scenario & alone & stress" in turned
