"""Per-host CPU of a network campaign by role (client, server, router), beside seed 000's CPU tables.

The rerun side reads the tidy rows of tool ``cgroup`` (per lab host, the CPU of everything the
host ran during the measured commands): the ``cpu_load`` (CPU-seconds per second) of the hosts
of each role, summed per sample, and that load per Gbit/s of the benchmark's throughput. Cells
are described by :func:`perflab.stats.describe.describe` (mean and its CI) and laid out as the
seed's Tables 3.4-3.6 by :func:`perflab.report.factorial.layout`; ratios of pooled means carry
Fieller's CI of :func:`perflab.report.factorial.ratio`. The published side reads seed 000's
digitized firewall and point-to-point tables (columns ``source_table, firewall|endpoint, smt,
mtu, threads, metric, value``) and averages their per-thread cells the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..errors import InputError
from ..formats.published import read_table
from ..stats.describe import describe, range_flags
from . import factorial, figures, lineage, macros, style
from .latex import escape_latex, float_table

#: The role that sums the others: the whole lab's CPU of a sample.
ALL = "all"
#: Roles in the order of the seed's tables (others follow in the order given, :data:`ALL` last).
SEED_ROLES = ("client", "server", "router")
#: Quantities of a :class:`HostCpu`: name -> (column of :func:`role_samples`, description, unit).
QUANTITIES = {"load": ("cpu_load", "CPU load", "CPU"),
              "per_gbit": ("per_gbit", "CPU load per Gbit/s", "CPU per Gbit/s")}


@dataclass
class HostCpu:
    """Per-sample CPU load of each role and that load per Gbit/s, each as a factorial result (the
    role is its first factor)."""

    roles: list[str]
    load: factorial.FactorialResult
    per_gbit: factorial.FactorialResult
    #: One row per measured sample: its factor levels and ``throughput`` (bit/s).
    throughput: pd.DataFrame
    #: The machine's 1-minute load average per measured sample (mean of its sysstat records
    #: over the monitored hosts, which share it), empty without sysstat rows.
    machine_load1: pd.Series
    #: One row per measured sample: its factor levels and ``rx_bytes_per_packet`` of the server
    #: role's hosts (``/proc/net/dev`` deltas; a packet larger than the MTU is a GRO/GSO aggregate),
    #: empty without procstat rows.
    server_rx: pd.DataFrame


def role_samples(df: pd.DataFrame, *, roles: Mapping[str, Sequence[str]], factors: Sequence[str],
                 metric: str = "throughput", relabel: Mapping[str, Mapping[str, str]] | None = None,
                 source: str = "table") -> pd.DataFrame:
    """One row per measured sample and role: the factor levels, ``role``, ``cpu_seconds`` and
    ``cpu_load`` (summed over the role's hosts), ``throughput`` (the benchmark's ``metric``, bit/s)
    and ``per_gbit`` (``cpu_load`` per Gbit/s). A role :data:`ALL` sums every named host."""
    bench, unit, _ = factorial.samples(df, metric=metric, factors=factors, relabel=relabel, source=source)
    if unit != "bit/s":
        raise InputError(f"{source}: metric {metric!r} is in {unit!r}, not bit/s; name the throughput metric")
    cg = df[(df["tool"] == "cgroup") & ~df["warmup"].astype(bool)]
    hosts = {h for hs in roles.values() for h in hs}
    missing = sorted(hosts - set(cg["host"].dropna().astype(str)))
    if missing:
        raise InputError(f"{source}: no cgroup rows of host(s) {missing}; run the campaign with monitors: true "
                         "on a lab whose hosts have cgroups, or fix the roles")
    wide = cg[cg["metric"].isin(["cpu_seconds", "cpu_load"])].pivot_table(
        index=["run_id", "host"], columns="metric", values="value", aggfunc="sum").reset_index()
    out = []
    for role, names in [*roles.items(), (ALL, sorted(hosts))]:
        part = wide[wide["host"].isin(list(names))].groupby("run_id")[["cpu_seconds", "cpu_load"]].sum()
        rows = bench.merge(part, left_on="run_id", right_index=True, how="inner")
        out.append(rows.assign(role=role))
    data = pd.concat(out, ignore_index=True).rename(columns={"value": "throughput"})
    data["per_gbit"] = data["cpu_load"] / (data["throughput"] / 1e9)
    return data[["run_id", "role", *factors, "cpu_seconds", "cpu_load", "throughput", "per_gbit"]]


def analyse(df: pd.DataFrame, *, roles: Mapping[str, Sequence[str]], factors: Sequence[str],
            metric: str = "throughput", relabel: Mapping[str, Mapping[str, str]] | None = None,
            level: float = 0.95, source: str = "table") -> HostCpu:
    """The per-role samples of :func:`role_samples` described per cell (role x ``factors``)."""
    data = role_samples(df, roles=roles, factors=factors, metric=metric, relabel=relabel, source=source)
    keys = ["role", *factors]
    results = {}
    for quantity, (column, label, unit) in QUANTITIES.items():
        sub = data[["run_id", *keys, column]].rename(columns={column: "value"})
        cells = describe(sub, "value", keys, level, source=source, **range_flags(sub["value"]))
        results[quantity] = factorial.FactorialResult(label, unit, keys, sub, cells, pd.DataFrame(),
                                                      [f"cgroup cpu_load of {dict(roles)} per sample"])
    bench = data[data["role"] == ALL][["run_id", *factors, "throughput"]].reset_index(drop=True)
    sar = df[(df["tool"] == "sadf") & (df["metric"] == "load_1") & df["run_id"].isin(bench["run_id"])]
    net = df[(df["tool"] == "procstat") & df["host"].isin(list(roles.get("server", ())))
             & df["metric"].isin(["net_rx_bytes", "net_rx_packets"])]
    rx = net.groupby(["run_id", "metric"])["value"].sum().unstack()
    rx = (rx["net_rx_bytes"] / rx["net_rx_packets"]).rename("rx_bytes_per_packet") if not rx.empty else pd.Series(
        dtype=float, name="rx_bytes_per_packet")
    server_rx = bench.drop(columns="throughput").merge(rx, left_on="run_id", right_index=True)
    order = sorted(roles, key=lambda r: SEED_ROLES.index(r) if r in SEED_ROLES else len(SEED_ROLES))
    return HostCpu([*order, ALL], results["load"], results["per_gbit"], bench,
                   sar.groupby("run_id")["value"].mean(), server_rx)


def for_role(result: factorial.FactorialResult, role: str) -> factorial.FactorialResult:
    """The part of a per-role result that belongs to ``role``, without the role factor."""
    factors = [f for f in result.factors if f != "role"]
    pick = lambda d: d[d["role"] == role].drop(columns="role").reset_index(drop=True)  # noqa: E731
    return factorial.FactorialResult(result.quantity, result.unit, factors, pick(result.data), pick(result.cells),
                                     result.anova, list(result.notes))


# --- the published side ----------------------------------------------------------------------


def published_cells(firewall: str | Path, p2p: str | Path, *, smt: str = "on") -> pd.DataFrame:
    """Seed 000's loads and throughput per role, MTU and path (``nat-native``, ``nat-virtual`` from
    Tables 3.3-3.6, ``direct`` from Table 3.7, MTU 1500 only), each the mean of its 1, 2, 4 and 8
    thread cells at SMT ``smt``: columns ``role, mtu, path, parallel, load, throughput, per_gbit``
    (``parallel`` is ``mean`` for the means, else the thread count)."""
    fw = read_table(firewall)
    pp = read_table(p2p)
    tables = {"throughput": "Tabela 3.3", "load_client": "Tabela 3.4", "load_server": "Tabela 3.5",
              "load_firewall": "Tabela 3.6"}
    fw = fw[(fw["smt"] == smt) & (fw["threads"] != "mean") & fw["metric"].isin(list(tables))
            & (fw["source_table"] == fw["metric"].map(tables))]
    fw = fw.assign(path="nat-" + fw["firewall"])
    pp = pp[(pp["source_table"] == "Tabela 3.7") & (pp["smt"] == smt) & (pp["threads"] != "mean")].assign(path="direct")
    both = pd.concat([fw, pp], ignore_index=True)[["path", "mtu", "threads", "metric", "value"]]
    both["value"] = both["value"].astype(float)
    wide = both.pivot_table(index=["path", "mtu", "threads"], columns="metric", values="value").reset_index()
    out = []
    for role, column in (("client", "load_client"), ("server", "load_server"), ("router", "load_firewall")):
        part = wide[["path", "mtu", "threads", "throughput"]].assign(role=role, load=wide.get(column))
        if role == "router":  # nothing forwards on the direct link: no firewall, no load
            part.loc[part["path"] == "direct", "load"] = 0.0
        out.append(part)
    rows = pd.concat(out, ignore_index=True).rename(columns={"threads": "parallel"})
    means = rows.groupby(["role", "mtu", "path"], as_index=False)[["load", "throughput"]].mean().assign(parallel="mean")
    rows = pd.concat([rows, means], ignore_index=True)
    rows["per_gbit"] = rows["load"] / rows["throughput"]
    return rows[["role", "mtu", "path", "parallel", "load", "throughput", "per_gbit"]]


# --- the comparison in kind ------------------------------------------------------------------


#: The comparisons of :func:`compare`: (key, text, quantity, numerator, denominator); cells name
#: role, mtu, path (and parallel); a published ``path`` of ``nat`` stands for each firewall kind.
COMPARISONS: tuple[tuple[str, str, str, dict[str, str], dict[str, str]], ...] = (
    ("router-share-1500", "Router's share of the three hosts' CPU, NAT, MTU 1500", "load",
     {"role": "router", "mtu": "1500", "path": "nat"}, {"role": ALL, "mtu": "1500", "path": "nat"}),
    ("router-share-9000", "Router's share of the three hosts' CPU, NAT, MTU 9000", "load",
     {"role": "router", "mtu": "9000", "path": "nat"}, {"role": ALL, "mtu": "9000", "path": "nat"}),
    ("server-client-1500", "Server over client CPU load, NAT, MTU 1500", "load",
     {"role": "server", "mtu": "1500", "path": "nat"}, {"role": "client", "mtu": "1500", "path": "nat"}),
    ("client-nat-direct-1500", "Client CPU per Gbit/s, NAT over direct, MTU 1500", "per_gbit",
     {"role": "client", "mtu": "1500", "path": "nat"}, {"role": "client", "mtu": "1500", "path": "direct"}),
    ("server-nat-direct-1500", "Server CPU per Gbit/s, NAT over direct, MTU 1500", "per_gbit",
     {"role": "server", "mtu": "1500", "path": "nat"}, {"role": "server", "mtu": "1500", "path": "direct"}),
    ("all-nat-direct-1500", "All hosts' CPU per Gbit/s, NAT over direct, MTU 1500", "per_gbit",
     {"role": ALL, "mtu": "1500", "path": "nat"}, {"role": ALL, "mtu": "1500", "path": "direct"}),
    ("router-mtu-nat", "Router CPU per Gbit/s, NAT, MTU 9000 over 1500", "per_gbit",
     {"role": "router", "mtu": "9000", "path": "nat"}, {"role": "router", "mtu": "1500", "path": "nat"}),
    ("client-mtu-nat", "Client CPU per Gbit/s, NAT, MTU 9000 over 1500", "per_gbit",
     {"role": "client", "mtu": "9000", "path": "nat"}, {"role": "client", "mtu": "1500", "path": "nat"}),
    ("server-mtu-nat", "Server CPU per Gbit/s, NAT, MTU 9000 over 1500", "per_gbit",
     {"role": "server", "mtu": "9000", "path": "nat"}, {"role": "server", "mtu": "1500", "path": "nat"}),
    ("all-mtu-nat", "All hosts' CPU per Gbit/s, NAT, MTU 9000 over 1500", "per_gbit",
     {"role": ALL, "mtu": "9000", "path": "nat"}, {"role": ALL, "mtu": "1500", "path": "nat"}),
    ("client-p8-p1", "Client CPU load, 8 over 1 stream, NAT, MTU 1500", "load",
     {"role": "client", "mtu": "1500", "path": "nat", "parallel": "8"},
     {"role": "client", "mtu": "1500", "path": "nat", "parallel": "1"}),
    ("server-p8-p1", "Server CPU load, 8 over 1 stream, NAT, MTU 1500", "load",
     {"role": "server", "mtu": "1500", "path": "nat", "parallel": "8"},
     {"role": "server", "mtu": "1500", "path": "nat", "parallel": "1"}),
    ("router-p8-p1", "Router CPU load, 8 over 1 stream, NAT, MTU 1500", "load",
     {"role": "router", "mtu": "1500", "path": "nat", "parallel": "8"},
     {"role": "router", "mtu": "1500", "path": "nat", "parallel": "1"}),
)


def _published_ratio(pub: pd.DataFrame, quantity: str, num: Mapping[str, str], den: Mapping[str, str],
                     firewall: str) -> float:
    """The published ratio of two cells (means over threads unless ``parallel`` is named); the
    role :data:`ALL` sums client, server and router."""
    def value(cell: Mapping[str, str]) -> float:
        path = f"nat-{firewall}" if cell["path"] == "nat" else cell["path"]
        d = pub[(pub["mtu"] == cell["mtu"]) & (pub["path"] == path) & (pub["parallel"] == cell.get("parallel", "mean"))]
        if cell["role"] != ALL:
            d = d[d["role"] == cell["role"]]
        if d.empty:
            return float("nan")
        load = d["load"].sum()
        return load / d["throughput"].iloc[0] if quantity == "per_gbit" else load
    return value(num) / value(den)


def compare(result: HostCpu, published: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """Each of :data:`COMPARISONS` with the published ratio (native and virtual firewall, NaN where
    the seed has no such cell) and the rerun's ratio of pooled means with Fieller's CI (NaN
    where the denominator is zero): columns ``key, comparison, native, virtual, rerun, low, high``."""
    rows = []
    for key, text, quantity, num, den in COMPARISONS:
        res = getattr(result, quantity)
        with np.errstate(divide="ignore", invalid="ignore"):
            try:
                est, low, high = factorial.ratio(res, num, den, level)
            except ValueError:
                est = low = high = float("nan")
        if not np.isfinite(est):
            est = low = high = float("nan")
        rows.append({"key": key, "comparison": text,
                     "native": _published_ratio(published, quantity, num, den, "native"),
                     "virtual": _published_ratio(published, quantity, num, den, "virtual"),
                     "rerun": est, "low": low, "high": high})
    return pd.DataFrame(rows)


# --- tables, figure, inline values -----------------------------------------------------------


def layout_tables(result: HostCpu, *, name: str, rows: str, digits: int = 1, level: float = 0.95,
                  labels: Mapping[str, str] | None = None) -> str:
    """One table per role in the layout of seed 000's Tables 3.4-3.6 (``rows`` down, the other
    factors across, mean [CI] of the CPU load in percent of one CPU per cell, a mean row), as LaTeX."""
    labels = labels or {}
    out = []
    for role in result.roles:
        grid = factorial.layout(for_role(result.load, role), rows=rows, scale=0.01, digits=digits)
        what = "the three roles together" if role == ALL else f"the {role}"
        out.append(factorial.layout_tex(
            grid, caption=f"CPU load of {what} in % of one CPU, from its cgroup, per cell.",
            label=f"tab:{name}-{role}", over=labels.get(rows, rows), level=level, labels=labels))
    return "\n".join(out)


def _ratio_text(value: float, digits: int = 2) -> str:
    return "--" if not np.isfinite(value) else f"{value:.{digits}f}"


def compare_tex(table: pd.DataFrame, *, name: str, level: float = 0.95) -> str:
    """The comparison of :func:`compare` as a booktabs ``table`` (ratios, not percentages)."""
    body = pd.DataFrame({
        "Ratio": table["comparison"].map(escape_latex),
        "Native": table["native"].map(_ratio_text),
        "Virtual": table["virtual"].map(_ratio_text),
        "Rerun": table["rerun"].map(_ratio_text),
        f"{100 * level:.0f}\\,\\% CI": [("--" if not np.isfinite(lo) else f"[{lo:.2f}, {hi:.2f}]")
                                     for lo, hi in zip(table["low"], table["high"])],
    }).to_latex(index=False, escape=False, column_format="p{0.5\\textwidth}rrrr")
    note = ("Native, Virtual: the seed study's pfSense kinds, from the 1-minute load averages of its Tables 3.3-3.7 "
            "(SMT on), means over 1, 2, 4 and 8 threads, the direct link from Table 3.7 (MTU 1500 only). Rerun: "
            "cgroup CPU load of each lab host, ratio of pooled means over the streams, Fieller's CI; "
            "-- where a ratio has no published cell or a zero denominator.")
    return float_table(body, caption="CPU of client, server and router compared in kind, seed study and rerun.",
                       label=f"tab:{name}-compare", note=note)


def figure(result: HostCpu, *, x: str, trace: Sequence[str], labels: Mapping[str, str] | None = None
           ) -> plt.Figure:
    """CPU load per Gbit/s (cell means with CI bars) against ``x``, a line per combination of the
    ``trace`` factors, a panel per role (the lab's total last); hollow markers, so that lines of nearly the same
    values (a role that costs almost nothing) all show."""
    style.use()
    labels = labels or {}
    cells = result.per_gbit.cells.copy()
    cells["_trace"] = cells[list(trace)].astype(str).agg(", ".join, axis=1)
    traces = sorted(cells["_trace"].unique(), key=lambda t: [figures.natural_key(p) for p in t.split(", ")])
    xs = factorial.order(cells[x])
    fig, axes = plt.subplots(1, len(result.roles), sharey=True, squeeze=False,
                             figsize=(style.TEXT_WIDTH, style.TEXT_WIDTH * 0.42), layout="constrained")
    for ax, role in zip(axes[0], result.roles):
        sub = cells[cells["role"] == role]
        for i, t in enumerate(traces):
            line = sub[sub["_trace"] == t].set_index(sub[x].astype(str)[sub["_trace"] == t]).reindex(xs)
            ax.errorbar(range(len(xs)), line["mean"], yerr=[line["mean"] - line["mean_ci_low"],
                                                            line["mean_ci_high"] - line["mean"]],
                        capsize=2, markersize=4, mfc="none", label=", ".join(f"{labels.get(f, f)} {v}"
                                                                for f, v in zip(trace, t.split(", "))),
                        **style.look(i))
        ax.set_xticks(range(len(xs)), xs)
        ax.set_xlabel(labels.get(x, x))
        ax.set_title("all roles" if role == ALL else role)
    axes[0][0].set_ylabel(f"{QUANTITIES['per_gbit'][1]} ({QUANTITIES['per_gbit'][2]})")
    figures.from_zero(axes[0][0])
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside lower center", ncols=len(traces))
    return fig


def values(result: HostCpu, table: pd.DataFrame, *, name: str) -> dict[str, str]:
    """Inline values: ``<name>/n``; per role, MTU and path the pooled mean CPU load in percent of
    one CPU and the load per Gbit/s (``<name>/<role>/<mtu>/<path>/load-percent|per-gbit``), per MTU and path the pooled mean
    throughput (``<name>/<mtu>/<path>/gbits``) and bytes per packet the server received
    (``<name>/<mtu>/<path>/server-rx-bytes-per-packet``), the machine's load average over the samples
    (``<name>/machine-load1/mean|min|max``, when recorded); per comparison ``<name>/cmp/<key>/native|
    virtual|rerun|low|high`` (ratios, two decimals)."""
    out = {f"{name}/n": str(result.load.data["run_id"].nunique())}
    rest = [f for f in result.load.factors if f not in ("role", "parallel")]
    for quantity, key, scale, fmt in (("load", "load-percent", 0.01, ".1f"), ("per_gbit", "per-gbit", 1.0, ".3f")):
        data = getattr(result, quantity).data
        for levels, g in data.groupby(["role", *rest]):
            out[f"{name}/{'/'.join(map(str, levels))}/{key}"] = f"{g['value'].mean() / scale:{fmt}}"
    for frame, column, key, scale, fmt in ((result.throughput, "throughput", "gbits", 1e9, ".2f"),
                                           (result.server_rx, "rx_bytes_per_packet", "server-rx-bytes-per-packet",
                                            1.0, ".0f")):
        for levels, g in frame.groupby(rest):
            levels = levels if isinstance(levels, tuple) else (levels,)
            out[f"{name}/{'/'.join(map(str, levels))}/{key}"] = f"{g[column].mean() / scale:{fmt}}"
    if not result.machine_load1.empty:
        for stat in ("mean", "min", "max"):
            out[f"{name}/machine-load1/{stat}"] = f"{getattr(result.machine_load1, stat)():.1f}"
    for _, r in table.iterrows():
        for col in ("native", "virtual", "rerun", "low", "high"):
            out[f"{name}/cmp/{r['key']}/{col}"] = _ratio_text(r[col])
    return out


def write(result: HostCpu, published: pd.DataFrame, *, name: str, source: str | Path,
          published_files: Sequence[str | Path], paper_dir: str | Path, rows: str, x: str, trace: Sequence[str],
          labels: Mapping[str, str] | None = None, level: float = 0.95, generator: str) -> dict[str, Any]:
    """Write ``<name>-roles`` (PDF+PNG), ``<name>-layout.tex`` (a table per role),
    ``<name>-compare.tex`` and the macro file ``<name>.tex`` under ``paper_dir``, each with lineage."""
    paper = Path(paper_dir)
    inputs = [source, *published_files]
    table = compare(result, published, level=level)
    fig = figure(result, x=x, trace=trace, labels=labels)
    out: dict[str, Any] = {"figures": figures.save(fig, paper / "figures" / f"{name}-roles", inputs=inputs,
                                                   generator=generator, details={"roles": result.roles}),
                           "tables": [], "compare": table}
    plt.close(fig)
    for kind, text in (("layout", layout_tables(result, name=name, rows=rows, level=level, labels=labels)),
                       ("compare", compare_tex(table, name=name, level=level))):
        path = lineage.atomic_text(paper / "tables" / f"{name}-{kind}.tex", text)
        lineage.write([path], inputs, generator=generator)
        out["tables"].append(path)
    out["macros"] = [macros.write(paper / "macros" / f"{name}.tex", values(result, table, name=name),
                                  inputs=inputs, generator=generator)]
    return out
