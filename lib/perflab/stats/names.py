"""The names the statistics stage offers on the command line: its tests, per-run aggregations, defaults.

Imported by the command-line parser before any statistics library, and by the modules that
implement the names (:mod:`perflab.stats.compare`, :mod:`perflab.stats.levels`).
"""

#: Human names of the tests, by the key accepted in ``compare(test=...)``.
TEST_NAMES = {
    "welch": "Welch's t", "student": "Student's t", "mannwhitney": "Mann-Whitney U",
    "paired-t": "paired t", "wilcoxon": "Wilcoxon signed-rank",
}
#: Per-run aggregations accepted by ``select_rows(per_run=...)``.
PER_RUN = {"mean": "mean", "median": "median"}
#: SESOI of compare-runs for a metric no question declares.
DEFAULT_RUN_SESOI = 0.05
