"""Robust numerics and input: extreme magnitudes, the sign of relative differences, blank labels, JSON."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from perflab.stats import (StatsInputError, compare, describe, drift, hedges_g, hodges_lehmann, json_value,
                           omnibus, rel_diff, rel_diff_fieller, select_rows)

_rng = np.random.default_rng(31)
A, B = _rng.normal(10, 1, 12), _rng.normal(11, 1.5, 9)


@pytest.mark.parametrize("scale", [1e300, 1e-300, 1e-310])
@pytest.mark.parametrize("test", [None, "student", "mannwhitney"])
def test_results_are_scale_free_at_extreme_magnitudes(scale, test):
    ref, big = compare(A, B, test=test), compare(A * scale, B * scale, test=test)
    for field in ("p_value", "statistic", "rel_diff", "hedges_g", "cliffs_delta"):
        assert getattr(big, field) == pytest.approx(getattr(ref, field), rel=1e-6), field
    assert big.rel_diff_ci == pytest.approx(ref.rel_diff_ci, rel=1e-6)
    assert big.estimate / scale == pytest.approx(ref.estimate, rel=1e-6)
    assert big.estimate_ci[1] / scale == pytest.approx(ref.estimate_ci[1], rel=1e-6)
    assert big.mean_b / scale == pytest.approx(ref.mean_b, rel=1e-6)


def test_describe_omnibus_and_drift_survive_extreme_magnitudes():
    df = pd.DataFrame({"g": ["a"] * 12 + ["b"] * 9, "v": np.concatenate([A, B]) * 1e300})
    out = describe(df, "v", "g").set_index("g")
    assert out.loc["a", "sd"] / 1e300 == pytest.approx(np.std(A, ddof=1))
    assert out.loc["a", "mean_ci_high"] / 1e300 == pytest.approx(describe(df.assign(v=df.v / 1e300), "v", "g")
                                                                 .set_index("g").loc["a", "mean_ci_high"])
    groups = {"a": A * 1e300, "b": B * 1e300, "c": B * 1.1e300}
    assert omnibus(groups).p_value == pytest.approx(omnibus({k: v / 1e300 for k, v in groups.items()}).p_value)
    assert drift(A * 1e-300).ljung_box_p == pytest.approx(drift(A).ljung_box_p)
    assert hedges_g(A * 1e300, B * 1e300) == pytest.approx(hedges_g(A, B))
    assert hodges_lehmann(A * 1e300, B * 1e300)[0] / 1e300 == pytest.approx(hodges_lehmann(A, B)[0])


def test_relative_difference_is_positive_when_b_is_larger_whatever_the_sign_of_a():
    a, b = np.array([-10.0, -11.0, -9.0]), np.array([-5.0, -6.0, -4.0])  # b is larger (less negative)
    assert rel_diff(a, b) == pytest.approx(0.5)  # (-5 - -10) / |-10|
    low, high = rel_diff_fieller(a, b)
    assert low < 0.5 < high and low > 0
    assert rel_diff(-b, -a) == pytest.approx(-1 + 10 / 5)  # positive baseline: mean_b / mean_a - 1
    mirrored = rel_diff_fieller(-a, -b)  # a positive, b smaller: the mirror image
    assert mirrored == pytest.approx((-high, -low))
    assert math.isnan(rel_diff([-1.0, 1.0], [2.0, 3.0]))  # zero baseline: undefined
    near_zero = compare([-1.0, 2.0, 0.5], [2.0, 3.0, 2.5])
    assert near_zero.rel_diff_ci == (-math.inf, math.inf) and any("unbounded" in n for n in near_zero.notes)


def test_blank_group_labels_are_refused_by_name():
    df = pd.DataFrame({"host": ["a", "a", "", "", None], "v": [1.0, 2.0, 3.0, 4.0, 5.0]})
    with pytest.raises(StatsInputError, match=r"runs.csv, column 'host': expected a non-blank group label"):
        describe(df, "v", "host", source="runs.csv")
    with pytest.raises(StatsInputError, match="non-blank group label"):
        omnibus({"a": [1.0, 2.0], "": [2.0, 3.0]})


def test_errors_name_file_column_and_group():
    df = pd.DataFrame({"host": ["a", "a", "b", "b"], "v": [1.0, 2.0, np.nan, 4.0]})
    with pytest.raises(StatsInputError, match=r"runs.csv, column 'v', group host='b': expected finite numbers"):
        describe(df, "v", "host", source="runs.csv")
    tidy = pd.DataFrame({"run_id": ["r1", "r2"], "metric": ["x", "x"], "value": [1.0, 2.0], "unit": ["s", "ms"]})
    with pytest.raises(StatsInputError, match=r"runs.csv, column 'unit' of metric 'x': expected one unit; "
                                              r"found \['ms', 's'\]"):
        select_rows(tidy, "x", source="runs.csv")


def test_json_tells_unbounded_from_undefined():
    payload = json.dumps(json_value({"ci": (-math.inf, math.inf), "p": float("nan"), "g": np.float64(1.5),
                                     "rows": [np.inf]}), allow_nan=False)
    assert json.loads(payload) == {"ci": ["-inf", "inf"], "p": None, "g": 1.5, "rows": ["inf"]}
