"""More than two groups and many comparisons: omnibus tests, post-hoc pairs, p-value correction.

Omnibus: one-way ANOVA and Welch's ANOVA (``statsmodels.stats.oneway.anova_oneway``),
Kruskal-Wallis (``scipy.stats.kruskal``), and Friedman for groups paired by block
(``scipy.stats.friedmanchisquare``). Post-hoc: Tukey HSD and Games-Howell
(``statsmodels...pairwise_tukeyhsd`` with ``use_var`` equal/unequal), Dunn with Holm
adjustment (``scikit_posthocs.posthoc_dunn``). Corrections: Holm and Benjamini-Hochberg
(``statsmodels.stats.multitest.multipletests``).
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multicomp import pairwise_tukeyhsd
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.oneway import anova_oneway

from ._input import StatsInputError, as_sample, plain, shapiro_p

#: Names of the omnibus tests by the key accepted in ``omnibus(test=...)``, and their post-hoc.
OMNIBUS_NAMES = {"anova": "one-way ANOVA", "welch-anova": "Welch's ANOVA", "kruskal": "Kruskal-Wallis",
                 "friedman": "Friedman"}
POSTHOC_NAMES = {"anova": "Tukey HSD", "welch-anova": "Games-Howell", "kruskal": "Dunn (Holm-adjusted)",
                 "friedman": "pairwise paired comparisons (Holm-adjusted)"}
#: Correction methods by the key accepted in :func:`adjust_pvalues` (statsmodels names as values).
CORRECTIONS = {"holm": "holm", "bh": "fdr_bh", "bonferroni": "bonferroni", "none": None}
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "bonferroni": "Bonferroni", "none": "none"}


@dataclass(frozen=True)
class Omnibus:
    """Result of :func:`omnibus`: the test, why it was chosen, and its outcome."""

    test: str
    reason: str
    statistic: float
    p_value: float
    df_num: float
    df_denom: float
    n: dict[str, int]
    assumptions: dict[str, float] = field(default_factory=dict)
    posthoc: str = ""

    def as_dict(self) -> dict[str, Any]:
        """Return the result as a JSON-ready dict."""
        return plain(asdict(self))


def _groups(groups: Mapping[str, Sequence[float]]) -> dict[str, np.ndarray]:
    """Validate a mapping of at least two groups of at least two finite values each."""
    if len(groups) < 2:
        raise StatsInputError("groups", "at least 2 groups", f"{len(groups)} ({list(groups)})",
                              "Check the grouping column.")
    return {str(k): as_sample(v, f"group {k!r}", min_n=2) for k, v in groups.items()}


def _choose(data: dict[str, np.ndarray], alpha: float) -> tuple[str, str, dict[str, float]]:
    """The ``"auto"`` rule of :func:`omnibus` (see its docstring)."""
    checks = {f"shapiro_p_{k}": shapiro_p(v) for k, v in data.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        checks["levene_p"] = float(stats.levene(*data.values(), center="median").pvalue)
    odd = [k for k, v in data.items() if v.size < 3 or np.ptp(v) == 0]
    if odd:
        return "kruskal", (f"normality cannot be checked for {', '.join(odd)} (n < 3 or constant); "
                           "Kruskal-Wallis"), checks
    rejected = [f"{k} (p = {checks[f'shapiro_p_{k}']:.3g})" for k in data if checks[f"shapiro_p_{k}"] < alpha]
    if rejected:
        return "kruskal", f"Shapiro-Wilk rejects normality of {', '.join(rejected)} at {alpha}; Kruskal-Wallis", checks
    if checks["levene_p"] < alpha:
        return "welch-anova", (f"all groups compatible with normality; Levene rejects equal variances "
                               f"(p = {checks['levene_p']:.3g}); Welch's ANOVA"), checks
    return "anova", (f"all groups compatible with normality; Levene does not reject equal variances "
                     f"(p = {checks['levene_p']:.3g}); one-way ANOVA"), checks


def omnibus(groups: Mapping[str, Sequence[float]], *, test: str = "auto", paired: bool = False,
            assumption_alpha: float = 0.05) -> Omnibus:
    """Test whether any of k >= 2 groups differs in location.

    ``"auto"``: Kruskal-Wallis if a group cannot be checked (n < 3, constant) or
    Shapiro-Wilk rejects its normality, else Welch's ANOVA if Levene (median-centred)
    rejects equal variances, else one-way ANOVA. With ``paired`` (position i of every
    group is block i, k >= 3) the test is Friedman's. ``posthoc`` names the matching
    pairwise procedure.
    """
    data = _groups(groups)
    if paired:
        sizes = {v.size for v in data.values()}
        if len(data) < 3 or len(sizes) > 1:
            raise StatsInputError("omnibus(paired=True)", "at least 3 groups of equal length (one value per block)",
                                  f"{len(data)} groups of sizes {sorted(sizes)}",
                                  "Keep complete blocks only, or compare two groups with compare(paired=True).")
        res = stats.friedmanchisquare(*data.values())
        return Omnibus(test=OMNIBUS_NAMES["friedman"], reason="groups paired by block: Friedman",
                       statistic=float(res.statistic), p_value=float(res.pvalue), df_num=float(len(data) - 1),
                       df_denom=np.nan, n={k: int(v.size) for k, v in data.items()},
                       posthoc=POSTHOC_NAMES["friedman"])
    if test == "auto":
        key, reason, checks = _choose(data, assumption_alpha)
    elif test in OMNIBUS_NAMES and test != "friedman":
        key, reason, checks = test, "requested by the caller", _choose(data, assumption_alpha)[2]
    else:
        raise StatsInputError("omnibus(test=...)", "'auto', 'anova', 'welch-anova' or 'kruskal'",
                              repr(test), "Use one of the listed test names (Friedman: paired=True).")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if key == "kruskal":
            res = stats.kruskal(*data.values())
            statistic, p, df_num, df_denom = res.statistic, res.pvalue, len(data) - 1, np.nan
        else:
            res = anova_oneway(list(data.values()), use_var="equal" if key == "anova" else "unequal")
            statistic, p, df_num, df_denom = res.statistic, res.pvalue, res.df_num, res.df_denom
    return Omnibus(test=OMNIBUS_NAMES[key], reason=reason, statistic=float(statistic),
                   p_value=float(p), df_num=float(df_num), df_denom=float(df_denom),
                   n={k: int(v.size) for k, v in data.items()}, assumptions=checks,
                   posthoc=POSTHOC_NAMES[key])


def posthoc(groups: Mapping[str, Sequence[float]], *, method: str = "tukey",
            level: float = 0.95) -> pd.DataFrame:
    """All pairwise comparisons after an omnibus test, one row per pair (group_a, group_b).

    ``method``: ``"tukey"`` (Tukey HSD), ``"games-howell"`` or ``"dunn"`` (Dunn's test,
    Holm-adjusted). Columns: group_a, group_b, diff (mean_b - mean_a; nan for Dunn),
    ci_low, ci_high (Tukey/Games-Howell, at ``level``), p_adjusted, method.
    """
    data = _groups(groups)
    values = np.concatenate(list(data.values()))
    labels = np.repeat(list(data), [v.size for v in data.values()])
    if method in ("tukey", "games-howell"):
        res = pairwise_tukeyhsd(values, labels, alpha=1 - level,
                                use_var="equal" if method == "tukey" else "unequal")
        table = pd.DataFrame(res.summary().data[1:], columns=res.summary().data[0])
        out = pd.DataFrame({"group_a": table["group1"].astype(str), "group_b": table["group2"].astype(str),
                            "diff": res.meandiffs, "ci_low": res.confint[:, 0], "ci_high": res.confint[:, 1],
                            "p_adjusted": res.pvalues})
        name = "Tukey HSD" if method == "tukey" else "Games-Howell"
    elif method == "dunn":
        import scikit_posthocs  # imported here: it pulls in matplotlib (~0.7 s) for its plots

        frame = pd.DataFrame({"value": values, "group": labels})
        matrix = scikit_posthocs.posthoc_dunn(frame, val_col="value", group_col="group", p_adjust="holm")
        keys = list(data)
        pairs = [(a, b) for i, a in enumerate(keys) for b in keys[i + 1:]]
        out = pd.DataFrame({"group_a": [a for a, _ in pairs], "group_b": [b for _, b in pairs],
                            "diff": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                            "p_adjusted": [float(matrix.loc[a, b]) for a, b in pairs]})
        name = "Dunn (Holm-adjusted)"
    else:
        raise StatsInputError("posthoc(method=...)", "'tukey', 'games-howell' or 'dunn'", repr(method),
                              "Use one of the listed methods (or Omnibus.posthoc).")
    out["method"] = name
    return out.reset_index(drop=True)


def adjust_pvalues(pvalues: Sequence[float], method: str = "holm") -> np.ndarray:
    """Adjust a family of p-values for multiple comparisons (Holm, Benjamini-Hochberg, ...).

    ``method`` is a key of :data:`CORRECTIONS`; NaN p-values stay NaN and do not count
    toward the family size.
    """
    if method not in CORRECTIONS:
        raise StatsInputError("adjust_pvalues(method=...)", f"one of {sorted(CORRECTIONS)}",
                              repr(method), "Use one of the listed correction names.")
    p = np.asarray(pvalues, dtype=float)
    out = p.copy()
    ok = np.isfinite(p)
    if CORRECTIONS[method] and ok.any():
        out[ok] = multipletests(p[ok], method=CORRECTIONS[method])[1]
    return out
