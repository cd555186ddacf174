"""Seed 004's layouts for block protocols: per-operation costs, grouped bars and relative-difference tables.

:func:`per_run` turns a ``blockproto`` campaign's tidy table into one row per sample:
throughput, IOPS, the initiator's and the target's CPU seconds per operation (the initiator's
during its I/O alone where its load generator reports it, else the whole command's) and the
bytes on the wire per operation, i.e. received plus sent bytes of the initiator's interface on
the measured link (the monitors' ``procstat`` ``/proc/net/dev`` deltas of host ``initiator``)
divided by the sample's operations.
:func:`cells` gives each cell's mean and interval (:func:`perflab.stats.describe`), :func:`relative` the
comparisons of one factor's levels with a baseline level (the paired t on the RMIT blocks, or Welch's t
without them; Fieller's interval of the relative difference; both Bonferroni-adjusted over the table:
:func:`perflab.stats.family.compare_family`), :func:`figure` the seed's Fig. 2/4/5 layout (panels per
workload, bars per protocol and MTU, 95 % CI whiskers) and :func:`write` every output of the template.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import stats
from ..errors import InputError
from ..formats.published import read_claims
from ..stats.blocked import has_blocks, paired_by_block
from ..stats.describe import mean_ci, range_flags
from ..stats.family import compare_family, family_rows
from . import figures, latex, lineage, macros, style

#: Metrics of the per-run table: column -> (axis label, display scale, display unit).
METRICS: dict[str, tuple[str, float, str]] = {
    "throughput": ("Throughput", 2**20, "MiB/s"),
    "iops": ("IOPS", 1.0, "op/s"),
    "cpu_per_op": ("CPU time per op.", 1e-6, "µs"),
    "initiator_cpu_per_op": ("Initiator CPU per op.", 1e-6, "µs"),
    "target_cpu_per_op": ("Target CPU per op.", 1e-6, "µs"),
    "cgroup_cpu_per_op": ("CPU time per op. (cgroups)", 1e-6, "µs"),
    "wire_bytes_per_op": ("Wire bytes per op.", 2**10, "KiB"),
}
#: Workload levels in their natural order: the microbenchmark's, then the macro workloads (filebench's personalities
#: as fio jobs, and webserver's reads alone).
WORKLOADS = ("seqread", "seqwrite", "randread", "randwrite", "webreads", "webserver", "fileserver", "varmail", "oltp")
SHORT = {"throughput": "Throughput", "cpu_per_op": "CPU/op", "wire_bytes_per_op": "Bytes/op"}
TITLES = {"seqread": "Sequential read", "seqwrite": "Sequential write", "randread": "Random read",
          "randwrite": "Random write", "webreads": "Webserver reads", "webserver": "Webserver",
          "fileserver": "Fileserver", "varmail": "Varmail", "oltp": "OLTP"}
#: Protocol levels in their order: ``nbd-fio`` is NBD driven by fio's nbd engine instead of perflab's load loop.
PROTOCOLS = ("aoe", "nbd", "nbd-fio", "iscsi")
NAMES = {"aoe": "AoE", "iscsi": "iSCSI", "nbd": "NBD", "nbd-fio": "NBD (fio)"}


def per_run(df: pd.DataFrame, *, links: Mapping[str, tuple[str, int] | Sequence[Any]], initiator: str = "ini",
            target: str = "tgt", workload: str = "rw") -> pd.DataFrame:
    """One row per measured sample: factors, MTU, the tool's metrics and the per-operation costs.

    ``links`` maps each level of the ``link`` factor to ``(interface, mtu)``: the initiator's
    interface on that link, whose byte counters are the traffic of the sample: ``wire_bytes_per_op`` is
    that interface's bytes per operation (the tidy metric ``bytes_per_op`` of ``procstat`` counts every
    interface but ``lo``). ``workload``
    names the factor whose levels are the workloads (column ``workload`` of the result).
    ``initiator_io_cpu_per_op`` is the initiator's CPU per operation during its I/O alone
    (``loop_cpu_per_op``) where its load generator reports it, else the whole command's
    (``initiator_cpu_per_op``, whose interpreter start-up a Python initiator pays); column
    ``initiator_account`` says which (``io`` or ``process``), and ``cpu_per_op`` is it plus the
    target's. Where the runner recorded the hosts' cgroup counters, ``initiator_cgroup_cpu_per_op`` and
    ``target_cgroup_cpu_per_op`` are each host's CPU seconds per operation by that account
    (everything the host ran during the measured command), ``cgroup_cpu_per_op`` their sum.
    """
    df = df[~df["warmup"].astype(bool)]
    tool = df[df["tool"] == "blockproto"].pivot_table(index="run_id", columns="metric", values="value", aggfunc="first")
    if tool.empty:
        raise InputError("no blockproto rows in the tidy table; pass the tidy table of a blockproto campaign")
    if workload not in df:
        raise InputError(f"no factor {workload!r} in the tidy table; name the campaign's workload factor (workload=...)")
    kept = ["protocol", workload, "link", "repetition", *(["block"] if "block" in df else [])]
    factors = df.drop_duplicates("run_id").set_index("run_id")[kept]
    factors = factors.rename(columns={workload: "workload"})
    out = factors.join(tool, how="inner")
    unknown = sorted(set(out["link"]) - set(links))
    if unknown:
        raise InputError(f"link level(s) {unknown} have no (interface, mtu) in `links`; add them")
    net = df[(df["tool"] == "procstat") & (df["host"] == initiator) & df["metric"].isin(["net_rx_bytes", "net_tx_bytes"])
             & ~df["summary"].astype(bool)]
    if "interval_start" in net:
        net = net[net["interval_start"].isna()]
    wire = {}
    for run_id, rows in net.groupby("run_id"):
        iface = links[out.at[run_id, "link"]][0] if run_id in out.index else None
        wire[run_id] = float(rows.loc[rows["iface"] == iface, "value"].sum())
    out["wire_bytes"] = pd.Series(wire)
    out["mtu"] = [int(links[link][1]) for link in out["link"]]
    out["wire_bytes_per_op"] = out["wire_bytes"] / out["ops"]
    loop = out["loop_cpu_per_op"] if "loop_cpu_per_op" in out else pd.Series(np.nan, index=out.index)
    out["initiator_account"] = np.where(loop.notna(), "io", "process")
    out["initiator_io_cpu_per_op"] = loop.fillna(out["initiator_cpu_per_op"])
    out["cpu_per_op"] = out["initiator_io_cpu_per_op"] + out.get("target_cpu_per_op", 0.0)
    cgroup = df[(df["tool"] == "cgroup") & (df["metric"] == "cpu_seconds_per_op")] if "host" in df else df.iloc[:0]
    for role, host in (("initiator", initiator), ("target", target)):
        per_host = cgroup[cgroup["host"] == host].groupby("run_id")["value"].first()
        out[f"{role}_cgroup_cpu_per_op"] = per_host.reindex(out.index).astype(float)
    out["cgroup_cpu_per_op"] = out["initiator_cgroup_cpu_per_op"] + out["target_cgroup_cpu_per_op"]
    return out.reset_index().sort_values(["protocol", "workload", "mtu", "repetition"]).reset_index(drop=True)


def cells(runs: pd.DataFrame, metric: str, level: float = 0.95) -> pd.DataFrame:
    """Per (protocol, workload, mtu): n, mean, SD and the interval of the mean of ``metric``
    (:func:`perflab.stats.describe`, on the log scale where every value is positive)."""
    data = runs.dropna(subset=[metric])
    if data.empty:
        return pd.DataFrame(columns=["protocol", "workload", "mtu", "n", "mean", "sd", "ci_low", "ci_high"])
    desc = stats.describe(data, metric, ["protocol", "workload", "mtu"], level, **range_flags(data[metric]))
    return desc.rename(columns={"mean_ci_low": "ci_low", "mean_ci_high": "ci_high"})[
        ["protocol", "workload", "mtu", "n", "mean", "sd", "ci_low", "ci_high"]]


def relative(runs: pd.DataFrame, metrics: Sequence[str], *, baseline: object = "aoe", factor: str = "protocol",
             within: Sequence[str] = ("workload", "mtu"), level: float = 0.95) -> pd.DataFrame:
    """Every other level of ``factor`` against ``baseline`` per cell of ``within`` and metric: the relative
    difference ``other / baseline - 1`` with Fieller's interval and its p, both Bonferroni-adjusted over the
    table (:func:`perflab.stats.family.compare_family`), so that each interval agrees with its adjusted p.

    When every comparison's samples carry RMIT blocks holding both levels (column ``block``), the test is
    the paired t on the block differences (:func:`perflab.stats.blocked.paired_by_block`), so that a shift of
    the machine between rounds cancels; otherwise Welch's t. Column ``blocked`` says which."""
    keys, cells_ = [], []
    for metric in metrics:
        for cell, g in runs.groupby(list(within)):
            g = g.dropna(subset=[metric])
            for other in sorted(set(g[factor]) - {baseline}, key=str):
                pair = g[g[factor].isin([baseline, other])]
                if min((pair[factor] == baseline).sum(), (pair[factor] == other).sum()) < 2:
                    continue
                keys.append({"metric": metric, **dict(zip(within, cell)), "other": other,
                             "n": f"{(pair[factor] == baseline).sum()}/{(pair[factor] == other).sum()}"})
                cells_.append((metric, pair, other))
    blocked = bool(cells_) and all("block" in pair and has_blocks(pair, factor) for _, pair, _ in cells_)
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    for metric, pair, other in cells_:
        if blocked:
            a, b, _ = paired_by_block(pair, metric, factor, "block", baseline, other)
        else:
            a, b = (pair.loc[pair[factor] == level, metric].to_numpy(float) for level in (baseline, other))
        pairs.append((a, b))
    rows = [{**k, **r, "blocked": blocked} for k, r in zip(keys, family_rows(
        compare_family(pairs, level=level, paired=blocked), nonnegative=True))]  # every metric here is a count or time
    return pd.DataFrame(rows, columns=["metric", *within, "other", "n", "rel_diff", "ci_low", "ci_high", "p",
                                       "p_adjusted", "ci_level", "correction", "blocked"])


def figure(runs: pd.DataFrame, metric: str, *, level: float = 0.95) -> plt.Figure:
    """The seed's layout: a panel per workload, bars per protocol, one bar per MTU with its t interval
    (cut at 0: with n = 3 and a noisy machine a lower bound can be negative)."""
    style.use()
    label, scale, unit = METRICS[metric]
    table = cells(runs, metric, level)
    present = [w for w in WORKLOADS if w in set(table["workload"])]
    present += sorted(set(table["workload"]) - set(present))
    ran = {p: set(table.loc[table["protocol"] == p, "workload"]) for p in PROTOCOLS}
    mtus = sorted(set(table["mtu"]))
    # a protocol that ran in at least half the panels keeps its place in each (marked "not run" where it did not)
    panels = [[p for p in PROTOCOLS if rw in ran[p] or (ran[p] and 2 * len(ran[p]) >= len(present))] for rw in present]
    fig, axes = plt.subplots(1, len(present), figsize=(style.TEXT_WIDTH, 2.5), layout="constrained", squeeze=False,
                             gridspec_kw={"width_ratios": [len(shown) + 0.6 for shown in panels]})
    width = 0.8 / max(len(mtus), 1)
    for ax, rw, shown in zip(axes[0], present, panels):
        for j, mtu in enumerate(mtus):
            sub = table[(table["workload"] == rw) & (table["mtu"] == mtu)].set_index("protocol").reindex(shown)
            xs = np.arange(len(shown)) + (j - (len(mtus) - 1) / 2) * width
            mean = sub["mean"].to_numpy(float) / scale
            err = np.vstack([mean - sub["ci_low"].to_numpy(float) / scale, sub["ci_high"].to_numpy(float) / scale - mean])
            ax.bar(xs, mean, width, color=["0.35", "0.8"][j % 2], edgecolor="black", linewidth=0.5,
                   hatch=["", "//"][j % 2], label=f"MTU {mtu}")
            ax.errorbar(xs, mean, yerr=np.nan_to_num(err), fmt="none", ecolor="black", capsize=2, linewidth=0.8)
        for i, protocol in enumerate(shown):
            if not ((table["workload"] == rw) & (table["protocol"] == protocol)).any():
                ax.text(i, 0, "not run", rotation=90, ha="center", va="bottom", fontsize=style.SMALL_PT)
        ax.set_xticks(np.arange(len(shown)), [NAMES.get(p, p) for p in shown], rotation=35, ha="right",
                      rotation_mode="anchor")
        ax.set_xlim(-0.8, len(shown) - 0.2)
        ax.set_title(TITLES.get(rw, rw))
        figures.from_zero(ax)
    axes[0][0].set_ylabel(f"{label} ({unit})")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside upper center", ncols=len(mtus))
    return fig


def summary_latex(rel: pd.DataFrame, *, caption: str, label: str, baseline: object = "aoe",
                  factor: str = "protocol") -> str:
    """The relative-difference table of :func:`relative`: each other level of ``factor`` against ``baseline``
    per metric and cell, its change above its adjusted interval. A column that holds one value throughout (a
    campaign's one MTU, every comparison's n) is said once in the note, so that the table stands upright."""
    within = [c for c in ("workload", "protocol", "mtu") if c in rel and c != factor]
    one = {c: rel[c].astype(str).nunique() == 1 for c in (*within, "n")}
    heads = {"workload": "Workload", "protocol": "Protocol", "mtu": "MTU"}
    shown = pd.DataFrame({"Metric": [SHORT.get(m, m) for m in rel["metric"]]})
    for c in within:
        if not one[c]:
            shown[heads[c]] = [_level(c, v) for v in rel[c]]
    shown[heads.get(factor, factor)] = [_level(factor, v) for v in rel["other"]]
    if not one["n"]:
        shown["n"] = list(rel["n"])
    shown[latex.header("Change", f"{{[}}{_level_text(rel)} CI{{]}}")] = [
        latex.cell(latex.percent_change(v), latex.format_ci(a, b, percent=True))
        for v, a, b in zip(rel["rel_diff"], rel["ci_low"], rel["ci_high"])]
    shown[latex.header("$p$", "(Bonf.)")] = [latex.format_p(p) for p in rel["p_adjusted"]]
    shown.loc[shown["Metric"].duplicated(), "Metric"] = ""
    said = [f"{heads[c]}: {_level(c, rel[c].iloc[0])}" for c in within if one[c]] + \
        ([f"n = {rel['n'].iloc[0]} samples ({_level(factor, baseline)}/other)"] if one["n"] and len(rel) else [])
    how = ("the paired $t$ on the differences within the RMIT blocks" if len(rel) and bool(rel["blocked"].all())
           else "Welch's $t$")
    return latex.latex_table(shown, caption=caption, label=label, escape=False, narrow=True,
                             column_format="l" * (len(shown.columns) - 2) + "rr",
                             notes=[("; ".join(said) + ". ") * bool(said)
                                    + "CPU/op: initiator plus target CPU time per operation; Bytes/op: bytes received "
                                    "plus sent by the initiator's storage interface per operation. Change: relative "
                                    f"difference of means, other / {_level(factor, baseline)} $-$ 1, with Fieller's "
                                    f"interval; $p$: {how}. $p$-values and intervals are both Bonferroni-adjusted over the "
                                    f"{len(rel)} comparisons of the table (each interval at {_level_text(rel)}), "
                                    "so an interval excludes no change exactly when its adjusted $p$ is below 0.05."])


def _level(factor: str, value: Any) -> str:
    """A level of ``factor`` as a table shows it: a protocol's or workload's name, an MTU as a number."""
    if factor == "protocol":
        return NAMES.get(str(value), latex.escape_latex(str(value)))
    if factor == "workload":
        return TITLES.get(str(value), latex.escape_latex(str(value)))
    return str(int(value)) if factor == "mtu" else latex.escape_latex(str(value))


def _level_text(rel: pd.DataFrame) -> str:
    """The adjusted confidence level of a family's intervals, as LaTeX (e.g. ``99.7\\,\\%``)."""
    return latex.level_text(float(rel["ci_level"].iloc[0]) if len(rel) else 0.95)


def _comparison_values(rel: pd.DataFrame, prefix: str, key: str) -> dict[str, str]:
    """Inline values of a :func:`relative` table, ``<prefix>/<metric>/<key level>/<workload>[/<mtu>]/{change,ci,p}``
    (the MTU when the table has several): each comparison's change, its adjusted interval and adjusted p, as the
    tables print them."""
    values: dict[str, str] = {}
    several = "mtu" in rel and rel["mtu"].nunique() > 1
    for _, r in rel.iterrows():
        stem = f"{prefix}/{r['metric']}/{r[key]}/{r['workload']}" + (f"/{int(r['mtu'])}" if several else "")
        values |= {f"{stem}/change": latex.percent_change(r["rel_diff"]),
                   f"{stem}/ci": latex.format_ci(r["ci_low"], r["ci_high"], percent=True),
                   f"{stem}/p": latex.format_p(r["p_adjusted"])}
    return values


def accounting(runs: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Process against cgroup accounting per (protocol, workload, MTU) and host role: the mean CPU seconds per
    operation by each, and the mean of the per-sample ratio cgroup / process with its t interval."""
    rows = []
    for (protocol, rw, mtu), g in runs.groupby(["protocol", "workload", "mtu"]):
        row: dict = {"protocol": protocol, "workload": rw, "mtu": mtu}
        for role in ("initiator", "target"):
            both = g[[f"{role}_cpu_per_op", f"{role}_cgroup_cpu_per_op"]].dropna() \
                if f"{role}_cpu_per_op" in g else pd.DataFrame()
            ratio = (both.iloc[:, 1] / both.iloc[:, 0]).replace([np.inf, -np.inf], np.nan).dropna() if len(both) else []
            low, high = mean_ci(np.asarray(ratio, float), level) if len(ratio) >= 2 else (np.nan, np.nan)
            row |= {f"{role}_n": len(both), f"{role}_process": both.iloc[:, 0].mean() if len(both) else np.nan,
                    f"{role}_cgroup": both.iloc[:, 1].mean() if len(both) else np.nan,
                    f"{role}_ratio": float(np.mean(ratio)) if len(ratio) else np.nan,
                    f"{role}_ratio_low": low, f"{role}_ratio_high": high}
        rows.append(row)
    return pd.DataFrame(rows)


def accounting_latex(acc: pd.DataFrame, *, caption: str, label: str) -> str:
    """The two CPU accounts side by side, per cell and host role (µs per operation, the ratio above its
    interval); a campaign's one MTU is said in the note."""
    order = {w: i for i, w in enumerate(WORKLOADS)}
    acc = acc.assign(_o=[order.get(w, len(order)) for w in acc["workload"]]).sort_values(["_o", "mtu", "protocol"])
    us = lambda v: "--" if pd.isna(v) else f"{v * 1e6:.0f}"  # noqa: E731
    ratio = lambda r, a, b: "--" if pd.isna(r) else latex.cell(f"{r:.2f}", f"[{a:.2f}, {b:.2f}]")  # noqa: E731
    one_mtu = acc["mtu"].nunique() == 1
    shown = pd.DataFrame({"Workload": [TITLES.get(w, w) for w in acc["workload"]]})
    if not one_mtu:
        shown["MTU"] = list(acc["mtu"].astype(int).astype(str))
    shown["Protocol"] = [NAMES.get(p, p) for p in acc["protocol"]]
    for who, role in (("Ini.", "initiator"), ("Tgt.", "target")):
        shown[latex.header(who, "proc.")] = [us(v) for v in acc[f"{role}_process"]]
        shown[latex.header(who, "cgroup")] = [us(v) for v in acc[f"{role}_cgroup"]]
        shown[latex.header(who, "ratio")] = [ratio(*t) for t in zip(acc[f"{role}_ratio"], acc[f"{role}_ratio_low"],
                                                                     acc[f"{role}_ratio_high"])]
    shown.loc[shown["Workload"].duplicated(), "Workload"] = ""
    said = f"MTU {int(acc['mtu'].iloc[0])}. " if one_mtu and len(acc) else ""
    return latex.latex_table(shown, caption=caption, label=label, escape=False, narrow=True,
                             column_format="ll" + "l" * (not one_mtu) + "rrrrrr",
                             notes=[said + "CPU time per operation in $\\mu$s: proc., the initiator command's rusage and "
                                    "the target daemon's /proc times (aoe.py cost); cgroup, everything the host's cgroup "
                                    "ran during the measured command. Ratio: mean of the per-sample ratio cgroup / "
                                    "proc. with its 95\\,\\% $t$ interval."])


def load_claims(path: str | Path) -> pd.DataFrame:
    """The published claims of a protocol study (``data/raw/published/<study>-claims.csv``)."""
    return read_claims(path)


def claims_latex(claims: pd.DataFrame, *, caption: str, label: str) -> str:
    """The published statements as a table: line, metric, workload, condition, who wins and by how much."""
    shown = pd.DataFrame({
        "Claim": claims["claim"], "Line": claims["line"], "Metric": claims["metric"], "Workload": claims["workload"],
        "Condition": claims["condition"],
        "Better": [b if b != "none" else "equal" for b in claims["better"]],
        "Stated": [(("$<$" if k == "upper bound" else "") + f"{v}\\,\\%" + ("$^*$" if u == "yes" else "")) if v else "--"
                   for v, u, k in zip(claims["stated"], claims["uncertain"], claims["kind"])]})
    for column in ("Metric", "Workload", "Condition", "Better"):
        shown[column] = [latex.escape_latex(v.replace(";", "; ")) for v in shown[column]]
    return latex.latex_table(shown, caption=caption, label=label, escape=False, column_format="ll" + "".join(
                                 f">{{\\raggedright\\arraybackslash}}p{{{w}}}" for w in ("2.1cm", "2.0cm", "2.3cm")) + "lr",
                             notes=["$^*$ approximate in the text, or the compared bars are not defined."])


def write(runs: pd.DataFrame, *, name: str, inputs: Sequence[str | Path], paper_dir: str | Path,
          processed_dir: str | Path, generator: str, level: float = 0.95,
          claims: str | Path | None = None, baseline: str = "aoe") -> dict[str, Path]:
    """Write the per-run table (CSV), the three figures, the summary table (protocols against ``baseline``),
    the MTU table (each protocol's larger MTU against its smallest; a comment when the runs have one MTU), the
    published claims (when ``claims`` names their CSV) and the inline values: per cell means, the
    comparisons' changes and intervals, and NBD through fio against NBD through perflab's load loop (the
    load generators' share of a protocol difference) when both ran."""
    paper, out = Path(paper_dir), {}
    if claims is not None:
        out["claims"] = lineage.atomic_text(paper / "tables" / f"{name}-claims.tex", claims_latex(
            load_claims(claims), caption="What the seed study states about AoE and iSCSI (prose only: no figure value "
            "is recoverable).", label=f"tab:{name}-claims"))
        lineage.write([out["claims"]], [claims], generator=generator)
    out["runs"] = lineage.atomic_text(Path(processed_dir) / f"{name}-per-op.csv", runs.to_csv(index=False))
    lineage.write([out["runs"]], inputs, generator=generator)
    for metric, fig_name in (("throughput", "throughput"), ("cpu_per_op", "cpu"), ("wire_bytes_per_op", "bytes")):
        fig = figure(runs, metric, level=level)
        pdf, png = figures.save(fig, paper / "figures" / f"{name}-{fig_name}", inputs=[out["runs"]], generator=generator)
        plt.close(fig)
        out[f"figure_{fig_name}"], out[f"figure_{fig_name}_png"] = pdf, png
    rel = relative(runs, ["throughput", "cpu_per_op", "wire_bytes_per_op"], baseline=baseline, level=level)
    out["summary"] = lineage.atomic_text(paper / "tables" / f"{name}-summary.tex", summary_latex(
        rel, caption=f"Other protocols against {NAMES[baseline]} on the lab, per workload and MTU.",
        label=f"tab:{name}-summary", baseline=baseline))
    lineage.write([out["summary"]], [out["runs"]], generator=generator)
    acc = accounting(runs, level)
    out["accounting"] = lineage.atomic_text(paper / "tables" / f"{name}-accounting.tex", accounting_latex(
        acc, caption="CPU time per operation by process accounting and by the hosts' cgroups.",
        label=f"tab:{name}-accounting"))
    lineage.write([out["accounting"]], [out["runs"]], generator=generator)
    values = _comparison_values(rel, f"{name}/vs-{baseline}", "other")
    mtus = sorted(set(runs["mtu"]))
    if len(mtus) > 1:
        by_mtu = relative(runs, ["throughput", "cpu_per_op", "wire_bytes_per_op"], baseline=mtus[0],
                          factor="mtu", within=("workload", "protocol"), level=level)
        mtu_text = summary_latex(by_mtu, caption="Each protocol at the larger MTU against the smaller, per workload.",
                                 label=f"tab:{name}-mtu", baseline=mtus[0], factor="mtu")
        values |= _comparison_values(by_mtu, f"{name}/mtu", "protocol")
    else:
        mtu_text = f"% No MTU table: every sample ran at MTU {mtus[0]}.\n"
    out["mtu"] = lineage.atomic_text(paper / "tables" / f"{name}-mtu.tex", mtu_text)
    lineage.write([out["mtu"]], [out["runs"]], generator=generator)
    if {"nbd", "nbd-fio"} <= set(runs["protocol"]):
        values |= _comparison_values(relative(runs[runs["protocol"].isin(["nbd", "nbd-fio"])],
                                              ["throughput", "cpu_per_op"], baseline="nbd", level=level),
                                     f"{name}/generator", "other")
    for metric in ("throughput", "cpu_per_op", "wire_bytes_per_op"):
        scale = METRICS[metric][1]
        for _, c in cells(runs, metric, level).iterrows():
            values[f"{name}/mean/{metric}/{c['protocol']}/{c['workload']}/{int(c['mtu'])}"] = latex.num(c["mean"] / scale)
    values |= {f"{name}/samples": str(len(runs)), f"{name}/comparisons": str(len(rel)),
              f"{name}/significant": str(int((rel["p_adjusted"] < 0.05).sum())) if len(rel) else "0"}
    for metric in ("throughput", "cpu_per_op", "wire_bytes_per_op"):
        for other in sorted(set(PROTOCOLS) - {baseline}):
            sub = rel[(rel["metric"] == metric) & (rel["other"] == other)]
            if len(sub):
                values[f"{name}/{metric}/{other}/median-rel"] = latex.percent_change(sub["rel_diff"].median())
                values[f"{name}/{metric}/{other}/{baseline}-better"] = str(int(
                    ((sub["rel_diff"] < 0) if metric == "throughput" else (sub["rel_diff"] > 0)).sum()))
                values[f"{name}/{metric}/{other}/cells"] = str(len(sub))
    for role in ("initiator", "target"):
        r = acc[f"{role}_ratio"].dropna()
        excess = ((runs[f"{role}_cgroup_cpu_per_op"] - runs.get(f"{role}_cpu_per_op", np.nan)) * runs["ops"]).dropna()
        if len(excess):  # what the cgroup counts beyond the processes, per sample
            values[f"{name}/accounting/{role}/median-excess-ms"] = f"{1e3 * excess.median():.0f}"
        if len(r):
            values[f"{name}/accounting/{role}/median-ratio"] = f"{r.median():.2f}"
            values[f"{name}/accounting/{role}/min-ratio"] = f"{r.min():.2f}"
            values[f"{name}/accounting/{role}/max-ratio"] = f"{r.max():.2f}"
    out["macros"] = macros.write(paper / "macros" / f"{name}.tex", values, inputs=[out["runs"]], generator=generator)
    return out
