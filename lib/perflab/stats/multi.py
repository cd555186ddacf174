"""More than two groups and many comparisons: omnibus tests, the post-hoc they name, p-value correction.

Omnibus: Welch's ANOVA (the default for independent groups) and one-way ANOVA
(``statsmodels.stats.oneway.anova_oneway``), Kruskal-Wallis (``scipy.stats.kruskal``);
for groups paired by block the repeated-measures ANOVA (the default,
``statsmodels.stats.anova.AnovaRM``) and Friedman (``scipy.stats.friedmanchisquare``).
Each omnibus runs its own post-hoc and returns its rows: Games-Howell after Welch's ANOVA,
Tukey HSD after ANOVA (``statsmodels...pairwise_tukeyhsd`` with ``use_var`` unequal/equal),
Dunn with Holm adjustment after Kruskal-Wallis (``scikit_posthocs.posthoc_dunn``), pairwise
paired t or Wilcoxon tests with Holm adjustment after the paired omnibus tests.
Corrections: Holm and Benjamini-Hochberg (``statsmodels.stats.multitest.multipletests``).
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any, Mapping

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.anova import AnovaRM
from statsmodels.stats.multicomp import pairwise_tukeyhsd
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.oneway import anova_oneway

from ._input import Sample, StatsInputError, as_sample, check_labels, plain, scale_of, shapiro_p
from .compare import compare

#: Names of the omnibus tests by the key accepted in ``omnibus(test=...)``.
OMNIBUS_NAMES = {"welch-anova": "Welch's ANOVA", "anova": "one-way ANOVA", "kruskal": "Kruskal-Wallis",
                 "rm-anova": "repeated-measures ANOVA", "friedman": "Friedman"}
PAIRED_OMNIBUS = frozenset({"rm-anova", "friedman"})
#: The omnibus used when none is named.
DEFAULT_OMNIBUS = {False: "welch-anova", True: "rm-anova"}
#: The post-hoc each omnibus runs (a key of :data:`POSTHOC_NAMES`).
POSTHOC_OF = {"welch-anova": "games-howell", "anova": "tukey", "kruskal": "dunn",
              "rm-anova": "paired-t", "friedman": "wilcoxon"}
POSTHOC_NAMES = {"games-howell": "Games-Howell", "tukey": "Tukey HSD", "dunn": "Dunn (Holm-adjusted)",
                 "paired-t": "pairwise paired t (Holm-adjusted)",
                 "wilcoxon": "pairwise Wilcoxon signed-rank (Holm-adjusted)"}
#: The omnibus matching a two-group test key, for callers that take one ``--test`` for any k.
OMNIBUS_FOR_TEST = {"welch": "welch-anova", "student": "anova", "mannwhitney": "kruskal",
                    "paired-t": "rm-anova", "wilcoxon": "friedman"}
#: Correction methods by the key accepted in :func:`adjust_pvalues` (statsmodels names as values).
CORRECTIONS = {"holm": "holm", "bh": "fdr_bh", "bonferroni": "bonferroni", "none": None}
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "bonferroni": "Bonferroni", "none": "none"}


@dataclass(frozen=True)
class Omnibus:
    """Result of :func:`omnibus`: the test, its outcome, diagnostics and the post-hoc rows it ran."""

    test: str
    reason: str
    statistic: float
    p_value: float
    df_num: float
    df_denom: float
    n: dict[str, int]
    assumptions: dict[str, float] = field(default_factory=dict)
    posthoc: str = ""
    pairs: tuple[dict[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """Return the result as a dict of plain values."""
        return plain(asdict(self))


def _groups(groups: Mapping[str, Sample]) -> tuple[dict[str, np.ndarray], float]:
    """Validate at least two groups of at least two finite values; return them divided by a common scale, and it."""
    if len(groups) < 2:
        raise StatsInputError("groups", "at least 2 groups", f"{len(groups)} ({list(groups)})",
                              "Check the grouping column.")
    check_labels(groups, "group", "groups")
    data = {str(k): as_sample(v, f"group {k!r}", min_n=2) for k, v in groups.items()}
    k = scale_of(*data.values())
    return {g: v / k for g, v in data.items()}, k


def _checks(data: dict[str, np.ndarray]) -> dict[str, float]:
    """Shapiro-Wilk p per group and the Brown-Forsythe p of equal spread (diagnostics only)."""
    checks = {f"shapiro_p_{k}": shapiro_p(v) for k, v in data.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        checks["levene_p"] = float(stats.levene(*data.values(), center="median").pvalue)
    return checks


def omnibus(groups: Mapping[str, Sample], *, test: str | None = None, paired: bool = False,
            level: float = 0.95) -> Omnibus:
    """Test whether any of k >= 2 groups differs, then run the post-hoc the test names.

    Default: Welch's ANOVA followed by Games-Howell (independent), the repeated-measures
    ANOVA followed by Holm-adjusted paired t tests (``paired``: position i of every group
    is block i). Named choices: ``"anova"`` (Tukey HSD), ``"kruskal"`` (Dunn, Holm),
    ``"friedman"`` (Holm-adjusted Wilcoxon). Diagnostics are in ``assumptions``; they
    never change the test.
    """
    key = DEFAULT_OMNIBUS[paired] if test is None else test
    if key not in OMNIBUS_NAMES:
        raise StatsInputError("omnibus(test=...)", f"one of {sorted(OMNIBUS_NAMES)}", repr(test),
                              "Name the test (there is no automatic choice).")
    if (key in PAIRED_OMNIBUS) != paired:
        raise StatsInputError("omnibus(test=...)", f"paired={key in PAIRED_OMNIBUS} for {key!r}",
                              f"paired={paired}", "Pass a matching test or paired flag.")
    data, _ = _groups(groups)
    reason = "requested by the caller" if test is not None else "default"
    n = {k: int(v.size) for k, v in data.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if paired:
            sizes = set(n.values())
            if len(data) < 3 or len(sizes) > 1:
                raise StatsInputError("omnibus(paired=True)", "at least 3 groups of equal length (one value per block)",
                                      f"{len(data)} groups of sizes {sorted(sizes)}",
                                      "Keep complete blocks only, or compare two groups with compare(paired=True).")
            if key == "friedman":
                res = stats.friedmanchisquare(*data.values())
                statistic, p, df_num, df_denom = res.statistic, res.pvalue, len(data) - 1, np.nan
            else:
                long = pd.DataFrame([(g, i, v) for g, vals in data.items() for i, v in enumerate(vals)],
                                    columns=["group", "block", "value"])
                row = AnovaRM(long, "value", "block", within=["group"]).fit().anova_table.iloc[0]
                statistic, p, df_num, df_denom = row["F Value"], row["Pr > F"], row["Num DF"], row["Den DF"]
        elif key == "kruskal":
            res = stats.kruskal(*data.values())
            statistic, p, df_num, df_denom = res.statistic, res.pvalue, len(data) - 1, np.nan
        else:
            res = anova_oneway(list(data.values()), use_var="equal" if key == "anova" else "unequal")
            statistic, p, df_num, df_denom = res.statistic, res.pvalue, res.df_num, res.df_denom
    pairs = posthoc(groups, method=POSTHOC_OF[key], level=level)
    return Omnibus(test=OMNIBUS_NAMES[key], reason=reason, statistic=float(statistic),
                   p_value=float(p), df_num=float(df_num), df_denom=float(df_denom), n=n,
                   assumptions=_checks(data), posthoc=POSTHOC_NAMES[POSTHOC_OF[key]],
                   pairs=tuple(pairs.to_dict("records")))


def posthoc(groups: Mapping[str, Sample], *, method: str = "games-howell",
            level: float = 0.95) -> pd.DataFrame:
    """All pairwise comparisons after an omnibus test, one row per pair (group_a, group_b).

    ``method`` is a key of :data:`POSTHOC_NAMES`: ``"games-howell"``, ``"tukey"``,
    ``"dunn"`` (Holm-adjusted), or ``"paired-t"`` / ``"wilcoxon"`` (groups paired by
    position, Holm-adjusted, with the effect of :func:`~perflab.stats.compare.compare`).
    Columns: group_a, group_b, diff (mean_b - mean_a, or the rank test's shift; nan for
    Dunn), ci_low, ci_high (unadjusted ``level`` intervals for the pairwise tests),
    p_adjusted, method.
    """
    if method not in POSTHOC_NAMES:
        raise StatsInputError("posthoc(method=...)", f"one of {sorted(POSTHOC_NAMES)}", repr(method),
                              "Use one of the listed methods (or Omnibus.posthoc).")
    data, k = _groups(groups)
    values = np.concatenate(list(data.values()))
    labels = np.repeat(list(data), [v.size for v in data.values()])
    if method in ("tukey", "games-howell"):
        res = pairwise_tukeyhsd(values, labels, alpha=1 - level,
                                use_var="equal" if method == "tukey" else "unequal")
        table = pd.DataFrame(res.summary().data[1:], columns=res.summary().data[0])
        out = pd.DataFrame({"group_a": table["group1"].astype(str), "group_b": table["group2"].astype(str),
                            "diff": res.meandiffs * k, "ci_low": res.confint[:, 0] * k,
                            "ci_high": res.confint[:, 1] * k, "p_adjusted": res.pvalues})
    elif method == "dunn":
        import scikit_posthocs  # imported here: it pulls in matplotlib (~0.7 s) for its plots

        frame = pd.DataFrame({"value": values, "group": labels})
        matrix = scikit_posthocs.posthoc_dunn(frame, val_col="value", group_col="group", p_adjust="holm")
        pairs = list(combinations(data, 2))
        out = pd.DataFrame({"group_a": [a for a, _ in pairs], "group_b": [b for _, b in pairs],
                            "diff": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                            "p_adjusted": [float(matrix.loc[a, b]) for a, b in pairs]})
    else:
        results = [compare(data[a], data[b], test=method, paired=True, level=level, labels=(a, b))
                   for a, b in combinations(data, 2)]
        out = pd.DataFrame({"group_a": [r.labels[0] for r in results], "group_b": [r.labels[1] for r in results],
                            "diff": [r.estimate * k for r in results],
                            "ci_low": [r.estimate_ci[0] * k for r in results],
                            "ci_high": [r.estimate_ci[1] * k for r in results],
                            "p_adjusted": adjust_pvalues([r.p_value for r in results], "holm")})
    out["method"] = POSTHOC_NAMES[method]
    return out.reset_index(drop=True)


def adjust_pvalues(pvalues: Sample, method: str = "holm") -> np.ndarray:
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
