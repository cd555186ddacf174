"""Re-checking published results from their summary statistics and stated percentages.

Two checks, both at the precision the authors printed:

- :func:`recheck`: for each comparison (two groups with mean, sd, n), recompute the
  two-sided p-value under Student's and Welch's t (``scipy.stats.ttest_ind_from_stats``).
  Printed means and SDs are rounded, so each p is an interval over every value the
  printed digits allow (± half a unit in the last digit). A test reproduces the
  published p when that interval meets the interval the printed p allows ("0.000"
  means p < 0.0005, "0.03" means 0.025 <= p < 0.035, "<0.001" means p < 0.001).
  A row is flagged when neither test reproduces it.
- :func:`recheck_claims`: recompute percentages stated in a text the ways a reader
  would (:data:`FORMULAS`), per item and aggregated (mean, min, max), or as shares
  of cases (:data:`SHARE_CONDITIONS`), and flag claims no formula reproduces.

CSV columns are documented in ``docs/statistics.md``; values are read as text so that
the printed precision ("0.30" has two decimals) survives.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..formats.published import read_claims, read_table
from ._input import StatsInputError, counted

#: Columns a published-summaries CSV must have (one row per group of a comparison).
PUBLISHED_COLUMNS = ("name", "group", "mean", "sd", "n", "published_p")
#: Columns a claims CSV must have (one row per percentage stated in the text).
CLAIM_COLUMNS = ("claim", "line", "stated", "kind", "items", "better", "other")
#: Kinds of claims: one item, or an aggregate over items, or a share of cases.
CLAIM_KINDS = ("difference", "mean", "min", "max", "share")

Formula = Callable[[np.ndarray, np.ndarray], np.ndarray]
#: Percentages a reader may compute from a = the better group's value and b = the other's,
#: signed so that a positive value means "a is better" (for lower-is-better metrics the
#: difference a - b is negated). Values are in percent.
FORMULAS: dict[str, Formula] = {
    "(a-b)/b": lambda adv, a_b: adv / a_b[1],
    "(a-b)/a": lambda adv, a_b: adv / a_b[0],
    "(a-b)/mean(a,b)": lambda adv, a_b: adv / ((a_b[0] + a_b[1]) / 2),
    "ln(a/b)": lambda adv, a_b: np.sign(adv) * np.abs(np.log(a_b[0] / a_b[1])),
}
#: Conditions of "share" claims, from the published p-values at :data:`SIGNIFICANCE`.
SHARE_CONDITIONS = ("better_significant", "not_significant", "better")
SIGNIFICANCE = 0.05


def decimals(text: str) -> int:
    """Number of digits after the decimal point in a printed number ("0.30" -> 2, "40" -> 0)."""
    text = str(text).strip().lstrip("<>=≤ ")
    return len(text.split(".", 1)[1]) if "." in text else 0


def _blank(value: object) -> bool:
    """True for an empty or missing CSV cell."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value).strip() == ""


def _read(path: str | Path, required: Sequence[str], *, claims: bool = False) -> pd.DataFrame:
    """Read a published CSV (a claims file with ``claims``) as text, check its columns, and remember the file
    for messages."""
    path = Path(path)
    try:
        df = read_claims(path) if claims else read_table(path)
    except (OSError, pd.errors.ParserError) as exc:
        raise StatsInputError(str(path), "a readable CSV file", f"{type(exc).__name__}: {exc}",
                              "Check the path and the CSV syntax.") from None
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise StatsInputError(str(path), f"columns {list(required)}", f"no column(s) {missing} "
                              f"among {list(df.columns)}", "Add the columns (see docs/statistics.md).")
    df.attrs["source"] = str(path)
    return df


def load_published(path: str | Path) -> pd.DataFrame:
    """Read a published-summaries CSV (:data:`PUBLISHED_COLUMNS`, all kept as text)."""
    return _read(path, PUBLISHED_COLUMNS)


def load_claims(path: str | Path) -> pd.DataFrame:
    """Read a claims CSV (:data:`CLAIM_COLUMNS`, all kept as text)."""
    return _read(path, CLAIM_COLUMNS, claims=True)


def _number(value: object, where: str) -> float:
    """Parse a printed number (accepting a decimal comma), raising with ``where`` otherwise."""
    try:
        return float(str(value).strip().replace(",", "."))
    except ValueError:
        raise StatsInputError(where, "a number", repr(value), "Fix the cell or leave it empty "
                              "if the value cannot be read.") from None


def _printed_interval(text: str, where: str) -> tuple[float, float]:
    """Values a printed p-value allows: "0.000" -> [0, 0.0005], "<0.001" -> [0, 0.001]."""
    text = str(text).strip().replace(",", ".")
    if text.startswith(("<", "≤")):
        return (0.0, _number(text.lstrip("<≤= "), where))
    value, half = _number(text, where), 0.5 * 10.0 ** -decimals(text)
    return (max(0.0, value - half), min(1.0, value + half))


def _p_range(means: tuple[float, float], sds: tuple[float, float], ns: tuple[float, float],
             halves: tuple[float, ...], equal_var: bool) -> tuple[float, float, float]:
    """p at the printed values, and its min and max over the rounding box of means and SDs."""
    point = stats.ttest_ind_from_stats(means[0], sds[0], ns[0], means[1], sds[1], ns[1],
                                       equal_var=equal_var).pvalue
    corners = np.array(list(itertools.product((-1, 1), repeat=4)), dtype=float)
    m1 = means[0] + corners[:, 0] * halves[0]
    m2 = means[1] + corners[:, 1] * halves[1]
    s1 = np.maximum(sds[0] + corners[:, 2] * halves[2], 1e-12)
    s2 = np.maximum(sds[1] + corners[:, 3] * halves[3], 1e-12)
    p = stats.ttest_ind_from_stats(m1, s1, ns[0], m2, s2, ns[1], equal_var=equal_var).pvalue
    low, high = float(np.min(p)), float(np.max(p))
    if abs(means[0] - means[1]) <= halves[0] + halves[1]:
        high = 1.0  # the printed means allow equal means
    return float(point), low, high


def _pair_rows(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The comparisons of a published table: per name, the two rows that carry a published p."""
    source = df.attrs.get("source", "published table")
    pairs = []
    for name, sub in df.groupby("name", sort=False):
        tested = sub[[not _blank(p) for p in sub["published_p"]]]
        if len(tested) == 0 and len(sub) == 2:
            tested = sub  # a comparison whose printed p could not be read
        if len(tested) != 2:
            raise StatsInputError(f"{source}, name {name!r}", "exactly 2 rows with a published_p "
                                  "(the two compared groups)", f"{len(tested)} of {len(sub)} rows",
                                  "Leave published_p empty on rows that are not compared (e.g. a "
                                  "baseline) and fill it on both compared rows.")
        pairs.append((str(name), tested))
    return pairs


_WORDS = {"mean": "mean", "sd": "standard deviation", "n": "sample size"}


def _in_words(keys: list[str], group_a: object, group_b: object) -> str:
    """The cells ``keys`` (``mean_a``, ``n_b``, ``published_p``) as a reader says them: "the mean of A, the sample
    size of B" with the rows' group names."""
    groups = {"a": group_a, "b": group_b}
    words = [("the published p-value" if key == "published_p" else
              f"the {_WORDS[key.rsplit('_', 1)[0]]} of {groups[key.rsplit('_', 1)[1]]}") for key in keys]
    return ", ".join(words[:-1]) + (" and " if len(words) > 1 else "") + words[-1]


def recheck(df: pd.DataFrame) -> pd.DataFrame:
    """Recompute each published comparison's p under Student's and Welch's t.

    ``df`` has :data:`PUBLISHED_COLUMNS` (text keeps the printed precision; floats are
    read with their shortest repr). Per comparison (``name``), the two rows with a
    published p are group a and b in file order. Output: one row per comparison with
    the point p-values, their ranges over the printed precision, whether each test
    reproduces the published p, ``status`` and ``flag`` (True when neither does).
    Rows with an unreadable (empty) value get status "not checkable" and flag False.
    """
    missing = [c for c in PUBLISHED_COLUMNS if c not in df.columns]
    if missing:
        raise StatsInputError(df.attrs.get("source", "published table"), f"columns {list(PUBLISHED_COLUMNS)}",
                              f"no column(s) {missing}", "Add the columns (see docs/statistics.md).")
    source = df.attrs.get("source", "published table")
    rows = []
    for name, pair in _pair_rows(df):
        a, b = pair.iloc[0], pair.iloc[1]
        out: dict[str, object] = {"name": name, "group_a": a["group"], "group_b": b["group"]}
        for key in ("source_table", "line"):
            if key in pair.columns:
                out[key] = a[key]
        out["uncertain"] = bool(pair["uncertain"].astype(str).str.lower().eq("true").any()) \
            if "uncertain" in pair.columns else False
        cells = {f"{field}_{side}": row[field] for side, row in (("a", a), ("b", b))
                 for field in ("mean", "sd", "n")}
        cells["published_p"] = a["published_p"]
        empty = [k for k, v in cells.items() if _blank(v)]
        if not _blank(b["published_p"]) and str(b["published_p"]).strip() != str(a["published_p"]).strip():
            raise StatsInputError(f"{source}, name {name!r}", "the same published_p on both compared rows",
                                  f"{a['published_p']!r} and {b['published_p']!r}", "Fix one of the cells.")
        where = f"{source}, name {name!r}"
        numbers = {k: (np.nan if _blank(v) else _number(v, f"{where}, {k}"))
                   for k, v in cells.items() if k != "published_p"}
        out.update(numbers)
        out["published_p"] = "" if _blank(cells["published_p"]) else str(cells["published_p"]).strip()
        if empty:
            out.update(status=f"not checkable: no value for {_in_words(empty, a['group'], b['group'])}", flag=False)
            rows.append(out)
            continue
        means = (numbers["mean_a"], numbers["mean_b"])
        sds, ns = (numbers["sd_a"], numbers["sd_b"]), (numbers["n_a"], numbers["n_b"])
        halves = tuple(0.5 * 10.0 ** -decimals(cells[k]) for k in ("mean_a", "mean_b", "sd_a", "sd_b"))
        printed = _printed_interval(cells["published_p"], f"{where}, published_p")
        verdicts = {}
        for test, equal_var in (("student", True), ("welch", False)):
            point, low, high = _p_range(means, sds, ns, halves, equal_var)
            verdicts[test] = low <= printed[1] and high >= printed[0]
            out.update({f"p_{test}": point, f"p_{test}_low": low, f"p_{test}_high": high,
                        f"{test}_reproduces": verdicts[test]})
        which = [t.capitalize() for t, ok in verdicts.items() if ok]
        out["status"] = f"reproduced ({' and '.join(which)})" if which else "not reproduced"
        out["flag"] = not which
        rows.append(out)
    return pd.DataFrame(rows)


def _values(published: pd.DataFrame) -> dict[tuple[str, str], tuple[str, bool]]:
    """Map (name, group) to (printed mean, higher_is_better) from a published table."""
    higher = published["higher_is_better"].astype(str).str.lower().ne("false") \
        if "higher_is_better" in published.columns else pd.Series(True, index=published.index)
    return {(str(r["name"]), str(r["group"])): (r["mean"], bool(h))
            for (_, r), h in zip(published.iterrows(), higher)}


def _advantage_ranges(item: str, better: str, other: str, values: Mapping, where: str,
                      ) -> dict[str, tuple[float, float, float]] | None:
    """Per formula: (value, low, high) in percent for one item, or None if a value is missing."""
    if (item, better) not in values or (item, other) not in values:
        raise StatsInputError(where, f"rows ({item!r}, {better!r}) and ({item!r}, {other!r}) in the "
                              "published tables", "no such row", "Fix the item name or the group names.")
    (text_a, higher), (text_b, _) = values[(item, better)], values[(item, other)]
    if _blank(text_a) or _blank(text_b):
        return None
    a, b = _number(text_a, where), _number(text_b, where)
    ha, hb = 0.5 * 10.0 ** -decimals(text_a), 0.5 * 10.0 ** -decimals(text_b)
    corners = np.array([(a + sa * ha, b + sb * hb) for sa in (-1, 0, 1) for sb in (-1, 0, 1)]).T
    adv = (corners[0] - corners[1]) * (1 if higher else -1)
    out = {}
    for label, formula in FORMULAS.items():
        pct = 100 * formula(adv, corners)
        out[label] = (float(pct[4]), float(pct.min()), float(pct.max()))  # index 4: printed values
    return out


def _share(items: Sequence[str], better: str, other: str, condition: str, published: pd.DataFrame,
           values: Mapping, where: str) -> tuple[float, int]:
    """Percent of ``items`` meeting ``condition``; also the number of items that cannot be judged."""
    p_by_name = {str(n): p for n, p in zip(published["name"], published["published_p"]) if not _blank(p)}
    needs_p, needs_direction = condition != "better", condition != "not_significant"
    hits, unknown = 0, 0
    for item in items:
        adv = _advantage_ranges(item, better, other, values, where)
        p = p_by_name.get(item)
        if (needs_direction and adv is None) or (needs_p and p is None):
            unknown += 1
            continue
        favourable = needs_direction and adv is not None and adv["(a-b)/b"][0] > 0
        significant = needs_p and _number(p, where) < SIGNIFICANCE
        hits += {"better_significant": favourable and significant,
                 "not_significant": not significant, "better": favourable}[condition]
    return 100.0 * hits / len(items), unknown


def recheck_claims(claims: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Recompute each stated percentage from the published means, every way in :data:`FORMULAS`.

    ``claims`` has :data:`CLAIM_COLUMNS` (plus optional ``filter`` = "favourable" to
    aggregate only items where ``better`` is better, ``condition`` for shares, ``quote``);
    ``published`` is the concatenation of the published tables (``name``, ``group``,
    ``mean``, ``higher_is_better``). A formula reproduces a claim when its range over
    the printed precision of the inputs meets the stated value ± half its last digit.
    Output: one row per claim with the value of each formula (``pct_<formula>``), the
    formulas that reproduce it, ``status`` and ``flag``.
    """
    missing = [c for c in CLAIM_COLUMNS if c not in claims.columns]
    if missing:
        raise StatsInputError(claims.attrs.get("source", "claims table"), f"columns {list(CLAIM_COLUMNS)}",
                              f"no column(s) {missing}", "Add the columns (see docs/statistics.md).")
    source = claims.attrs.get("source", "claims table")
    values = _values(published)
    rows = []
    for _, claim in claims.iterrows():
        where = f"{source}, claim {claim['claim']!r}"
        kind, stated_text = str(claim["kind"]).strip(), str(claim["stated"]).strip()
        if kind not in CLAIM_KINDS:
            raise StatsInputError(where, f"kind in {list(CLAIM_KINDS)}", repr(kind), "Fix the kind column.")
        stated, half = _number(stated_text, where), 0.5 * 10.0 ** -decimals(stated_text) + 1e-9
        items = [s.strip() for s in str(claim["items"]).split(";") if s.strip()]
        out: dict[str, object] = {"claim": claim["claim"], "line": claim["line"], "kind": kind,
                                  "stated": stated, "n_items": len(items)}
        if kind == "share":
            condition = str(claim.get("condition", "")).strip()
            if condition not in SHARE_CONDITIONS:
                raise StatsInputError(where, f"condition in {list(SHARE_CONDITIONS)}", repr(condition),
                                      "Fill the condition column of share claims.")
            value, unknown = _share(items, claim["better"], claim["other"], condition, published, values, where)
            ranges: dict[str, tuple[float, ...]] = {"share": (value, value, value)}
        else:
            per_item = [_advantage_ranges(i, claim["better"], claim["other"], values, where) for i in items]
            if str(claim.get("filter", "")).strip() == "favourable":
                per_item = [r for r in per_item if r is None or r["(a-b)/b"][0] > 0]
            unknown = sum(r is None for r in per_item)
            known = [r for r in per_item if r is not None]
            aggregates: dict[str, Callable[..., Any]] = {"difference": np.mean, "mean": np.mean, "min": np.min,
                                                         "max": np.max}
            agg = aggregates[kind]
            ranges = {f: tuple(float(agg([r[f][k] for r in known])) if known else np.nan for k in range(3))
                      for f in FORMULAS}
        out["n_missing"] = unknown
        matches = [f for f, (_, low, high) in ranges.items() if low - half <= stated <= high + half]
        for label, (value, _, _) in ranges.items():
            out[f"pct_{label}"] = value
        out["reproduced_by"] = "; ".join(matches)
        if matches:
            out["status"] = "reproduced" + (" (on the readable items)" if unknown else "")
        elif unknown:
            out["status"] = f"not checkable: {counted(unknown, 'item')} without readable values"
        else:
            out["status"] = "not reproduced"
        out["flag"] = out["status"] == "not reproduced"
        rows.append(out)
    return pd.DataFrame(rows)
