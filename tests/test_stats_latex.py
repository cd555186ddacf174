"""perflab.report.latex: booktabs tables, escaping, notes and number formatting."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from perflab.report.latex import (escape_latex, format_ci, format_number, format_p, latex_table,
                                  significance_marker, significance_note)
from perflab.report.tables import comparison_table as comparison_table_tex
from perflab.stats import compare, comparison_table


def test_latex_table_is_a_complete_booktabs_environment():
    df = pd.DataFrame({"cell_name": ["a&b", "100%"], "mean": [1.23456, float("nan")], "n": [3, 40]})
    tex = latex_table(df, caption="Runs_per cell", label="tab:runs", notes=[r"Welch's $t$."])
    lines = tex.splitlines()
    assert lines[0] == r"\begin{table}" and lines[-1] == r"\end{table}"
    assert r"\caption{Runs\_per cell}" in tex and r"\label{tab:runs}" in tex
    assert tex.index(r"\toprule") < tex.index(r"\midrule") < tex.index(r"\bottomrule") < tex.index("Welch's $t$.")
    assert r"cell\_name & mean & n \\" in tex
    assert r"a\&b & 1.23 & 3 \\" in tex and r"100\% & -- & 40 \\" in tex
    assert r"\begin{tabular}{lrr}" in tex
    assert r"{\footnotesize Welch's $t$.\par}" in tex


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
    assert format_p(0.0004) == "$<$0.001" and format_p(0.0421) == "0.042" and format_p(0.5) == "0.50"
    assert format_p(0.003, markers=True) == "0.003**"
    assert [significance_marker(p) for p in (0.0001, 0.005, 0.03, 0.2, float("nan"))] == ["***", "**", "*", "", ""]
    assert format_ci(-0.01, 0.052, percent=True) == r"[-1\%, 5.2\%]"
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
    assert r"95\,\% CI] (ms)" in tex
