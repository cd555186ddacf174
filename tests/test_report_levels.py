"""perflab.report.levels: the section, tables and macros of one factor's levels, with the analysis' own level."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from perflab.report import levels


def _tidy(monitors: bool, seed: int = 5) -> pd.DataFrame:
    """A tidy table of a fio-like metric around 4540 MB/s per block size, with sysstat rows when ``monitors``."""
    rng = np.random.default_rng(seed)
    rows = []
    for block in range(8):
        for position, bs in enumerate(rng.permutation(["128", "32", "4"])):
            base = dict(campaign="demo", run_id=f"b{block}-{bs}", block=block, position=position, repetition=0,
                        warmup=False, group=None, started_utc="", bs=bs, cpu=None)
            rows.append({**base, "tool": "fio", "host": "h1", "metric": "bw", "summary": True, "unit": "B/s",
                         "value": 4540.123e6 * (1 + int(bs) / 1000) + rng.normal(0, 3e6)})
            if monitors:
                for host in ("h1", "h2"):
                    rows += [{**base, "tool": "sadf", "host": host, "metric": m, "summary": False, "unit": "%",
                              "cpu": "all", "value": v} for m, v in (("cpu_usr", 20.0), ("cpu_sys", 5.0))]
                    rows.append({**base, "tool": "sadf", "host": host, "metric": "load_1", "summary": False,
                                 "unit": "1", "value": 1.0})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("monitors", [True, False])
def test_the_section_caption_names_every_panel_and_the_analysis_level(tmp_path, monitors):
    df = _tidy(monitors)
    df.to_parquet(tmp_path / "demo.parquet")
    result = levels.analyse(df, metric="bw", factor="bs", level=0.99)
    out = levels.write(result, campaign="demo", source=tmp_path / "demo.parquet", paper_dir=tmp_path / "paper",
                       factor_label="Block size (KiB)", quantity="Bandwidth", scale=1e6, unit="MB/s",
                       generator="test", monitors=df)
    section = out["sections"][0].read_text()
    caption = re.search(r"\\caption\{(.*)\}", section)[1]
    panels = "abcde" if monitors else "abc"
    assert all(f"({p})" in caption for p in panels) and ("(d)" in caption) == monitors
    assert "block size (KiB)" in caption and r"99\,\%" in caption
    generated = [section, *(p.read_text() for p in out["tables"])]
    assert not any("95" in re.sub(r"\d*\.\d+|\d{3,}", "", text) for text in generated), "no typed-in 95 % level"
    assert not any(re.search(r"\de[+-]?\d", text) for text in generated), "no e-notation"
    assert r"\textminus{}" not in section or re.search(r"\\textminus\{\}\d", section)


def test_the_macros_typeset_numbers_and_say_p_less_than(tmp_path):
    df = _tidy(False)
    df.to_parquet(tmp_path / "demo.parquet")
    result = levels.analyse(df, metric="bw", factor="bs")
    out = levels.write(result, campaign="demo", source=tmp_path / "demo.parquet", paper_dir=tmp_path / "paper",
                       factor_label="Block size", quantity="Bandwidth", scale=1e6, unit="MB/s", generator="test")
    macros = out["macros"][0].read_text()
    assert r"\plset{demo/bw/bs-4/mean}{\num{" in macros and r"\plset{demo/bw/bs-128-vs-base/estimate}{\num{" in macros
    assert r"\plset{demo/bw/bs-128-vs-base/p-phrase}{$p < 0.001$}" in macros
    mean = re.search(r"bs-4/mean\}\{\\num\{([-\d.]+)\}", macros)[1]
    low = re.search(r"bs-4/ci-low\}\{\\num\{([-\d.]+)\}", macros)[1]
    assert len(mean.partition(".")[2]) == len(low.partition(".")[2]), "the mean has its interval's precision"


def test_the_sentence_has_fixed_notation_and_the_analysis_level():
    df = _tidy(False)
    result = levels.analyse(df, metric="bw", factor="bs", level=0.9)
    text = levels.sentence(result, quantity="Bandwidth", factor_label="Block size", scale=1, unit="B/s")
    assert "90 % CI" in text and "95" not in text and not re.search(r"\de[+-]?\d", text)
    assert "at block size " in text and "bs=" not in text and "n=" not in text  # levels in the factor's words
    assert levels.tex_minus("CI -0.5 to +1, n-1, x=-3") == r"CI \textminus{}0.5 to +1, n-1, x=\textminus{}3"


def test_one_level_still_writes_every_declared_table_and_says_there_is_nothing_to_compare(tmp_path):
    df = _tidy(False)
    df = df[df["bs"] == "4"]
    df.to_parquet(tmp_path / "demo.parquet")
    result = levels.analyse(df, metric="bw", factor="bs")
    out = levels.write(result, campaign="demo", source=tmp_path / "demo.parquet", paper_dir=tmp_path / "paper",
                       factor_label="Block size", quantity="Bandwidth", scale=1e6, unit="MB/s", generator="test")
    assert [p.name for p in out["tables"]] == [f"demo-bw-{kind}.tex" for kind in ("summary", "comparison", "checks")]
    comparison = out["tables"][1].read_text()
    assert "nothing to compare" in comparison and "tabular" not in comparison
    assert r"\plset{demo/bw/bs-4/mean}{\num{" in out["macros"][0].read_text()
