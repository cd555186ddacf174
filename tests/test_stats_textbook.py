"""perflab.stats on published textbook examples, with the values those sources print.

Sources:
- Student (1908) / Cushny & Peebles sleep data, R ``datasets::sleep``; R's ``t.test``
  output (Welch t = -1.8608, df = 17.776, p = 0.07939; Student p = 0.07919;
  paired t = -4.0621, df = 9, p = 0.002833).
- Lakens (2013), "Calculating and reporting effect sizes", Front. Psychol. 4:863,
  Table 1 (movie ratings): t(18) = 2.52, d_s = 1.13, g_s = 1.08; paired t(9) = 4.74,
  d_z = 1.50, d_av = 1.13.
- R ``datasets::PlantGrowth`` (Dobson 1983): one-way ANOVA F(2, 27) = 4.846,
  p = 0.01591; Welch (``oneway.test``) F = 5.181, denom df = 17.128, p = 0.01739;
  Kruskal-Wallis chi2 = 7.9882, p = 0.01842; Tukey HSD adjusted p 0.3909 (trt1-ctrl),
  0.1980 (trt2-ctrl), 0.0120 (trt2-trt1).
- Hollander & Wolfe (1973), p. 140, ``RoundingTimes`` in R's ``friedman.test``
  example: Friedman chi2 = 11.143, df = 2, p = 0.003805.
- R ``wilcox.test(..., conf.int = TRUE)`` with exact distributions:
  rank sum, treated vs untreated (Cross Validated question "None of the values in my
  data are within the confidence interval"): W = 25, p = 0.5054, estimate -83.5,
  95 % CI [-807, 198]; signed rank on (-3.1, -2.2, 1.3, 2.4, 3.5, 4.6, 5.7): V = 22,
  p = 0.2188, pseudomedian 1.8, CI [-2.2, 4.6].
- Iglewicz & Hoaglin (1993): modified z-score 0.6745 (x - median) / MAD, threshold 3.5.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perflab.stats import (block_effect, compare, flag_outliers, hedges_g, hodges_lehmann, omnibus,
                           posthoc)

SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
MOVIE_1 = [9, 7, 8, 9, 8, 9, 9, 10, 9, 9]
MOVIE_2 = [9, 6, 7, 8, 7, 9, 8, 8, 8, 7]
PLANTS = {
    "ctrl": [4.17, 5.58, 5.18, 6.11, 4.50, 4.61, 5.17, 4.53, 5.33, 5.14],
    "trt1": [4.81, 4.17, 4.41, 3.59, 5.87, 3.83, 6.03, 4.89, 4.32, 4.69],
    "trt2": [6.31, 5.12, 5.54, 5.50, 5.37, 5.29, 4.92, 6.15, 5.80, 5.26],
}
ROUNDING_TIMES = [
    (5.40, 5.50, 5.55), (5.85, 5.70, 5.75), (5.20, 5.60, 5.50), (5.55, 5.50, 5.40), (5.90, 5.85, 5.70),
    (5.45, 5.55, 5.60), (5.40, 5.40, 5.35), (5.45, 5.50, 5.35), (5.25, 5.15, 5.00), (5.85, 5.80, 5.70),
    (5.25, 5.20, 5.10), (5.65, 5.55, 5.45), (5.60, 5.35, 5.45), (5.05, 5.00, 4.95), (5.50, 5.50, 5.40),
    (5.45, 5.55, 5.50), (5.55, 5.55, 5.35), (5.45, 5.50, 5.55), (5.50, 5.45, 5.25), (5.65, 5.60, 5.40),
    (5.70, 5.65, 5.55), (6.30, 6.30, 6.25),
]


def test_sleep_welch_student_and_paired_t_match_r():
    welch = compare(SLEEP_1, SLEEP_2, test="welch")
    assert welch.statistic == pytest.approx(1.8608, abs=1e-4)  # R prints -1.8608 for group 1 - group 2
    assert welch.df == pytest.approx(17.776, abs=1e-3)
    assert welch.p_value == pytest.approx(0.07939, abs=1e-5)
    assert compare(SLEEP_1, SLEEP_2, test="student").p_value == pytest.approx(0.07919, abs=1e-5)
    paired = compare(SLEEP_1, SLEEP_2, test="paired-t", paired=True)
    assert paired.statistic == pytest.approx(4.0621, abs=1e-4)
    assert paired.df == 9
    assert paired.p_value == pytest.approx(0.002833, abs=1e-6)


def test_lakens_movie_ratings_effect_sizes():
    # Lakens orients movie 1 - movie 2; perflab orients b - a, so a = movie 2
    independent = compare(MOVIE_2, MOVIE_1, test="student")
    assert independent.statistic == pytest.approx(2.52, abs=0.005)
    assert hedges_g(MOVIE_2, MOVIE_1) == pytest.approx(1.08, abs=0.005)
    assert independent.hedges_g == pytest.approx(1.08, abs=0.005)
    paired = compare(MOVIE_2, MOVIE_1, test="paired-t", paired=True)
    assert paired.statistic == pytest.approx(4.74, abs=0.005)
    d = np.subtract(MOVIE_1, MOVIE_2)
    assert d.mean() / d.std(ddof=1) == pytest.approx(1.50)  # d_z: not what perflab reports
    d_av = d.mean() / ((np.std(MOVIE_1, ddof=1) + np.std(MOVIE_2, ddof=1)) / 2)
    assert d_av == pytest.approx(1.13, abs=0.005)
    assert hedges_g(MOVIE_2, MOVIE_1, paired=True) < d_av  # g_av: d_av shrunk by J(9)


def test_plant_growth_omnibus_tests_match_r():
    anova = omnibus(PLANTS, test="anova")
    assert anova.test == "one-way ANOVA" and anova.posthoc == "Tukey HSD"
    assert anova.statistic == pytest.approx(4.846, abs=1e-3)
    assert (anova.df_num, anova.df_denom) == (2, 27)
    assert anova.p_value == pytest.approx(0.01591, abs=1e-5)
    welch = omnibus(PLANTS)  # the default
    assert welch.test == "Welch's ANOVA" and welch.posthoc == "Games-Howell" and len(welch.pairs) == 3
    assert welch.statistic == pytest.approx(5.181, abs=1e-3)
    assert welch.df_denom == pytest.approx(17.128, abs=1e-3)
    assert welch.p_value == pytest.approx(0.01739, abs=1e-5)
    kruskal = omnibus(PLANTS, test="kruskal")
    assert kruskal.statistic == pytest.approx(7.9882, abs=1e-4)
    assert kruskal.p_value == pytest.approx(0.01842, abs=1e-5)


def test_plant_growth_tukey_hsd_matches_r():
    table = posthoc(PLANTS, method="tukey").set_index(["group_a", "group_b"])
    assert table.loc[("ctrl", "trt1"), "p_adjusted"] == pytest.approx(0.3909, abs=1e-3)
    assert table.loc[("ctrl", "trt2"), "p_adjusted"] == pytest.approx(0.1980, abs=1e-3)
    assert table.loc[("trt1", "trt2"), "p_adjusted"] == pytest.approx(0.0120, abs=1e-3)
    assert table.loc[("trt1", "trt2"), "diff"] == pytest.approx(0.865)


def test_rounding_times_friedman_matches_r():
    rows = [{"v": v, "player": i, "method": m} for i, row in enumerate(ROUNDING_TIMES)
            for m, v in zip(("round out", "narrow angle", "wide angle"), row)]
    # methods are the "blocks" being tested; players are the cells ranked within
    result = block_effect(pd.DataFrame(rows), "v", cell="player", block="method")
    assert result.friedman_stat == pytest.approx(11.143, abs=1e-3)
    assert result.friedman_p == pytest.approx(0.003805, abs=1e-6)
    assert (result.n_cells, result.n_blocks) == (22, 3)


def test_rank_sum_hodges_lehmann_matches_r_exact():
    treated = [323, 421, 578, 300, 256, 640, 912, 370]
    untreated = [2388, 210, 380, 345, 1130, 260, 665, 1157]
    result = compare(untreated, treated, test="mannwhitney")
    assert result.statistic == 25
    assert result.p_value == pytest.approx(0.5054, abs=1e-4)
    assert result.estimate == -83.5
    assert result.estimate_ci == (-807.0, 198.0)


def test_signed_rank_hodges_lehmann_matches_r_exact():
    diff = np.array([-3.1, -2.2, 1.3, 2.4, 3.5, 4.6, 5.7])
    shift, ci = hodges_lehmann(np.zeros(7), diff, paired=True)
    assert shift == pytest.approx(1.8)
    assert ci == pytest.approx((-2.2, 4.6))
    assert compare(np.zeros(7), diff, test="wilcoxon", paired=True).p_value == pytest.approx(0.2188, abs=1e-4)


def test_modified_z_score_flags_as_iglewicz_and_hoaglin():
    values = [2.1, 2.3, 2.2, 2.4, 2.2, 2.3, 9.0]  # median 2.3, MAD 0.1
    out = flag_outliers(pd.DataFrame({"v": values}), "v")
    assert out["robust_z"].iloc[-1] == pytest.approx(0.6745 * (9.0 - 2.3) / 0.1, rel=1e-4)
    assert out["outlier"].tolist() == [False] * 6 + [True]
