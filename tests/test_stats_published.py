"""Re-checking published results: p-values at the printed precision, stated percentages,
and the digitized tables of seed 003 against the text they come from."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from perflab.report.recheck import recheck_table_latex
from perflab.stats import StatsInputError, load_claims, load_published, recheck, recheck_claims

PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "raw" / "published"
SEED = Path(__file__).resolve().parents[2] / "shared/seeds/003_2419cbac4418997d.txt"  # ../shared/seeds/


def _table(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["name", "group", "mean", "sd", "n", "published_p"])


def _welch_p(m1, s1, m2, s2, n=40):
    return stats.ttest_ind_from_stats(m1, s1, n, m2, s2, n, equal_var=False).pvalue


def test_a_p_value_printed_from_welch_is_reproduced_and_a_wrong_one_flagged():
    p = _welch_p(100.0, 5.0, 103.0, 9.0)
    out = recheck(_table([
        ("ok", "base", "100.00", "5.00", "40", ""),  # a baseline row without p is ignored
        ("ok", "A", "100.00", "5.00", "40", f"{p:.3f}"),
        ("ok", "B", "103.00", "9.00", "40", f"{p:.3f}"),
        ("bad", "A", "100.00", "5.00", "40", "0.500"),
        ("bad", "B", "103.00", "9.00", "40", "0.500"),
    ])).set_index("name")
    assert out.loc["ok", "welch_reproduces"] and not out.loc["ok", "flag"]
    assert out.loc["ok", "p_welch"] == pytest.approx(p)
    assert out.loc["ok", "p_student"] == pytest.approx(
        stats.ttest_ind_from_stats(100, 5, 40, 103, 9, 40).pvalue)
    assert out.loc["bad", "status"] == "not reproduced" and out.loc["bad", "flag"]
    assert (out.loc["ok", "group_a"], out.loc["ok", "group_b"]) == ("A", "B")


def test_rounded_inputs_are_given_the_benefit_of_their_printed_precision():
    # printed to 0 decimals, mean 10 vs 11 allows differences from 0 to 2: p can be large or tiny
    out = recheck(_table([("x", "A", "10", "2", "40", "0.3"), ("x", "B", "11", "2", "40", "0.3")]))
    point = stats.ttest_ind_from_stats(10, 2, 40, 11, 2, 40).pvalue
    assert round(point, 1) != 0.3  # the printed values alone do not give 0.3 ...
    assert out.loc[0, "student_reproduces"]  # ... but values the digits allow do
    assert out.loc[0, "p_student_low"] < point < out.loc[0, "p_student_high"] == 1.0


def test_inequality_and_decimal_comma_p_values():
    out = recheck(_table([("x", "A", "10,0", "1,0", "40", "<0.001"), ("x", "B", "12,0", "1,0", "40", "<0.001")]))
    assert out.loc[0, "status"] == "reproduced (Student and Welch)"


def test_unreadable_values_are_not_checkable_rather_than_flagged():
    out = recheck(_table([("x", "A", "", "1.0", "40", "0.01"), ("x", "B", "12.0", "1.0", "40", "0.01")]))
    assert out.loc[0, "status"] == "not checkable: no value for the mean of A"
    assert not out.loc[0, "flag"]


def test_malformed_published_tables_are_refused_with_the_name():
    with pytest.raises(StatsInputError, match=r"name 'x'.*exactly 2 rows with a published_p"):
        recheck(_table([("x", g, "1", "1", "4", "0.1") for g in "ABC"]))
    with pytest.raises(StatsInputError, match="the same published_p on both compared rows"):
        recheck(_table([("x", "A", "1", "1", "4", "0.1"), ("x", "B", "2", "1", "4", "0.2")]))
    with pytest.raises(StatsInputError, match="no column"):
        recheck(pd.DataFrame({"name": ["x"]}))


def _values() -> pd.DataFrame:
    return pd.DataFrame({
        "name": ["tput", "tput", "time", "time", "t2", "t2"],
        "group": ["new", "old"] * 3,
        "mean": ["110.0000", "100.0000", "90.00", "100.00", "101.00", "100.00"],
        "higher_is_better": ["true", "true", "false", "false", "false", "false"],
        "published_p": ["0.001", "0.001", "0.010", "0.010", "0.400", "0.400"],
    })


def _claims(rows: list[dict]) -> pd.DataFrame:
    base = {"line": "1", "better": "new", "other": "old", "filter": "", "condition": ""}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_percentages_are_recomputed_every_way_a_reader_would():
    out = recheck_claims(_claims([
        {"claim": "rel_to_other", "stated": "10.00", "kind": "difference", "items": "tput"},
        {"claim": "rel_to_better", "stated": "9.09", "kind": "difference", "items": "tput"},
        {"claim": "symmetric", "stated": "9.52", "kind": "difference", "items": "tput"},
        {"claim": "time_saved", "stated": "10.0", "kind": "difference", "items": "time"},
        {"claim": "invented", "stated": "12.5", "kind": "difference", "items": "tput"},
        {"claim": "wrong_way", "stated": "10.00", "kind": "difference", "items": "tput", "better": "old", "other": "new"},
    ]), _values()).set_index("claim")
    assert out.loc["rel_to_other", "reproduced_by"] == "(a-b)/b"
    assert out.loc["rel_to_better", "reproduced_by"] == "(a-b)/a"
    assert out.loc["symmetric", "reproduced_by"] == "(a-b)/mean(a,b)"
    assert out.loc["time_saved", "pct_(a-b)/b"] == pytest.approx(10.0)  # lower is better: 90 vs 100
    assert out.loc["invented", "flag"] and out.loc["invented", "status"] == "not reproduced"
    assert out.loc["wrong_way", "flag"] and out.loc["wrong_way", "pct_(a-b)/b"] == pytest.approx(-100 * 10 / 110)


def test_aggregate_and_share_claims():
    out = recheck_claims(_claims([
        {"claim": "mean", "stated": "5.5", "kind": "mean", "items": "tput;t2", "better": "new", "other": "old"},
        {"claim": "max_fav", "stated": "11.1", "kind": "max", "items": "tput;time;t2", "filter": "favourable"},
        {"claim": "share_sig", "stated": "66.67", "kind": "share", "items": "tput;time;t2",
         "condition": "not_significant"},
        {"claim": "share_better", "stated": "66.67", "kind": "share", "items": "tput;time;t2",
         "condition": "better_significant"},
    ]), _values()).set_index("claim")
    # tput: new is 10 % higher (better); t2: new takes 1 % longer (worse) -> mean of (a-b)/b = (10 - 1) / 2
    assert out.loc["mean", "pct_(a-b)/b"] == pytest.approx(4.5)
    assert out.loc["mean", "flag"]
    assert out.loc["max_fav", "pct_(a-b)/a"] == pytest.approx(100 * 10 / 90)  # time: saved 10 s of 90
    assert out.loc["share_sig", "flag"] and out.loc["share_sig", "pct_share"] == pytest.approx(100 / 3)
    assert out.loc["share_better", "status"] == "reproduced"
    with pytest.raises(StatsInputError, match=r"rows \('nope', 'new'\)"):
        recheck_claims(_claims([{"claim": "c", "stated": "1", "kind": "difference", "items": "nope"}]), _values())


def test_recheck_latex_marks_flagged_and_uncertain_rows():
    out = recheck(_table([("ok", "A", "1.0", "0.1", "40", "0.000"), ("ok", "B", "2.0", "0.1", "40", "0.000"),
                          ("bad", "A", "1.0", "0.1", "40", "0.900"), ("bad", "B", "2.0", "0.1", "40", "0.900")]))
    out["uncertain"] = [True, False]
    tex = recheck_table_latex(out, caption="Recheck", label="tab:recheck")
    assert tex.count(r"\plfloat") == 1 and r"\label{tab:recheck}" in tex
    assert r"ok$^*$" in tex and r"not reproduced $\dagger$" in tex
    assert "Student's and of Welch's $t$ test recomputed" in tex and "scipy" not in tex


def test_recheck_latex_sets_the_means_in_siunitx_columns():
    out = recheck(_table([("x", "A", "-12345.5", "1.0", "40", "0.01"), ("x", "B", "0.25", "1.0", "40", "0.01")]))
    tex = recheck_table_latex(out, caption="Recheck", label="tab:recheck")
    assert r"S[table-format=-5.1]S[table-format=1.2]" in tex and r"{Mean $a$} & {Mean $b$}" in tex
    assert "& -12345.5 & 0.25 &" in tex and " / " not in tex


# --- the digitized seed 003 tables -----------------------------------------------------------

def _seed_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    return (load_published(PUBLISHED / "003-openstack-opennebula-table2-microbenchmarks.csv"),
            load_published(PUBLISHED / "003-openstack-opennebula-table3-nas.csv"),
            load_claims(PUBLISHED / "003-openstack-opennebula-claims.csv"))


def test_seed003_tables_have_the_expected_shape_and_provenance_columns():
    table2, table3, claims = _seed_tables()
    assert table2.groupby("name").size().eq(3).all() and table2["name"].nunique() == 10
    assert table3.groupby("name").size().eq(2).all() and table3["name"].nunique() == 64
    for table, lines in ((table2, range(549, 560)), (table3, range(612, 646))):
        assert {"source_table", "page", "line", "uncertain", "note"} <= set(table.columns)
        assert table["line"].astype(int).isin(lines).all()
        assert table["uncertain"].isin(["true", "false"]).all()
        assert table.loc[table["uncertain"] == "true", "note"].str.len().gt(0).all()
    names = set(table2["name"]) | set(table3["name"])
    for items in claims["items"]:
        assert set(items.split(";")) <= names


@pytest.mark.skipif(not SEED.exists(), reason="seed text not available on this machine")
def test_seed003_certain_values_are_printed_on_their_source_line():
    lines = SEED.read_text(encoding="utf-8").splitlines()
    table2, table3, _ = _seed_tables()
    for _, row in pd.concat([table2, table3]).iterrows():
        if row["uncertain"] == "true":
            continue
        text = lines[int(row["line"]) - 1]
        for field in ("mean", "sd"):
            printed = row[field]
            assert printed.replace(".", ",") in text or printed in text, (row["name"], row["group"], field)


def test_seed003_recheck_findings():
    table2, table3, claims = _seed_tables()
    micro = recheck(table2).set_index("name")
    assert set(micro.index[micro["flag"]]) == {"STREAM SCALE", "STREAM TRIAD"}
    nas = recheck(table3)
    assert nas["status"].str.startswith("not checkable").sum() == 8
    result = recheck_claims(claims, pd.concat([table2, table3], ignore_index=True)).set_index("claim")
    assert result.loc["C01", "flag"]  # the 11.07 % headline is reproduced by no formula
    assert result.loc["C03", "reproduced_by"] == "(a-b)/mean(a,b)"  # the paper's per-item formula
    assert result.loc["C24", "status"].startswith("reproduced")  # "56.25 % better" is a share of cases
