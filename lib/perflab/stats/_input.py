"""Input checks shared by the statistics modules: one error type, one way to read a sample."""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence, TypeAlias, Union

import numpy as np
from scipy import stats

from ..errors import UserError

#: One sample of a quantity as the statistics functions take it: a list of numbers or a 1-D array.
Sample: TypeAlias = Union[Sequence[float], np.ndarray]

#: Default random seed of every resampling method, so that a rerun prints the same numbers.
DEFAULT_SEED = 20240


class StatsInputError(UserError, ValueError):
    """Raised when data cannot be analysed as asked.

    The message names where the data came from, what was expected, what was found,
    and what to do about it.
    """

    def __init__(self, where: str, expected: str, found: str, action: str) -> None:
        self.where, self.expected, self.found, self.action = where, expected, found, action
        super().__init__(f"{where}: expected {expected}; found {found}. {action}")


def as_sample(values: Iterable[float], where: str, *, min_n: int = 1) -> np.ndarray:
    """Return ``values`` as a 1-D float array, refusing NaN/inf and samples shorter than ``min_n``.

    ``where`` names the sample in error messages (for example ``"group 'b' of column 'rtt'"``).
    """
    try:
        x = np.asarray(values if hasattr(values, "__len__") else list(values), dtype=float)
    except (TypeError, ValueError) as exc:
        raise StatsInputError(where, "numbers", f"a value that is not a number ({exc})",
                              "Convert the column to a numeric dtype first.") from None
    x = x.ravel()
    bad = ~np.isfinite(x)
    if bad.any():
        raise StatsInputError(
            where, "finite numbers", f"{int(bad.sum())} NaN/inf value(s) among {x.size}",
            "Drop failed runs explicitly (e.g. df.dropna(subset=[column])) and report how many.")
    if x.size < min_n:
        raise StatsInputError(where, f"at least {min_n} values", f"{x.size}",
                              "Collect more runs or leave this group out of the analysis.")
    return x


def check_level(level: float) -> float:
    """Return ``level`` if it is a confidence level strictly between 0 and 1, else raise."""
    if not 0.0 < level < 1.0:
        raise StatsInputError("level", "a confidence level strictly between 0 and 1 (e.g. 0.95)",
                              repr(level), "Pass the level as a fraction, not a percentage.")
    return float(level)


def as_pair(a: Sample, b: Sample, paired: bool, min_n: int = 2,
            labels: tuple[str, str] = ("a", "b")) -> tuple[np.ndarray, np.ndarray]:
    """Return samples a and b as float arrays of at least ``min_n`` values, equally long when paired.

    ``labels`` name the two groups in error messages."""
    x = as_sample(a, f"group {labels[0]!r}" if labels[0] != "a" else "sample a", min_n=min_n)
    y = as_sample(b, f"group {labels[1]!r}" if labels[1] != "b" else "sample b", min_n=min_n)
    if paired and x.size != y.size:
        raise StatsInputError("paired samples", "samples of equal length (one value per block)",
                              f"{x.size} values in a and {y.size} in b",
                              "Keep only blocks where both cells completed, or compare unpaired.")
    return x, y


def plain(value: Any) -> Any:
    """Recursively turn tuples into lists and numpy scalars into Python numbers."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` as prose says them: "1 warm-up row", "32 warm-up rows" (``plural`` when not noun + s)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def shapiro_p(x: np.ndarray) -> float:
    """Shapiro-Wilk p-value, or nan when it is undefined (n < 3 or zero range)."""
    if x.size < 3 or np.ptp(x) == 0:
        return np.nan
    return float(stats.shapiro(x).pvalue)


def scale_of(*samples: np.ndarray) -> float:
    """A power of two near the largest magnitude in ``samples`` (1 when all are zero).

    Dividing by it is exact in floating point and brings values near 1e300 or 1e-300
    to order 1, so that sums of squares neither overflow nor underflow. Every
    statistic perflab reports is either scale-free (tests, ratios, standardized
    effects) or multiplied back by this factor.
    """
    peak = max((float(np.max(np.abs(s))) for s in samples if s.size), default=0.0)
    return 1.0 if peak == 0.0 or not math.isfinite(peak) else math.ldexp(1.0, math.frexp(peak)[1] - 1)


def check_labels(labels: Iterable[Any], column: str, where: str) -> None:
    """Refuse missing or blank group labels in ``column``: such rows would silently vanish or merge."""
    blank = [repr(v) for v in labels if v is None or (isinstance(v, float) and math.isnan(v))
             or str(v).strip() == ""]
    if blank:
        raise StatsInputError(f"{where}, column {column!r}", "a non-blank group label on every row",
                              f"{len(blank)} row(s) with label {sorted(set(blank))[0]}",
                              "Fill the label (or drop those rows explicitly) before comparing.")


def json_value(value: Any) -> Any:
    """A value for strict JSON: NaN (undefined) becomes null, ±inf (unbounded) the strings "inf"/"-inf"."""
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


#: The significance level p-values are printed against unless told otherwise.
ALPHA = 0.05


def format_p(p: float, *, alpha: float = ALPHA) -> str:
    """A p-value as text by the one rule every output uses (docs/statistics.md, "Printing p").

    Below 0.001: ``"< 0.001"``; below 0.1: three decimals (``"0.015"``); otherwise two
    (``"0.35"``); nan: ``"n/a"``. When rounding would put the printed value on the other
    side of ``alpha`` than ``p`` (0.0499 at three decimals is "0.050"), decimals are added
    until it does not (``"0.0499"``), so a printed p never seems to cross ``alpha``.
    """
    if p is None or math.isnan(p):
        return "n/a"
    if p < 0.001:
        return "< 0.001"
    digits = 3 if p < 0.1 else 2
    text = f"{p:.{digits}f}"
    while (float(text) < alpha) != (p < alpha) and digits < 12:
        digits += 1
        text = f"{p:.{digits}f}"
    return text


def p_text(p: float, *, alpha: float = ALPHA, missing: str = "n/a") -> str:
    """A p-value for sentences: "p < 0.001", "p = 0.015", "p = 0.35", "p = n/a" (rule of :func:`format_p`; a
    missing p is said as ``missing``). The one place the phrase is written; LaTeX wraps it (``report.latex``)."""
    text = missing if p is None or math.isnan(p) else format_p(p, alpha=alpha)
    return f"p {text}" if text.startswith("<") else f"p = {text}"
