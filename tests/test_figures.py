"""Figures a publisher accepts: TrueType fonts, no overlapping text, natural level order, grayscale-safe."""

import importlib
import itertools
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from perflab import files, stats, study
from perflab.report import figures

ROOT = Path(__file__).resolve().parents[1]


def _panel(fig, letter):
    """The axes whose title starts with ``(letter)``."""
    return next(ax for ax in fig.axes if ax.get_title(loc="left").startswith(f"({letter})"))


def _data(levels, n=8, seed=3):
    rng = np.random.default_rng(seed)
    rows = [{"level": lv, "value": 1e9 * (1 + i + rng.normal(0, 0.05)), "block": b}
            for b in range(n) for i, lv in enumerate(levels)]
    return pd.DataFrame(rows)


@pytest.fixture
def fig():
    df = _data(["128M", "4k", "32M", "32k", "1G"])
    f = figures.levels(df, factor="level", value="value", summary=stats.describe(df, "value", "level"),
                       ylabel="Throughput (Gbit/s)", xlabel="Working set", scale=1e9)
    yield f
    plt.close(f)


def test_levels_sort_by_value_with_size_suffixes():
    assert files.natural_order(["128M", "4k", "32M", "1G", "32k", "512"]) == ["512", "4k", "32k", "32M", "128M", "1G"]
    assert files.natural_order([16, 2, 128]) == [2, 16, 128]
    assert files.natural_order(["node10", "node9", "node1"]) == ["node1", "node9", "node10"]
    assert files.natural_order(["4KiB", "1MiB", "64KiB"]) == ["4KiB", "64KiB", "1MiB"]


def test_describe_lists_levels_in_natural_order():
    df = _data(["128M", "4k", "32M"], n=3)
    assert list(stats.describe(df, "value", "level")["level"]) == ["4k", "32M", "128M"]


def test_the_figure_shows_levels_in_natural_order(fig):
    ticks = [t.get_text() for t in _panel(fig, 'a').get_xticklabels()]
    assert ticks == ["4k", "32k", "32M", "128M", "1G"]
    legend = _panel(fig, 'b').get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ticks


def _ticklabels(axis):
    """The tick labels drawn (those of ticks inside the view limits)."""
    lo, hi = sorted(axis.get_view_interval())
    return [t.label1 for t, loc in zip(axis.get_major_ticks(), axis.get_majorticklocs()) if lo <= loc <= hi]


def _texts(ax):
    texts = [ax.title, ax._left_title, ax.xaxis.label, ax.yaxis.label, *_ticklabels(ax.xaxis), *_ticklabels(ax.yaxis)]
    if ax.get_legend():
        texts += [*ax.get_legend().get_texts(), ax.get_legend().get_title()]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def _overlaps(fig):
    """Texts of one panel that overlap a text or the area of another panel, or leave the figure."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = {ax: [(t.get_text(), t.get_window_extent(renderer)) for t in _texts(ax)] for ax in fig.axes}
    found = []
    for a, b in itertools.permutations(fig.axes, 2):
        found += [(ta, tb) for (ta, ba), (tb, bb) in itertools.product(boxes[a], boxes[b]) if ba.overlaps(bb)]
        found += [(t, "another panel") for t, box in boxes[a] if box.overlaps(b.get_window_extent(renderer))]
    width, height = fig.canvas.get_width_height()
    found += [(t, "the figure's edge") for ax in fig.axes for t, box in boxes[ax]
              if box.x0 < 0 or box.y0 < 0 or box.x1 > width or box.y1 > height]
    return found


def test_no_text_of_one_panel_overlaps_another_panels_text(fig):
    assert all(_texts(ax) for ax in fig.axes)
    assert _overlaps(fig) == []


def _level_analyses():
    return [a for s in study.discover(ROOT) for a in s.analyses if "factor_label" in a.parameters]


@pytest.mark.parametrize("analysis", _level_analyses(), ids=lambda a: a.name)
def test_the_labels_of_every_configured_analysis_fit(analysis):
    p = analysis.parameters
    df = _data(["a", "b", "c"])
    f = figures.levels(df, factor="level", value="value", summary=stats.describe(df, "value", "level"),
                       ylabel=f"{p['quantity']} ({p['unit']})", xlabel=p["factor_label"], scale=1e9)
    try:
        assert _overlaps(f) == []
    finally:
        plt.close(f)


def _monitors(df, hosts=("h1", "h2")):
    """sysstat rows per sample and host: per-CPU and all-CPU utilisation and the load, as the tidy table has them."""
    rows = []
    for r in df.to_dict("records"):
        for i, host in enumerate(hosts):
            for cpu, usr in (("all", 20.0 + 10 * i), ("0", 90.0)):
                rows += [{"run_id": r["run_id"], "block": r["block"], "tool": "sadf", "host": host, "cpu": cpu,
                          "metric": "cpu_usr", "value": usr},
                         {"run_id": r["run_id"], "block": r["block"], "tool": "sadf", "host": host, "cpu": cpu,
                          "metric": "cpu_sys", "value": 5.0}]
            rows.append({"run_id": r["run_id"], "block": r["block"], "tool": "sadf", "host": host, "cpu": None,
                         "metric": "load_1", "value": 1.0 + r["block"]})
    rows.append({"run_id": "elsewhere", "block": 0, "tool": "sadf", "host": "h1", "cpu": "all", "metric": "cpu_usr",
                 "value": 1000.0})
    return pd.DataFrame(rows)


@pytest.fixture
def monitored():
    df = _data(["1", "4"]).assign(run_id=lambda d: [f"s{i}" for i in range(len(d))])
    f = figures.levels(df, factor="level", value="value", summary=stats.describe(df, "value", "level", level=0.99),
                       ylabel="Throughput (Gbit/s)", xlabel="Parallel streams", scale=1e9, monitors=_monitors(df))
    yield f
    plt.close(f)


def test_the_monitors_of_the_hosts_are_plotted_under_the_run_order(monitored):
    order, cpu, load = _panel(monitored, "b"), _panel(monitored, "d"), _panel(monitored, "e")
    assert "CPU busy" in cpu.get_title(loc="left") and "load" in load.get_title(loc="left")
    assert order.get_position().y0 > cpu.get_position().y1 > load.get_position().y1
    assert cpu.get_shared_x_axes().joined(cpu, order) and load.get_shared_x_axes().joined(load, order)
    busy = {line.get_label(): set(line.get_ydata()) for line in cpu.get_lines()}
    assert busy == {"h1": {25.0}, "h2": {35.0}}, "usr + sys over all CPUs, only the samples plotted above"
    assert [line.get_label() for line in load.get_lines()] == ["h1", "h2"]
    assert not order.xaxis.label.get_visible() and load.xaxis.label.get_visible()
    assert _overlaps(monitored) == []


def test_the_panels_title_names_the_analysis_confidence_level(monitored):
    assert _panel(monitored, "a").get_title(loc="left") == "(a) samples, mean, 99 % CI"


def test_without_monitor_rows_the_figure_has_three_panels():
    df = _data(["1", "4"]).assign(run_id=lambda d: [f"s{i}" for i in range(len(d))])
    other = pd.DataFrame({"run_id": ["s0"], "block": [0], "tool": ["iperf3"], "host": ["h1"], "metric": ["x"],
                          "value": [1.0]})
    f = figures.levels(df, factor="level", value="value", summary=stats.describe(df, "value", "level"),
                       ylabel="Throughput (Gbit/s)", scale=1e9, monitors=other)
    try:
        assert len(f.axes) == 3
    finally:
        plt.close(f)


def test_the_overlap_check_finds_overlapping_panels():
    bad, (left, right) = plt.subplots(1, 2, figsize=(2, 1.5), layout=None)
    left.set_title("(a) a long title that runs into the next panel", loc="left")
    right.set_ylabel("a label")
    try:
        assert _overlaps(bad)
    finally:
        plt.close(bad)


def test_run_order_ticks_are_whole_blocks():
    df = _data(["a", "b"], n=3).assign(block=lambda d: d["block"] + 1)
    f = figures.levels(df, factor="level", value="value", summary=stats.describe(df, "value", "level"),
                       ylabel="Throughput (Gbit/s)", scale=1e9)
    ticks = [t for t in _panel(f, 'b').get_xticks() if 1 <= t <= 3]
    plt.close(f)
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_every_axis_is_labelled_and_value_axes_carry_the_unit(fig):
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel()
    assert [ax.get_ylabel() for ax in (_panel(fig, 'a'), _panel(fig, 'b'))] == ["Throughput (Gbit/s)"] * 2
    assert _panel(fig, 'c').get_xlabel() == "Throughput (Gbit/s)"


def test_levels_differ_by_marker_and_line_style_not_only_colour(fig):
    lines = _panel(fig, 'b').get_lines()
    assert len({line.get_marker() for line in lines}) == len(lines) == 5
    assert len({line._dash_pattern[1] and tuple(line._dash_pattern[1]) for line in lines}) == 5


def test_pdf_embeds_truetype_fonts_and_no_type3(fig, tmp_path):
    paths = figures.save(fig, tmp_path / "f", inputs=[], generator="test")
    pdf = paths[0].read_bytes()
    assert b"/FontFile2" in pdf, "fonts are embedded as TrueType"
    assert b"/Type3" not in pdf and b"/Subtype /Type3" not in pdf


def test_figures_display_as_png_in_an_ipython_kernel(fig):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        importlib.reload(figures)
        data, _ = shell.display_formatter.format(fig)
        assert data["image/png"][:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        InteractiveShell.clear_instance()


def test_saving_the_same_figure_twice_gives_the_same_bytes(fig, tmp_path):
    first = [p.read_bytes() for p in figures.save(fig, tmp_path / "a", inputs=[], generator="test")]
    second = [p.read_bytes() for p in figures.save(fig, tmp_path / "b", inputs=[], generator="test")]
    assert first == second, "a rebuilt figure can be compared byte for byte"


def test_interaction_figure_draws_a_cell_of_one_repeated_value():
    """A cell whose samples all print the same value (a tool's precision) has interval ends that can
    differ from its mean by rounding alone; the figure draws it with a zero-length bar."""
    from perflab.report import factorial

    mean = 11534336.0
    cells = pd.DataFrame({"device_class": ["hdd", "ssd"], "cache": ["off", "off"], "n": [40, 40],
                          "mean": [mean, 2e8], "mean_ci_low": [mean * (1 + 1e-15), 1.9e8],
                          "mean_ci_high": [mean * (1 - 1e-15), 2.1e8]})
    result = factorial.FactorialResult("bandwidth", "byte/s", ["device_class", "cache"], pd.DataFrame(), cells,
                                       pd.DataFrame())
    fig = factorial.interaction_figure(result, x="cache", trace="device_class", ylabel="MiB/s", scale=2**20)
    bars = [seg for c in fig.axes[0].collections for seg in c.get_segments()]
    assert bars and all(seg[1][1] >= seg[0][1] for seg in bars)
    plt.close(fig)
