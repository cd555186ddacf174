"""Defects of the statistics that each test here caught: ranges, ratio intervals, planning, one group."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from perflab.report import factorial
from perflab.stats import describe, plan
from perflab.cli.stats import main as stats_main
from perflab.stats.describe import mean_ci
from perflab.stats.effect import ratio_fieller, rel_diff_fieller


def test_positive_quantities_get_intervals_without_negative_bounds():
    x = np.array([1.0, 1.2, 9.0])  # IOPS of three samples, one far off
    assert mean_ci(x)[0] < 0  # Student's t reaches below zero
    low, high = mean_ci(x, positive=True)
    assert 0 < low < np.mean(x) < high
    d = describe(pd.DataFrame({"g": ["a"] * 3, "v": x}), "v", "g", positive=True)
    assert d.loc[0, "mean_ci_low"] > 0 and "log scale" in d.attrs["ci_method"]["mean"]


def test_a_quantity_with_zeros_that_cannot_be_negative_gets_an_interval_cut_at_zero():
    """Packet loss of forty samples, most of them 0: Student's t reaches below 0, the cut interval does not,
    and its upper end is Student's; a negative value is refused; the flags follow the values."""
    from perflab.stats.describe import range_flags
    from perflab.stats.family import compare_family, family_rows

    loss = np.array([0.0] * 37 + [0.01, 0.02, 0.2])
    student = mean_ci(loss)
    assert student[0] < 0
    low, high = mean_ci(loss, nonnegative=True)
    assert low == 0.0 and high == student[1]
    assert range_flags(loss) == {"positive": False, "nonnegative": True}
    assert range_flags([1.0, 2.0]) == {"positive": True, "nonnegative": False}
    assert range_flags([-1.0, 2.0]) == {"positive": False, "nonnegative": False}
    d = describe(pd.DataFrame({"g": ["a"] * 40, "v": loss}), "v", "g", **range_flags(loss))
    assert d.loc[0, "mean_ci_low"] == 0.0 and "cut at 0" in d.attrs["ci_method"]["mean"]
    try:
        mean_ci(np.array([0.0, -0.1, 0.2]), nonnegative=True)
    except ValueError as exc:
        assert "cannot be negative" in str(exc)
    else:
        raise AssertionError("a negative value of a quantity that cannot be negative was accepted")
    # a change of such a quantity: Fieller's interval around a baseline mean near 0 is unbounded; cut at -100 %
    other = np.array([0.0] * 36 + [0.05, 0.1, 0.3, 0.02])
    [row] = family_rows(compare_family([(loss, other)]), nonnegative=True)
    [raw] = family_rows(compare_family([(loss, other)]))
    assert raw["ci_low"] < -1 and row["ci_low"] == -1.0 and row["ci_high"] == raw["ci_high"]


def test_a_positive_sample_whose_mean_the_log_scale_interval_misses_gets_students_interval_cut_at_zero():
    """Jitter of forty samples, two of them twenty times the rest: the modified Cox interval (a log-normal
    mean) lies below the sample's mean; the interval given is then Student's, cut at 0, around that mean."""
    x = np.array([0.05] * 38 + [1.0, 1.0]) + np.linspace(0, 0.005, 40)
    y = np.log(x)
    m, v, n = y.mean(), y.var(ddof=1), x.size
    half = 2.0227 * math.sqrt(v / n + v**2 / (2 * (n - 1)))  # t(0.975, 39)
    assert math.exp(m + v / 2 + half) < x.mean()  # the log-normal interval misses the mean
    low, high = mean_ci(x, positive=True)
    assert low < x.mean() < high and low >= 0
    assert (low, high) == mean_ci(x, nonnegative=True)


def test_modified_cox_interval_covers_the_lognormal_mean():
    rng = np.random.default_rng(11)
    draws, n, sigma = 2000, 10, 0.5
    true = math.exp(sigma**2 / 2)
    hits = sum(lo <= true <= hi for lo, hi in (mean_ci(rng.lognormal(0, sigma, n), positive=True) for _ in range(draws)))
    se = math.sqrt(0.05 * 0.95 / draws)
    assert abs(hits / draws - 0.95) < 3 * se + 0.01  # Olsson (2005): close to nominal at n = 10


def test_factorial_ratios_use_fieller_not_a_percentile_bootstrap():
    data = pd.DataFrame({"path": ["nat"] * 3 + ["direct"] * 3, "value": [5.0, 5.5, 6.0, 9.0, 9.5, 10.5]})
    result = factorial.FactorialResult("T", "u", ["path"], data, pd.DataFrame(), pd.DataFrame())
    est, low, high = factorial.ratio(result, {"path": "nat"}, {"path": "direct"})
    rel_low, rel_high = rel_diff_fieller([9.0, 9.5, 10.5], [5.0, 5.5, 6.0])
    assert math.isclose(est, 5.5 / (29 / 3)) and math.isclose(low, 1 + rel_low) and math.isclose(high, 1 + rel_high)
    assert (est, low, high) == ratio_fieller([9.0, 9.5, 10.5], [5.0, 5.5, 6.0])


def test_fieller_ratio_covers_at_n_3():
    rng = np.random.default_rng(12)
    draws = 2000
    hits = 0
    for _ in range(draws):
        _, lo, hi = ratio_fieller(rng.normal(10, 1, 3), rng.normal(8, 1, 3))
        hits += lo <= 0.8 <= hi
    se = math.sqrt(0.05 * 0.95 / draws)
    assert abs(hits / draws - 0.95) < 3 * se  # the percentile bootstrap covered about 80 % here


def test_plan_on_a_pilot_with_a_negative_mean():
    pilot = describe(pd.DataFrame({"g": ["a"] * 8, "v": -100 + np.linspace(-1, 1, 8)}), "v", "g")
    planned = plan(pilot, 10, halfwidth=0.01).iloc[0]
    positive = plan(describe(pd.DataFrame({"g": ["a"] * 8, "v": 100 + np.linspace(-1, 1, 8)}), "v", "g"), 10,
                    halfwidth=0.01).iloc[0]
    assert np.isfinite(planned["mde"]) and planned["mde"] == positive["mde"]
    assert planned["n_halfwidth"] == positive["n_halfwidth"] > 2


def test_compare_with_one_group_names_the_by_column(tmp_path, capsys):
    path = tmp_path / "t.csv"
    pd.DataFrame({"mtu": [1500] * 4, "rtt": [1.0, 1.1, 0.9, 1.2]}).to_csv(path, index=False)
    assert stats_main(["compare", str(path), "--metric", "rtt", "--by", "mtu"]) == 2
    err = capsys.readouterr().err
    assert "--by mtu" in err and "one group (mtu = 1500)" in err and "Traceback" not in err
