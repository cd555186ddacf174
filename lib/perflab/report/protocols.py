"""Seed 004's layouts for block protocols: per-operation costs, grouped bars and a relative-difference table.

:func:`per_run` turns a ``blockproto`` campaign's tidy table into one row per sample:
throughput, IOPS, the initiator's and the target's CPU seconds per operation (from the
tool's ``@cost`` line) and the bytes on the wire per operation, i.e. received plus sent
bytes of the initiator's interface on the measured link (the monitors' ``procstat``
``/proc/net/dev`` deltas of host ``initiator``) divided by the sample's operations.
:func:`cells` gives each cell's mean and t interval, :func:`relative` the protocol
comparisons (Welch's t, Fieller's interval of the relative difference, Holm over the
table), :func:`figure` the seed's Fig. 2/4/5 layout (panels per workload, bars per
protocol and MTU, 95 % CI whiskers) and :func:`write` every output of the template.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from .. import stats
from ..stats.describe import mean_ci
from . import figures, latex, lineage, macros, style

#: Metrics of the per-run table: column -> (axis label, display scale, display unit).
METRICS: dict[str, tuple[str, float, str]] = {
    "throughput": ("Throughput", 2**20, "MiB/s"),
    "iops": ("IOPS", 1.0, "op/s"),
    "cpu_per_op": ("CPU time per op.", 1e-6, "µs"),
    "initiator_cpu_per_op": ("Initiator CPU per op.", 1e-6, "µs"),
    "target_cpu_per_op": ("Target CPU per op.", 1e-6, "µs"),
    "bytes_per_op": ("Wire bytes per op.", 2**10, "KiB"),
}
WORKLOADS = ("seqread", "seqwrite", "randread", "randwrite")
SHORT = {"throughput": "Throughput", "cpu_per_op": "CPU/op", "bytes_per_op": "Bytes/op"}
TITLES = {"seqread": "Sequential read", "seqwrite": "Sequential write", "randread": "Random read",
          "randwrite": "Random write"}
PROTOCOLS = ("aoe", "iscsi", "nbd")
NAMES = {"aoe": "AoE", "iscsi": "iSCSI", "nbd": "NBD"}


def per_run(df: pd.DataFrame, *, links: Mapping[str, Sequence[object]], initiator: str = "ini") -> pd.DataFrame:
    """One row per measured sample: factors, MTU, the tool's metrics and the per-operation costs.

    ``links`` maps each level of the ``link`` factor to ``(interface, mtu)``: the initiator's
    interface on that link, whose byte counters are the traffic of the sample.
    """
    df = df[~df["warmup"].astype(bool)]
    tool = df[df["tool"] == "blockproto"].pivot_table(index="run_id", columns="metric", values="value", aggfunc="first")
    if tool.empty:
        raise ValueError("no blockproto rows in the tidy table; is this a blockproto campaign?")
    factors = df.drop_duplicates("run_id").set_index("run_id")[["protocol", "rw", "link", "repetition"]]
    out = factors.join(tool, how="inner")
    unknown = sorted(set(out["link"]) - set(links))
    if unknown:
        raise ValueError(f"link level(s) {unknown} have no (interface, mtu) in `links`; add them")
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
    out["bytes_per_op"] = out["wire_bytes"] / out["ops"]
    out["cpu_per_op"] = out["initiator_cpu_per_op"] + out.get("target_cpu_per_op", 0.0)
    return out.reset_index().sort_values(["protocol", "rw", "mtu", "repetition"]).reset_index(drop=True)


def cells(runs: pd.DataFrame, metric: str, level: float = 0.95) -> pd.DataFrame:
    """Per (protocol, rw, mtu): n, mean, SD and the t interval of the mean of ``metric``."""
    rows = []
    for (protocol, rw, mtu), g in runs.groupby(["protocol", "rw", "mtu"]):
        x = g[metric].dropna().to_numpy(float)
        low, high = mean_ci(x, level) if x.size >= 2 else (np.nan, np.nan)
        rows.append({"protocol": protocol, "rw": rw, "mtu": mtu, "n": x.size, "mean": x.mean() if x.size else np.nan,
                     "sd": x.std(ddof=1) if x.size >= 2 else np.nan, "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)


def relative(runs: pd.DataFrame, metrics: Sequence[str], *, baseline: str = "aoe", level: float = 0.95) -> pd.DataFrame:
    """Every other protocol against ``baseline`` per workload, MTU and metric: Welch's t and the relative
    difference ``other / baseline - 1`` with Fieller's interval; p-values Holm-adjusted over the table."""
    rows = []
    for metric in metrics:
        for (rw, mtu), g in runs.groupby(["rw", "mtu"]):
            base = g.loc[g["protocol"] == baseline, metric].dropna()
            for other in sorted(set(g["protocol"]) - {baseline}):
                x = g.loc[g["protocol"] == other, metric].dropna()
                if len(base) < 2 or len(x) < 2:
                    continue
                c = stats.compare(base, x, level=level, labels=(baseline, other))
                rows.append({"metric": metric, "rw": rw, "mtu": mtu, "other": other, "n": f"{len(base)}/{len(x)}",
                             "rel_diff": c.rel_diff, "ci_low": c.rel_diff_ci[0], "ci_high": c.rel_diff_ci[1],
                             "p": c.p_value})
    table = pd.DataFrame(rows)
    if len(table):
        table["p_holm"] = multipletests(table["p"], method="holm")[1]
    return table


def figure(runs: pd.DataFrame, metric: str, *, level: float = 0.95) -> plt.Figure:
    """The seed's layout: a panel per workload, bars per protocol, one bar per MTU with its t interval
    (cut at 0: with n = 3 and a noisy machine a lower bound can be negative)."""
    style.use()
    label, scale, unit = METRICS[metric]
    table = cells(runs, metric, level)
    present = [w for w in WORKLOADS if w in set(table["rw"])]
    mtus = sorted(set(table["mtu"]))
    fig, axes = plt.subplots(1, len(present), figsize=(style.TEXT_WIDTH, 2.5), layout="constrained", squeeze=False)
    width = 0.8 / max(len(mtus), 1)
    for ax, rw in zip(axes[0], present):
        for j, mtu in enumerate(mtus):
            sub = table[(table["rw"] == rw) & (table["mtu"] == mtu)].set_index("protocol").reindex(list(PROTOCOLS))
            xs = np.arange(len(PROTOCOLS)) + (j - (len(mtus) - 1) / 2) * width
            mean = sub["mean"].to_numpy(float) / scale
            err = np.vstack([mean - sub["ci_low"].to_numpy(float) / scale, sub["ci_high"].to_numpy(float) / scale - mean])
            ax.bar(xs, mean, width, color=["0.35", "0.8"][j % 2], edgecolor="black", linewidth=0.5,
                   hatch=["", "//"][j % 2], label=f"MTU {mtu}")
            ax.errorbar(xs, mean, yerr=np.nan_to_num(err), fmt="none", ecolor="black", capsize=2, linewidth=0.8)
        for i, protocol in enumerate(PROTOCOLS):
            if not ((table["rw"] == rw) & (table["protocol"] == protocol)).any():
                ax.text(i, 0, "not run", rotation=90, ha="center", va="bottom", fontsize=7)
        ax.set_xticks(np.arange(len(PROTOCOLS)), [NAMES[p] for p in PROTOCOLS])
        ax.set_title(TITLES.get(rw, rw), fontsize=9)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=8)
    axes[0][0].set_ylabel(f"{label} ({unit})", fontsize=8)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside upper center", ncols=len(mtus), fontsize=8, frameon=False)
    return fig


def summary_latex(rel: pd.DataFrame, *, caption: str, label: str) -> str:
    """The relative-difference table: other protocol vs AoE per metric, workload and MTU."""
    shown = pd.DataFrame({
        "Metric": [SHORT.get(m, m) for m in rel["metric"]],
        "Workload": rel["rw"], "MTU": rel["mtu"].astype(int).astype(str), "vs AoE": [NAMES[o] for o in rel["other"]],
        "n": rel["n"],
        "Rel. diff.": [f"\\num{{{100 * v:+.1f}}}\\,\\%" for v in rel["rel_diff"]],
        "95\\,\\% CI": [latex.format_ci(a, b, percent=True) for a, b in zip(rel["ci_low"], rel["ci_high"])],
        "$p$ (Holm)": [latex.format_p(p) for p in rel["p_holm"]]})
    return latex.latex_table(shown, caption=caption, label=label, escape=False, column_format="lllllrrr",
                             notes=["CPU/op: initiator plus target CPU time per operation; Bytes/op: bytes received "
                                    "plus sent by the initiator's storage interface per operation. "
                                    "Relative difference of means, other protocol / AoE $-$ 1, with Fieller's "
                                    "interval; Welch's $t$ test, $p$-values adjusted by Holm over the table."])


CLAIMS_FORMAT = "1"


def load_claims(path: str | Path) -> pd.DataFrame:
    """The published claims of a protocol study (``data/raw/published/<study>-claims.csv``, format 1)."""
    claims = pd.read_csv(path, dtype=str, keep_default_na=False)
    bad = sorted(set(claims.get("format", pd.Series(["missing"]))) - {CLAIMS_FORMAT})
    if bad:
        raise ValueError(f"{path}: column format: {bad} is not {CLAIMS_FORMAT}; this reader knows format {CLAIMS_FORMAT}")
    return claims


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
          claims: str | Path | None = None) -> dict[str, Path]:
    """Write the per-run table (CSV), the three figures, the summary table, the published claims (when
    ``claims`` names their CSV) and the inline values."""
    paper, out = Path(paper_dir), {}
    if claims is not None:
        out["claims"] = lineage.atomic_text(paper / "tables" / f"{name}-claims.tex", claims_latex(
            load_claims(claims), caption="What the seed states about AoE and iSCSI (prose only: no figure value "
            "is recoverable).", label=f"tab:{name}-claims"))
        lineage.write([out["claims"]], [claims], generator=generator)
    out["runs"] = lineage.atomic_text(Path(processed_dir) / f"{name}-per-op.csv", runs.to_csv(index=False))
    lineage.write([out["runs"]], inputs, generator=generator)
    for metric, fig_name in (("throughput", "throughput"), ("cpu_per_op", "cpu"), ("bytes_per_op", "bytes")):
        fig = figure(runs, metric, level=level)
        pdf, png = figures.save(fig, paper / "figures" / f"{name}-{fig_name}", inputs=[out["runs"]], generator=generator)
        plt.close(fig)
        out[f"figure_{fig_name}"], out[f"figure_{fig_name}_png"] = pdf, png
    rel = relative(runs, ["throughput", "cpu_per_op", "bytes_per_op"], level=level)
    out["summary"] = lineage.atomic_text(paper / "tables" / f"{name}-summary.tex", summary_latex(
        rel, caption="Other protocols against AoE on the lab, per workload and MTU.", label=f"tab:{name}-summary"))
    lineage.write([out["summary"]], [out["runs"]], generator=generator)
    values = {f"{name}/samples": str(len(runs)), f"{name}/comparisons": str(len(rel)),
              f"{name}/significant": str(int((rel["p_holm"] < 0.05).sum())) if len(rel) else "0"}
    for metric in ("throughput", "cpu_per_op", "bytes_per_op"):
        for other in ("iscsi", "nbd"):
            sub = rel[(rel["metric"] == metric) & (rel["other"] == other)]
            if len(sub):
                values[f"{name}/{metric}/{other}/median-rel"] = f"{100 * sub['rel_diff'].median():+.1f}\\,\\%"
                values[f"{name}/{metric}/{other}/aoe-better"] = str(int(
                    ((sub["rel_diff"] < 0) if metric == "throughput" else (sub["rel_diff"] > 0)).sum()))
                values[f"{name}/{metric}/{other}/cells"] = str(len(sub))
    out["macros"] = macros.write(paper / "macros" / f"{name}.tex", values, inputs=[out["runs"]], generator=generator)
    return out
