"""Figures as the thesis prints them: every text at least 7 pt at the printed width, no empty panels, axes that
show every point and interval end whole, no series hidden under another.

Each drawing function of ``perflab.report`` is built at least once on small synthetic data (:data:`BUILDERS`) and
measured as LaTeX prints it: the saved PDF's page (tight bounding box) scaled to the width the chapter gives its
``\\includegraphics``.
"""

import io
import itertools
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.text import Text

from perflab import stats, study
from perflab.report import calibrate, factorial, figures, hostcpu, protocols, scenarios, style, sweep

ROOT = Path(__file__).resolve().parents[1]
RNG = np.random.default_rng(7)


# --- measuring ------------------------------------------------------------------------------------------------


def _saved_width(fig) -> float:
    """Width in inches of the PDF page ``fig`` is saved as (the style's tight bounding box)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="pdf")
    box = re.search(rb"/MediaBox \[\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*\]", buf.getvalue())
    return (float(box[3]) - float(box[1])) / 72


def printed_sizes(fig, width: float) -> list[tuple[float, str]]:
    """(size in points as printed at ``width`` of the text width, text) of every non-empty text of ``fig``."""
    scale = style.width(width) / _saved_width(fig)
    return sorted((t.get_fontsize() * scale, t.get_text()) for t in fig.findobj(Text)
                  if t.get_visible() and t.get_text().strip())


def _visible_axes(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]


def _points(ax):
    """(x, y, marker radius in pixels) of every marker or interval end drawn in ``ax``."""
    px = ax.figure.dpi / 72
    out = []
    for line in ax.get_lines():
        if line.get_transform() != ax.transData:  # a reference line across the axes (axhline): x in axes units
            continue
        xy = np.asarray(line.get_xydata(), float)
        marker = line.get_marker()
        radius = line.get_markersize() / 2 * px if marker not in (None, "None", "", " ", "none") else 0.0
        out += [(x, y, radius) for x, y in xy]
    for coll in ax.collections:
        if isinstance(coll, LineCollection):
            out += [(x, y, 0.0) for seg in coll.get_segments() for x, y in seg]
        elif isinstance(coll, PathCollection):
            sizes = coll.get_sizes()
            radius = (np.sqrt(sizes[0]) / 2 * px) if len(sizes) else 0.0
            out += [(x, y, radius) for x, y in coll.get_offsets()]
    return [(x, y, r) for x, y, r in out if np.isfinite(x) and np.isfinite(y)]


def outside(fig) -> list[str]:
    """Points or interval ends outside their axes' limits, and markers cut by the top of their axes."""
    fig.canvas.draw()
    found = []
    for ax in _visible_axes(fig):
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        top = ax.get_window_extent().y1
        for x, y, radius in _points(ax):
            if not (x0 <= x <= x1 and y0 <= y <= y1):
                found.append(f"{ax.get_title()!r}: ({x:g}, {y:g}) outside x {x0:g}..{x1:g}, y {y0:g}..{y1:g}")
            elif ax.transData.transform((x, y))[1] + radius > top + 0.5:
                found.append(f"{ax.get_title()!r}: the marker at ({x:g}, {y:g}) is cut by the top of the axes")
    return found


def hidden(fig) -> list[str]:
    """Series whose every marker lies under a filled marker of a series drawn over it."""
    fig.canvas.draw()
    found = []
    for ax in _visible_axes(fig):
        lines = [line for line in ax.get_lines()  # series with markers; an interval's caps ("_") are no series
                 if line.get_marker() not in (None, "None", "", " ", "none", "_", "|") and len(line.get_xydata())]
        for under, over in itertools.combinations(lines, 2):
            if over.get_zorder() < under.get_zorder():
                under, over = over, under
            if str(over.get_markerfacecolor()) == "none":
                continue
            a, b = ax.transData.transform(under.get_xydata()), ax.transData.transform(over.get_xydata())
            dist = np.min(np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2), axis=1)
            if np.all(dist < 0.5):
                found.append(f"{ax.get_title()!r}: {under.get_label()!r} under {over.get_label()!r}")
    return found


# --- the drawing functions on small synthetic data -------------------------------------------------------------


def _levels():
    rows = [{"run_id": f"r{b}-{lv}", "block": b, "level": lv, "value": 1e9 * (20 + 2 * i + RNG.normal(0, 1))}
            for b in range(8) for i, lv in enumerate(["1", "4"])]
    df = pd.DataFrame(rows)
    monitors = []
    for r in rows:
        for host in ("h1", "h2"):  # two hosts of one machine: the same load, nearly the same CPU
            monitors += [{"run_id": r["run_id"], "block": r["block"], "tool": "sadf", "host": host, "cpu": "all",
                          "metric": "cpu_usr", "value": 90.0 + (host == "h2") * 0.01},
                         {"run_id": r["run_id"], "block": r["block"], "tool": "sadf", "host": host, "cpu": None,
                          "metric": "load_1", "value": 10.0 + r["block"]}]
    return figures.levels(df, factor="level", value="value", summary=stats.describe(df, "value", "level"),
                          ylabel="iperf3 TCP throughput (Gbit/s)", xlabel="Parallel streams", scale=1e9,
                          monitors=pd.DataFrame(monitors))


def _cells(factors, levels, means):
    rows = [dict(zip(factors, combo)) for combo in itertools.product(*levels)]
    cells = pd.DataFrame(rows).assign(n=40, mean=means)
    return cells.assign(mean_ci_low=cells["mean"] * 0.97, mean_ci_high=cells["mean"] * 1.03)


def _factorial(panel: bool) -> factorial.FactorialResult:
    if panel:
        cells = _cells(["parallel", "mtu", "path"], [["1", "4", "16"], ["1500", "9000"], ["direct", "nat"]],
                       RNG.uniform(5e9, 9e9, 12))
        return factorial.FactorialResult("Throughput", "bit/s", ["parallel", "mtu", "path"], pd.DataFrame(), cells,
                                         pd.DataFrame())
    # both classes near one value: the axis from 0 must still end above the highest interval
    cells = _cells(["device_class", "cache"], [["hdd", "ssd"], ["off", "on (64 MiB)"]],
                   [3.0e8, 3.05e8, 3.1e8, 3.15e8])
    return factorial.FactorialResult("bandwidth", "byte/s", ["device_class", "cache"], pd.DataFrame(), cells,
                                     pd.DataFrame())


def _interaction_narrow():
    return factorial.interaction_figure(_factorial(False), x="cache", trace="device_class", scale=2**20,
                                        ylabel="rbd bench random read/write bandwidth (MiB/s)",
                                        labels={"device_class": "Device class", "cache": "librbd cache"}, width=0.62)


def _interaction_panels():
    return factorial.interaction_figure(_factorial(True), x="parallel", trace="path", panel="mtu", scale=1e9,
                                        ylabel="iperf2 throughput (Gbit/s)",
                                        labels={"parallel": "Streams", "mtu": "MTU", "path": "Path"})


def _heatmap():
    return factorial.heatmap_figure(_factorial(True), x="parallel", y="path", panel="mtu", scale=1e9,
                                    label="iperf2 throughput (Gbit/s)", labels={"parallel": "Streams", "path": "Path"})


def _sweep():
    rows = [{"device": "ssd", "numjobs": nj, "iodepth": qd, "_x": float(qd), "n": 40,
             "mean": 1000.0 * int(nj) * qd ** 0.5} for nj in ("1", "4", "16") for qd in (1, 2, 4, 8, 16, 32)]
    summary = pd.DataFrame(rows)
    summary = summary.assign(iodepth=summary["iodepth"].astype(str), mean_ci_low=summary["mean"] * 0.95,
                             mean_ci_high=summary["mean"] * 1.05)
    result = sweep.Sweep("iops", "iodepth", "numjobs", "device", pd.DataFrame(), summary, pd.DataFrame(),
                         pd.DataFrame(), None)
    return sweep.figure(result, ylabel="IOPS (log scale)", xlabel="queue depth per process", width=0.8)


SCENARIOS = ["alone", "idle", "stress", "stress+net"]
UDP = [scenarios.Metric(key="throughput", label="Throughput", unit="Mbit/s", scale=1e6),
       scenarios.Metric(key="loss", label="Loss", unit="%"),
       scenarios.Metric(key="reordered", label="Out of order", unit="packets")]


def _scenario_samples():
    def frame(values):
        rows = [{"run_id": f"{f}-{sc}-{b}", "block": b, "frame": f, "scenario": sc, "value": values(sc, b)}
                for f in ("512", "1518") for sc in SCENARIOS for b in range(6)]
        return pd.DataFrame(rows)
    # throughput: every sample near one value, far from 0 (the markers cut at the top of old Figs 4.2-4.4)
    return {"throughput": frame(lambda sc, b: 2.9e6 + 1e3 * ((b * 7) % 5)),
            "loss": frame(lambda sc, b: 0.1 * b + (sc == "stress+net")),
            "reordered": frame(lambda sc, b: 0.0)}  # no datagram out of order anywhere


def _scenarios(width=1.0):
    samples = _scenario_samples()
    result = scenarios.analyse(samples, panel="frame", scenario="scenario", baseline="alone", order=SCENARIOS)
    return scenarios.figure(samples, result, UDP, panel="frame", panel_label="Frame", scenario="scenario",
                            order=SCENARIOS, panel_unit="B", width=width)


def _calibrate():
    rungs = pd.DataFrame([{"frame": f, "pps": pps, "value": loss + 0.1 * k}
                          for f in (64, 1518) for pps, loss in ((1e4, 0.0), (2e4, 0.5), (4e4, 3.0), (8e4, 40.0))
                          for k in range(3)])
    result = pd.DataFrame({"frame": [64, 1518], "rate": [2e4, 2e4], "loss": [0.6, 0.6]})
    return calibrate.figure(rungs, result, threshold=1.0)


def _hostcpu():
    means = RNG.uniform(0.1, 0.5, 16)
    means[8:12] = 3e-4  # the router costs almost nothing: its four lines lie on one another
    cells = _cells(["role", "mtu", "path"], [["client", "server", "router", "all"], ["1500", "9000"],
                                             ["direct", "nat"]], means)
    per_gbit = factorial.FactorialResult("CPU load per Gbit/s", "CPU per Gbit/s", ["role", "mtu", "path"],
                                         pd.DataFrame(), cells, pd.DataFrame())
    result = hostcpu.HostCpu(["client", "server", "router", "all"], per_gbit, per_gbit, pd.DataFrame(),
                             pd.Series(dtype=float), pd.DataFrame())
    return hostcpu.figure(result, x="mtu", trace=["path"], labels={"mtu": "MTU", "path": "Path"})


def _protocols():
    runs = pd.DataFrame([{"protocol": p, "workload": w, "mtu": mtu, "repetition": k,
                          "throughput": 2**20 * (100 + 10 * i + RNG.normal(0, 3))}
                         for i, p in enumerate(("aoe", "nbd", "iscsi")) for w in ("seqread", "randwrite")
                         for mtu in (1500, 9000) for k in range(3) if not (p == "iscsi" and w == "randwrite")])
    return protocols.figure(runs, "throughput")


#: name -> (a function drawing one figure, the fraction of the text width it is printed at).
BUILDERS = {"levels": (_levels, 1.0), "interaction-narrow": (_interaction_narrow, 0.62),
            "interaction-panels": (_interaction_panels, 1.0), "heatmap": (_heatmap, 1.0), "sweep": (_sweep, 0.8),
            "scenarios": (_scenarios, 1.0), "calibrate": (_calibrate, 1.0), "hostcpu": (_hostcpu, 1.0),
            "protocols": (_protocols, 1.0)}


@pytest.fixture(params=sorted(BUILDERS))
def built(request):
    build, width = BUILDERS[request.param]
    fig = build()
    yield fig, width
    plt.close(fig)


# --- the tests -------------------------------------------------------------------------------------------------


def test_every_text_of_every_figure_is_at_least_7_pt_as_printed(built):
    fig, width = built
    sizes = printed_sizes(fig, width)
    assert sizes, "a figure with text"
    smallest = sizes[0]
    assert smallest[0] >= style.MIN_TEXT_PT, f"{smallest[1]!r} is printed at {smallest[0]:.1f} pt"


def test_the_size_check_finds_a_figure_drawn_wider_than_it_is_printed():
    """The old Figs 5.6-5.8: drawn at the full text width, printed at 0.62 of it, 8-pt ticks came out at 5.2 pt."""
    fig = factorial.interaction_figure(_factorial(False), x="cache", trace="device_class", scale=2**20,
                                       ylabel="MiB/s", width=1.0)
    try:
        assert printed_sizes(fig, 0.62)[0][0] < style.MIN_TEXT_PT
        assert printed_sizes(fig, 1.0)[0][0] >= style.MIN_TEXT_PT
    finally:
        plt.close(fig)


def test_a_figure_is_drawn_at_the_width_it_is_printed():
    fig = _interaction_narrow()
    try:
        assert _saved_width(fig) == pytest.approx(style.width(0.62), rel=0.05)
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="fraction of the text width"):
        style.width(1.6)


def _includes():
    """(chapter, figure stem, printed fraction of the text width) of every figure a study's chapter includes."""
    found = []
    for s in study.discover(ROOT):
        if not s.chapter:
            continue
        text = (ROOT / s.chapter).read_text()
        for m in re.finditer(r"\\includegraphics\[width=([\d.]*)\\textwidth\]\{([^}]+)\.pdf\}", text):
            found.append((s, m[2], float(m[1] or 1)))
    return found


def test_every_figure_a_chapter_includes_is_drawn_at_the_width_it_is_printed_at():
    """The chapter's \\includegraphics width and the analysis's ``width`` parameter agree, so nothing is scaled."""
    includes = _includes()
    assert any(frac < 1 for _, _, frac in includes), "the chapters include narrower figures"
    for s, stem, frac in includes:
        makers = [a for a in s.analyses if f"paper/figures/{stem}.pdf" in a.outputs.values()]
        assert makers, f"{s.chapter}: no analysis of {s.id} draws {stem}.pdf"
        drawn = makers[0].parameters.get("width", 1.0)
        assert drawn == pytest.approx(frac), (f"{s.chapter} prints {stem}.pdf at {frac:g} of the text width; "
                                              f"its analysis {makers[0].name} draws it at {drawn:g}")


def test_every_point_and_interval_end_lies_inside_its_axes_and_no_marker_is_cut(built):
    fig, _ = built
    assert outside(fig) == []


def test_no_series_hides_under_another(built):
    fig, _ = built
    assert hidden(fig) == []


def test_the_checks_find_a_cut_marker_and_a_hidden_series():
    """What the old figures had: the top of a 0-based axis at the autoscaled top of values near one number (the
    markers of Figs 4.2-4.4), and two hosts' equal series with filled markers (Fig. 2.1(d))."""
    fig, ax = plt.subplots()
    ax.plot([0, 1], [2.9, 2.91], "o", ms=6)
    ax.set_ylim(0, ax.get_ylim()[1])
    ax.plot([0, 1], [1.0, 1.2], "s", label="h1")
    ax.plot([0, 1], [1.0, 1.2], "D", label="h2")
    try:
        assert any("cut by the top" in f for f in outside(fig))
        assert any("'h1' under 'h2'" in f for f in hidden(fig))
    finally:
        plt.close(fig)


def test_a_metric_zero_or_missing_in_every_sample_gets_no_row_and_the_figure_says_so():
    samples = _scenario_samples()
    samples["loss"] = samples["loss"].iloc[0:0]  # missing everywhere: the campaign's rows have no loss
    assert [m.key for m in scenarios.empty_metrics(samples, UDP)] == ["loss", "reordered"]
    result = scenarios.analyse(samples, panel="frame", scenario="scenario", baseline="alone", order=SCENARIOS)
    fig = scenarios.figure(samples, result, UDP, panel="frame", panel_label="Frame", scenario="scenario",
                           order=SCENARIOS, panel_unit="B")
    try:
        assert len(fig.axes) == 2, "one row (throughput) of two panels (frame sizes)"
        assert [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()] == ["Throughput (Mbit/s)"]
        note = fig.get_supxlabel()
        assert note == "Not drawn: loss and out of order, zero or missing in every sample.", note
    finally:
        plt.close(fig)


def test_a_figure_with_data_in_every_metric_has_no_note():
    samples = _scenario_samples()
    samples["reordered"] = samples["reordered"].assign(value=lambda d: (d["block"] == 2).astype(float))
    result = scenarios.analyse(samples, panel="frame", scenario="scenario", baseline="alone", order=SCENARIOS)
    fig = scenarios.figure(samples, result, UDP, panel="frame", panel_label="Frame", scenario="scenario",
                           order=SCENARIOS, panel_unit="B")
    try:
        assert len(fig.axes) == 6 and not fig.get_supxlabel()
    finally:
        plt.close(fig)
