"""Power at the SESOI where the noncentral t cannot be computed."""

import pytest

from perflab.stats import power


def test_power_at_a_large_effect_over_the_spread_is_a_number_near_one():
    # statsmodels' noncentral t gives nan at a noncentrality near 16 (000 Q3: SESOI 10 %, CV 0.044, 47 pairs)
    assert power.power_at(0.1, 47, 0.0435, paired=True) == pytest.approx(1.0, abs=1e-9)
    assert power.power_at(0.1, 47, 0.0435) == pytest.approx(1.0, abs=1e-9)
    assert power.power_at(0.1, 47, 0.2387, paired=True) == pytest.approx(0.8028, abs=1e-4)  # the noncentral t


def test_runs_for_an_effect_many_times_the_spread_are_a_number_not_an_error():
    # statsmodels' root finder returns nan at d = 300 (004's pilot: iSCSI's bytes per operation, SESOI 3 %, CV 0.0001)
    n = power.n_for_effect(0.03, 0.0001, paired=True)
    assert n == 2 and power.power_at(0.03, n, 0.0001, paired=True) >= 0.8
    assert power.n_for_effect(0.05, 0.0606, paired=True) == 14, "an ordinary case still solved by statsmodels"
