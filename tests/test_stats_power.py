"""Power at the SESOI where the noncentral t cannot be computed."""

import pytest

from perflab.stats import power


def test_power_at_a_large_effect_over_the_spread_is_a_number_near_one():
    # statsmodels' noncentral t gives nan at a noncentrality near 16 (000 Q3: SESOI 10 %, CV 0.044, 47 pairs)
    assert power.power_at(0.1, 47, 0.0435, paired=True) == pytest.approx(1.0, abs=1e-9)
    assert power.power_at(0.1, 47, 0.0435) == pytest.approx(1.0, abs=1e-9)
    assert power.power_at(0.1, 47, 0.2387, paired=True) == pytest.approx(0.8028, abs=1e-4)  # the noncentral t
