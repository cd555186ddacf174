"""One rule prints every p-value: three decimals near the threshold, never seeming to cross alpha."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.report import latex
from perflab.stats import format_p
from perflab.stats._input import p_text


@pytest.mark.parametrize("p, text", [(0.0004, "< 0.001"), (0.015, "0.015"), (0.0499, "0.0499"), (0.05, "0.050"),
                                     (0.0501, "0.050"), (0.042, "0.042"), (0.35, "0.35"), (0.0999, "0.100"),
                                     (math.nan, "n/a")])
def test_the_rule(p, text):
    assert format_p(p) == text


def test_a_printed_p_never_seems_to_cross_alpha():
    for p in np.linspace(0.001, 0.2, 20001):
        for alpha in (0.05, 0.01, 0.1):
            assert (float(format_p(p, alpha=alpha)) < alpha) == (p < alpha), (p, alpha)


def test_sentences_the_paper_and_the_command_line_print_the_same_digits():
    assert p_text(0.015) == "p = 0.015" and latex.format_p(0.015) == "0.015"  # compare printed 0.01 before
    assert latex.format_p(0.0499, markers=True) == "0.0499*"  # was "0.05*"
    assert latex.format_p(0.0004) == "$<0.001$" and p_text(0.0004) == "p < 0.001"
