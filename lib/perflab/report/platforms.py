"""Several benchmarks x platform levels -> one table in the layout of seed 003's Tables 2 and 3.

Each row is a benchmark (a metric of a campaign's tidy table, or a published row): the
mean and SD of every platform level, then the comparison of two levels (``pair``) by
Welch's t from the summary statistics (:func:`perflab.stats.summaries.per_row`), its
p-value, the p-value corrected over the table's rows as one family (Bonferroni by default, with the
intervals adjusted the same way), and
the relative difference with its Fieller interval. The rerun's table and the published
one are built the same way, so they can be set side by side; a third table compares them
in kind (:data:`perflab.stats.summaries.IN_KIND_NOTE`): the direction of the difference and
each platform's ratio to the native level, both measured within one setup.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import InputError
from ..stats.levels import select_rows
from ..stats.published import load_published
from ..stats.summaries import IN_KIND_NOTE, per_row
from . import macros
from .latex import escape_latex, format_ci, format_number, format_p, header, latex_table, percent_change


#: Version of the row tables this module writes beside the LaTeX (CSV, column ``format``).
FORMAT = 1


@dataclass(frozen=True)
class Benchmark:
    """One row of the table: ``name`` (as the published table names it), where its values come from, its display."""

    name: str
    campaign: str
    metric: str
    select: Mapping[str, Any] | None = None
    scale: float = 1.0
    unit: str = ""
    higher_is_better: bool = True

    @classmethod
    def from_mapping(cls, item: Mapping[str, Any]) -> "Benchmark":
        """A benchmark from a notebook parameter (a dict with the field names)."""
        unknown = sorted(set(item) - set(cls.__dataclass_fields__))
        if unknown or not {"name", "campaign", "metric"} <= set(item):
            raise InputError(f"benchmarks: item {dict(item)!r}: needs name, campaign and metric; unknown field(s) "
                             f"{unknown}; allowed: {', '.join(cls.__dataclass_fields__)}")
        return cls(**item)


def rerun_summaries(tables: Mapping[str, pd.DataFrame], benchmarks: Sequence[Benchmark], *, factor: str,
                    levels: Sequence[str]) -> pd.DataFrame:
    """Mean, SD and n of every benchmark at every level of ``factor``, in display units (long layout).

    ``tables`` maps a campaign id to its tidy table; warm-ups are left out
    (:func:`perflab.stats.levels.select_rows`). Columns: name, group, mean, sd, n, unit,
    higher_is_better (the layout :func:`perflab.stats.summaries.per_row` reads).
    """
    rows = []
    for b in benchmarks:
        sel = select_rows(tables[b.campaign], b.metric, b.select, source=f"campaign {b.campaign}")
        for lv in levels:
            x = sel.data.loc[sel.data[factor].astype(str) == lv, sel.value].to_numpy(dtype=float) / b.scale
            rows.append({"name": b.name, "group": lv, "mean": x.mean() if x.size else np.nan,
                         "sd": x.std(ddof=1) if x.size > 1 else np.nan, "n": x.size, "unit": b.unit,
                         "higher_is_better": b.higher_is_better})
    return pd.DataFrame(rows)


def published_summaries(path: str | Path, *, groups: Mapping[str, str]) -> pd.DataFrame:
    """A published table (:func:`~perflab.stats.published.load_published`) in the same layout, groups renamed.

    ``groups`` maps the published group names to this table's level names (e.g.
    ``{"OpenStack": "stacka"}``); values the source leaves unreadable stay missing.
    """
    pub = load_published(path)
    out = pd.DataFrame({"name": pub["name"], "group": pub["group"].map(dict(groups)).fillna(pub["group"]),
                        "mean": pd.to_numeric(pub["mean"], errors="coerce"),
                        "sd": pd.to_numeric(pub["sd"], errors="coerce"),
                        "n": pd.to_numeric(pub["n"], errors="coerce"), "unit": pub["unit"],
                        "higher_is_better": pub["higher_is_better"].astype(str).str.lower() == "true",
                        "published_p": pub.get("published_p")})
    out.attrs["source"] = str(path)
    return out


def table(summaries: pd.DataFrame, *, levels: Sequence[str], pair: tuple[str, str], correction: str = "bonferroni",
          level: float = 0.95) -> pd.DataFrame:
    """One row per benchmark: mean and SD per level, Welch's t of ``pair[1]`` against ``pair[0]``, corrected p.

    Columns: name, unit, ``mean_<level>``, ``sd_<level>``, ``n_<level>``, p, p_adjusted,
    rel_diff and its interval (b vs a, positive when b's mean is larger), better (the level
    of the pair with the better mean, from ``higher_is_better``), format. ``attrs`` carries
    the correction's name and family size from :func:`perflab.stats.summaries.per_row`.
    """
    tests = per_row(summaries, a=pair[0], b=pair[1], correction=correction, level=level)
    wide = summaries.pivot_table(index="name", columns="group", values=["mean", "sd", "n"], aggfunc="first",
                                 sort=False, dropna=False)
    first = summaries.drop_duplicates("name").set_index("name")
    rows = []
    for _, t in tests.iterrows():
        row: dict[str, Any] = {"format": FORMAT, "name": t["name"], "unit": first.loc[t["name"], "unit"]}
        for lv in levels:
            for stat in ("mean", "sd", "n"):
                row[f"{stat}_{lv}"] = wide.get((stat, lv), pd.Series(dtype=float)).get(t["name"], np.nan)
        higher = bool(first.loc[t["name"], "higher_is_better"])
        row.update(p=t["p"], p_adjusted=t["p_adjusted"], rel_diff=t["rel_diff"],
                   rel_diff_ci_low=t["rel_diff_ci_low"], rel_diff_ci_high=t["rel_diff_ci_high"],
                   better=(pair[1] if (t["diff"] > 0) == higher else pair[0]) if np.isfinite(t["diff"]) else "")
        if "published_p" in summaries.columns:
            printed = summaries.loc[summaries["name"] == t["name"], "published_p"].dropna()
            printed = printed[printed.astype(str).str.strip() != ""]
            row["published_p"] = printed.iloc[0] if len(printed) else None
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs.update(tests.attrs)
    return out


def in_kind(rerun: pd.DataFrame, published: pd.DataFrame, *, pair: tuple[str, str], native: str,
            alpha: float = 0.05) -> pd.DataFrame:
    """Published and rerun side by side in kind: the pair's better level and each level's ratio to ``native``.

    Only rows in both tables. ``agree`` is True when both name the same better level and
    both are significant after the correction, False when both are significant and the
    directions differ, and missing when either is not significant (nothing to agree on).
    """
    both = published.merge(rerun, on="name", suffixes=("_pub", "_rerun"))
    rows = []
    for _, r in both.iterrows():
        sig = {k: bool(r[f"p_adjusted_{k}"] < alpha) for k in ("pub", "rerun")}
        row = {"name": r["name"], "better_pub": r["better_pub"] if sig["pub"] else "none",
               "better_rerun": r["better_rerun"] if sig["rerun"] else "none",
               "agree": (r["better_pub"] == r["better_rerun"]) if all(sig.values()) else None}
        for lv in pair:
            for k in ("pub", "rerun"):
                row[f"ratio_{lv}_{k}"] = r[f"mean_{lv}_{k}"] / r[f"mean_{native}_{k}"]
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["note"] = IN_KIND_NOTE
    return out


def _mean_sd(mean: float, sd: float) -> str:
    return "--" if not np.isfinite(mean) else f"{format_number(mean, 4)} ({format_number(sd, 2)})"


#: Rows the table holds as a float: its two column sets, when it is too wide even sideways, fit the sideways page; a
#: longer table breaks across pages.
ROWS_PER_TABLE = 18


def table_latex(tab: pd.DataFrame, *, levels: Sequence[str], labels: Mapping[str, str], pair: tuple[str, str],
                caption: str, label: str, published_p: bool = False) -> str:
    """The table in the paper's layout: benchmark, mean (SD) per level, then the test's p, the adjusted p and the effect.

    At the body font (turned sideways when wider than the text); a table of more than :data:`ROWS_PER_TABLE` rows
    breaks across pages (:func:`perflab.report.latex.long_table`). The interval's level (family-adjusted when the
    correction is Bonferroni's) is in its column's header.
    """
    return _table(tab, levels=levels, labels=labels, pair=pair, published_p=published_p, attrs=tab.attrs,
                  caption=caption, label=label)


def _table(tab: pd.DataFrame, *, levels: Sequence[str], labels: Mapping[str, str], pair: tuple[str, str],
           published_p: bool, attrs: Mapping[str, Any], caption: str, label: str) -> str:
    a, b = (labels.get(x, x) for x in pair)
    level = f"{100 * attrs.get('level', 0.95):.4g}\\,\\%"
    cols: dict[str, list[str]] = {"Benchmark": [], "Unit": []}
    for lv in levels:
        cols[header(labels.get(lv, lv), "mean (SD)")] = []
    cols["$n$"] = []
    if published_p:
        cols[header("printed", "Sig.")] = []
    cols.update({"$p$ Welch": [], f"$p$ {attrs.get('correction', 'Holm')}": [],
                 header(f"{b} vs {a}", f"{{[}}{level} CI{{]}}"): []})
    for _, r in tab.iterrows():
        cols["Benchmark"].append(escape_latex(str(r["name"])))
        cols["Unit"].append(escape_latex(str(r["unit"])))
        for lv in levels:
            cols[header(labels.get(lv, lv), "mean (SD)")].append(_mean_sd(r[f"mean_{lv}"], r[f"sd_{lv}"]))
        ns = sorted({int(r[f"n_{lv}"]) for lv in levels if np.isfinite(r[f"n_{lv}"])})
        cols["$n$"].append("/".join(map(str, ns)) or "--")
        if published_p:
            v = r.get("published_p")
            cols[header("printed", "Sig.")].append("--" if pd.isna(v) or str(v).strip() == "" else str(v))
        finite = np.isfinite(r["p"])
        cols["$p$ Welch"].append(format_p(r["p"]) if finite else "--")
        cols[list(cols)[-2]].append(format_p(r["p_adjusted"]) if finite else "--")
        cols[list(cols)[-1]].append(
            f"{percent_change(r['rel_diff'])} {format_ci(r['rel_diff_ci_low'], r['rel_diff_ci_high'], digits=2, percent=True)}"
            if finite else "--")
    notes = [f"Welch's $t$ from the means, SDs and $n$ of {escape_latex(b)} against {escape_latex(a)}; "
             f"{escape_latex(str(attrs.get('correction', 'Holm')))} correction over the "
             f"{attrs.get('family', len(tab))} rows of the table; relative difference of the means with "
             f"Fieller's {level} interval"
             + (", adjusted as the p-values are, so that they agree" if attrs.get("correction") == "Bonferroni" else "")
             + ". -- : a value the source leaves unreadable."]
    names = list(cols)
    values = names.index("$n$") + 1
    return latex_table(pd.DataFrame(cols), caption=caption, label=label, notes=notes, escape=False,
                       column_format="ll" + "r" * (len(cols) - 2), float_most=ROWS_PER_TABLE,
                       column_sets=[names[:values], names[:1] + names[values:]])


def in_kind_latex(kind: pd.DataFrame, *, labels: Mapping[str, str], pair: tuple[str, str], native: str,
                  caption: str, label: str) -> str:
    """The in-kind comparison as LaTeX: better level (published, rerun), agreement, ratios to native."""
    lab = {k: labels.get(k, k) for k in (*pair, native)}
    where = {"pub": "published", "rerun": "rerun"}
    df = pd.DataFrame({
        "Benchmark": [escape_latex(str(x)) for x in kind["name"]],
        header("better,", "published"): [escape_latex(lab.get(x, x)) for x in kind["better_pub"]],
        header("better,", "rerun"): [escape_latex(lab.get(x, x)) for x in kind["better_rerun"]],
        "agree": ["--" if v is None or pd.isna(v) else ("yes" if v else "no") for v in kind["agree"]],
        **{header(f"{lab[lv]}/{lab[native]},", where[k]): [format_number(v, 3) for v in kind[f"ratio_{lv}_{k}"]]
           for lv in pair for k in where}})
    names = list(df.columns)
    return latex_table(df, caption=caption, label=label, escape=False,
                       column_format="lll" + "r" * (len(df.columns) - 3),
                       column_sets=[names[:4], names[:1] + names[4:]],
                       notes=[f"{escape_latex(IN_KIND_NOTE)}. ``better'': the level with the better mean "
                              "where the corrected $p$ is below 0.05, else none."])


def write(*, name: str, rerun: pd.DataFrame | None, published: pd.DataFrame, levels: Sequence[str],
          labels: Mapping[str, str], pair: tuple[str, str], native: str, paper_dir: str | Path,
          title: str, inputs: Sequence[str | Path], generator: str,
          published_labels: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Write the rerun's table, the published one, the in-kind table (with a rerun) and the inline values.

    ``published_labels`` (level -> the publication's name for it) heads the published table's
    columns; by default ``labels``.

    Files: ``tables/<name>-rerun.tex``, ``-published.tex``, ``-inkind.tex`` and their CSV
    beside them, and ``macros/<name>.tex`` with the counts the chapter quotes
    (``<name>/rows``, ``/significant``, ``/published-significant``, ``/agree``, ``/disagree``,
    ``/n``). Without a rerun the rerun and in-kind files hold only a LaTeX comment saying so.
    """
    paper = Path(paper_dir)
    (paper / "tables").mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}

    def put(key: str, text: str, frame: pd.DataFrame) -> None:
        path = paper / "tables" / f"{name}-{key}.tex"
        path.write_text(text)
        frame.to_csv(path.with_suffix(".csv"), index=False)
        out[key] = path

    put("published", table_latex(published, levels=levels, labels=published_labels or labels, pair=pair,
                                 published_p=True,
                                 caption=f"{title}: published values, tests recomputed",
                                 label=f"tab:{name}-published"), published)
    values = {f"{name}/published-rows": str(int(np.isfinite(published["p"]).sum())),
              f"{name}/published-significant": str(int((published["p_adjusted"] < 0.05).sum()))}
    if rerun is not None:
        put("rerun", table_latex(rerun, levels=levels, labels=labels, pair=pair,
                                 caption=f"{title}: rerun",
                                 label=f"tab:{name}-rerun"), rerun)
        kind = in_kind(rerun, published, pair=pair, native=native)
        put("inkind", in_kind_latex(kind, labels=labels, pair=pair, native=native,
                                    caption=f"{title}: published and rerun in kind",
                                    label=f"tab:{name}-inkind"), kind)
        ns = sorted({int(rerun[f"n_{lv}"].min()) for lv in levels})
        values.update({f"{name}/rows": str(len(rerun)),
                       f"{name}/significant": str(int((rerun["p_adjusted"] < 0.05).sum())),
                       f"{name}/agree": str(int((kind["agree"] == True).sum())),  # noqa: E712 (None stays out)
                       f"{name}/disagree": str(int((kind["agree"] == False).sum())),  # noqa: E712
                       f"{name}/n": str(ns[0])})
    else:
        for key in ("rerun", "inkind"):
            path = paper / "tables" / f"{name}-{key}.tex"
            path.write_text("% no rerun: this table's benchmarks were not rerun\n")
            out[key] = path
    out["macros"] = macros.write(paper / "macros" / f"{name}.tex", values, inputs=inputs, generator=generator)
    return out
