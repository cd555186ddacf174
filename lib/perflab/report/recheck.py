"""The re-check of a study's published statistics, as paper tables and inline values."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pandas as pd

from ..stats import published
from . import lineage, macros
from .latex import Tex, cell, escape_latex, format_number, format_p, header, latex_table, s_column, wrapped


def run(study: str, published_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, list[Path]]:
    """Re-check every ``<study>-table*.csv`` and ``<study>-claims.csv``; return (p-values, claims, inputs)."""
    pdir = Path(published_dir)
    tables = sorted(pdir.glob(f"{study}-table*.csv"))
    if not tables:
        raise FileNotFoundError(f"{pdir}: no {study}-table*.csv with published summaries")
    loaded = [published.load_published(t) for t in tables]
    pvals = pd.concat([published.recheck(t) for t in loaded], ignore_index=True)
    claims_file = pdir / f"{study}-claims.csv"
    claims = (published.recheck_claims(published.load_claims(claims_file), pd.concat(loaded, ignore_index=True))
              if claims_file.exists() else pd.DataFrame())
    return pvals, claims, [*tables, *([claims_file] if claims_file.exists() else [])]


#: Rows the p-value table holds as a float: its two column sets, stacked upright, fit one page; a longer table
#: breaks across pages.
RECHECK_ROWS = 12


def recheck_table_latex(result: pd.DataFrame, *, caption: str = "Re-check of published p-values",
                        label: str = "tab:recheck") -> str:
    """A booktabs table of :func:`perflab.stats.published.recheck`: comparison, the two means (siunitx ``S``
    columns), published and recomputed p, status. Flagged rows carry a dagger; uncertain digitizations an
    asterisk on the name. When every row compares the same two groups they are named once, in the note; a
    table of more than :data:`RECHECK_ROWS` rows breaks across pages (:func:`perflab.report.latex.long_table`)."""

    def p_cell(row: pd.Series, test: str) -> str:
        if f"p_{test}" not in row or pd.isna(row.get(f"p_{test}")):
            return "--"
        return format_p(row[f"p_{test}"], digits=3) + (r"\,$\surd$" if row[f"{test}_reproduces"] else "")

    pairs = set(zip(result["group_a"], result["group_b"]))
    same = len(pairs) == 1
    table = pd.DataFrame({
        "Comparison": [escape_latex(str(n)) + ("$^*$" if u else "") for n, u in zip(result["name"], result["uncertain"])],
        **({} if same else {"Groups": [escape_latex(f"{a} vs {b}") for a, b in zip(result["group_a"], result["group_b"])]}),
        "Mean $a$": [format_number(a, 10) for a in result["mean_a"]],
        "Mean $b$": [format_number(b, 10) for b in result["mean_b"]],
        header("Published", "$p$"): [escape_latex(str(p)) or "--" for p in result["published_p"]],
        header("Student", "$p$"): [p_cell(r, "student") for _, r in result.iterrows()],
        header("Welch", "$p$"): [p_cell(r, "welch") for _, r in result.iterrows()],
        # the status on two lines, its reason or tests below it: "reproduced" above "(Student and Welch)"; a long
        # reason ("no value for the mean of ...") wrapped, so that the table stands upright
        "Status": [cell(*(escape_latex(line) for part in re.split(r"(?<=:) | (?=\()", s)
                          for line in textwrap.wrap(part, 26, break_long_words=False, break_on_hyphens=False)),
                        align="l")
                   + (r" $\dagger$" if f else "") for s, f in zip(result["status"], result["flag"])],
    })
    groups = (f"$a$: {escape_latex(str(next(iter(pairs))[0]))}, $b$: {escape_latex(str(next(iter(pairs))[1]))} in "
              "every row" if same else "$a$, $b$: the groups in the order named")
    notes = [f"Means as printed ({groups}). Two-sided $p$ of Student's and of Welch's $t$ test recomputed from the "
             r"printed mean, SD and $n$ of each group; $\surd$: the test reproduces the "
             r"printed $p$ for some values the printed digits allow. $\dagger$: neither test reproduces it. "
             r"$^*$: a value is uncertain in the text extraction."]
    names = list(table.columns)
    means = [s_column(table[c].tolist()) or "r" for c in ("Mean $a$", "Mean $b$")]
    fmt = "l" * (names.index("Mean $a$")) + "".join(means) + "rrrl"
    return latex_table(table, caption=caption, label=label, notes=notes, escape=False, column_format=fmt,
                       align=("Mean $a$", "Mean $b$"), float_most=RECHECK_ROWS,
                       column_sets=[names[:names.index("Mean $b$") + 2], names[:1] + names[-3:]])


def claims_table(claims: pd.DataFrame, *, caption: str, label: str) -> str:
    """A booktabs table of re-checked percentage claims: stated value, each formula's value, verdict (breaking across
    pages when longer than a page, :func:`perflab.report.latex.long_table`)."""
    formulas = [c for c in claims.columns if c.startswith("pct_") and c != "pct_share"]
    rows = []
    for r in claims.to_dict("records"):
        row = {"Claim": r["claim"], "Line": str(r["line"]), "Kind": r["kind"],
               header("Stated", "(\\%)"): format_number(r["stated"], 4)}
        for f in formulas:  # a long formula's header broken after its slash: "(a-b)/" above "mean(a,b)"
            name = f.removeprefix("pct_")
            parts = re.split(r"(?<=/)", name) if len(name) > 8 else [name]
            row[header(*(escape_latex(p) for p in parts))] = format_number(r[f], 4)
        row["Verdict"] = wrapped(str(r["status"]), 18, mark=" $\\dagger$" if r["flag"] else "")
        rows.append(row)
    note = ("Each stated percentage recomputed from the published means with every formula a reader might use "
            "(a: the group said to be better, b: the other), per item and aggregated as the text says; "
            "$\\dagger$: no formula reproduces the stated value at its printed precision.")
    return latex_table(pd.DataFrame(rows), caption=caption, label=label, notes=[note], escape=False, narrow=True)


def write(study: str, published_dir: str | Path, paper_dir: str | Path, *, generator: str) -> dict[str, Path]:
    """Write the p-value and claims tables and the inline values of a study's re-check."""
    pvals, claims, inputs = run(study, published_dir)
    paper = Path(paper_dir)
    out = {"pvalues": lineage.atomic_text(paper / "tables" / f"{study}-recheck-p.tex", recheck_table_latex(
        pvals, caption=Tex("Published $p$-values recomputed from the study's summary statistics."),
        label=f"tab:{study}-recheck-p"))}
    if len(claims):
        out["claims"] = lineage.atomic_text(paper / "tables" / f"{study}-recheck-claims.tex", claims_table(
            claims, caption="Percentages stated in the study's text, recomputed.",
            label=f"tab:{study}-recheck-claims"))
    for path in out.values():
        lineage.write([path], inputs, generator=generator)
    checkable = pvals[~pvals["status"].str.startswith("not checkable")]
    values = {f"{study}/recheck/comparisons": str(len(pvals)), f"{study}/recheck/checkable": str(len(checkable)),
              f"{study}/recheck/flagged": str(int(pvals["flag"].sum())),
              f"{study}/recheck/claims": str(len(claims)),
              f"{study}/recheck/claims-flagged": str(int(claims["flag"].sum()) if len(claims) else 0),
              f"{study}/recheck/claims-reproduced": str(int(claims["status"].str.startswith("reproduced").sum())
                                                       if len(claims) else 0)}
    out["macros"] = macros.write(paper / "macros" / f"{study}-recheck.tex", values, inputs=inputs, generator=generator)
    return out
