"""The ``perflab`` command: every stage of the pipeline, reachable without a notebook."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from . import __version__, lab, runner, spec, store, tidy
from .inventory import InventoryError

#: Modules that add their own subcommands through ``register(subparsers)``.
PLUGINS = ("perflab.stats.cli", "perflab.tools.cli")


def _lab(args: argparse.Namespace) -> int:
    if args.lab_cmd == "up":
        created = lab.up(args.name, args.hosts, mtu=args.mtu, rate=args.rate)
        print(f"lab {created.name}: {len(created.hosts)} hosts up; inventory {created.inventory_path}")
        for h in created.hosts:
            print(f"  {h.name}  {h.address}  netns {h.netns}")
    elif args.lab_cmd == "down":
        removed = lab.down(args.name)
        print("\n".join(f"removed {r}" for r in removed) if removed else f"lab {args.name} is not up")
    elif args.lab_cmd == "status":
        state = lab.status(args.name)
        if state is None:
            print(f"lab {args.name} is not up")
            return 1
        if args.json:
            print(json.dumps(state, indent=1))
            return 0
        print(f"lab {state['name']}: bridge {state['bridge']} ({'present' if state['bridge_present'] else 'MISSING'}), "
              f"MTU {state['mtu']}, rate {state['rate'] or 'unlimited'}; inventory {state['inventory']}")
        for h in state["hosts"]:
            alive = f"sshd pid {h['sshd_pid']}" if h["sshd_pid"] else "sshd NOT running"
            print(f"  {h['name']}  {h['address']}  netns {h['netns']} "
                  f"({'present' if h['netns_present'] else 'MISSING'}), {alive}")
    elif args.lab_cmd == "inventory":
        print(lab.layout(args.name).inventory_path)
    return 0


def _plan(args: argparse.Namespace) -> int:
    campaign = spec.load(args.campaign)
    if args.macros:
        from .report import macros

        out = macros.write(args.macros, runner.planned_values(campaign), inputs=[args.campaign],
                           generator="perflab plan --macros")
        print(f"planned values: {out}")
        return 0
    info = runner.plan(campaign)
    runs = info.pop("runs")
    if args.json:
        info["schedule"] = [{"run_id": r.run_id, "block": r.block, "position": r.position,
                             "warmup": r.warmup, "cell": dict(r.cell.levels)} for r in runs]
        print(json.dumps(info, indent=1, default=str))
        return 0
    print(f"campaign {info['campaign']}: tool {info['tool']}, design {info['design']} (seed {info['seed']})")
    print(f"  {info['cells']} cells x ({info['warmups']} warm-up + {info['repetitions']} repetitions) "
          f"= {info['samples']} samples; {info['blocks']} fingerprinted block(s) on hosts {', '.join(info['hosts'])}")
    if info.get("groups"):
        groups = "; ".join(", ".join(f"{role}={host}" for role, host in g.items()) for g in info["groups"])
        print(f"  {len(info['groups'])} independent host groups, {info['parallel_groups']} at a time: {groups}")
    print(f"  estimated duration {runner.format_duration(info['estimated_seconds'])}: "
          f"{runner.format_duration(info['measure_seconds'])} of measurement + "
          f"{runner.format_duration(info['overhead_seconds'])} of monitors, fingerprints and settle polls")
    cond = info["settle"]
    if cond:
        print(f"  settle: before each sample, wait until 1-min load <= {cond['max_load1']:g} on "
              f"{', '.join(cond['hosts'])} (poll {cond['poll']:g} s, at most {cond['timeout']:g} s; "
              f"up to {runner.format_duration(info['settle_max_seconds'])} in all if the hosts never settle)")
    else:
        print("  settle: none")
    for kind in ("setup", "teardown"):
        for step in info[kind]:
            print(f"  {kind} on {step['on']}: {step['run']}")
    for n in info["neighbours"]:
        where = ", ".join(f"{k} in {v}" for k, v in n["cells"].items()) or "all cells"
        print(f"  neighbour on {n['on']} ({where}): {n['run']}")
    print(f"  monitors (sysstat): {'on' if info['monitors'] else 'off'}; "
          f"fingerprints per block: {'on' if info['fingerprints'] else 'off'}")
    shown = runs if args.all else runs[: args.head]
    for r in shown:
        print(f"  block {r.block:>3} pos {r.position:>2}  {'warm-up' if r.warmup else 'sample '}  {r.run_id}")
    if len(shown) < len(runs):
        print(f"  ... {len(runs) - len(shown)} more (--all to list them)")
    return 0


def _studies(args: argparse.Namespace) -> int:
    from . import study
    from .files import atomic_write

    found = study.discover(".", demos=not args.no_demos)
    if args.studies_cmd == "index":
        for name, text in study.paper_index(found, args.paper_dir).items():
            print(f"paper index: {atomic_write(Path(args.paper_dir) / 'macros' / name, text)}")
        return 0
    for s in found:
        print(f"{s.id}  {s.title}{'  (demo)' if s.demo else ''}")
        print(f"  declared in {s.declaration}; chapter {s.chapter or '(none)'}; part {s.part}")
        for c in s.campaigns:
            print(f"  campaign {c.id}: {c.file}" + (f" on {c.inventory}" if c.inventory else ""))
        for p in s.published:
            print(f"  published {p}")
        for a in s.analyses:
            print(f"  analysis {a.name}: {a.notebook}" + (f" on {a.campaign}" if a.campaign else ""))
    return 0


def _run(args: argparse.Namespace) -> int:
    campaign = spec.load(args.campaign)
    hosts_needed = len(campaign.involved())
    entries = lab.resolve_inventory(args.inventory, hosts=max(2, hosts_needed))
    summary = runner.run(campaign, entries, args.raw, limit=args.limit)
    for note in summary.notes:
        print(f"note: {note}")
    print(f"{campaign.name}: {summary.already_done + summary.done}/{summary.planned} samples stored in "
          f"{summary.raw_dir}; {len(summary.failed)} failed this time")
    return 0 if summary.complete or args.limit else 3


def _pilot(args: argparse.Namespace) -> int:
    from . import pilot

    campaign = spec.load(args.campaign)
    pilot.pilot_campaign(campaign, args.repetitions)
    entries = lab.resolve_inventory(args.inventory, hosts=max(2, len(campaign.involved())))
    table = pilot.run(campaign, entries, args.raw, repetitions=args.repetitions, metric=args.metric,
                      halfwidth=args.halfwidth / 100)
    print(pilot.format_table(table, list(campaign.factors)))
    return 0


def _tidy(args: argparse.Namespace) -> int:
    paths = tidy.write(args.raw_dir, args.out)
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    problems = store.verify(args.raw_dir)
    for p in problems:
        print(f"{args.raw_dir}: {p}")
    if not problems:
        print(f"{args.raw_dir}: {len(store.read_manifest(args.raw_dir))} files match {store.MANIFEST}")
    return 1 if problems else 0


def _seal(args: argparse.Namespace) -> int:
    campaign = Path(args.raw_dir)
    for note in store.RawStore(campaign.parent, campaign.name).seal():
        print(note)
    return 0


def _report(args: argparse.Namespace) -> int:
    from .report import site

    print(f"report: {site.build(args.notebooks, args.out)}")
    return 0


def parser() -> argparse.ArgumentParser:
    """The argument parser of the ``perflab`` command."""
    p = argparse.ArgumentParser(prog="perflab", description=__doc__)
    p.add_argument("--version", action="version", version=f"perflab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    lp = sub.add_parser("lab", help="the embedded lab of network-namespace hosts")
    lsub = lp.add_subparsers(dest="lab_cmd", required=True)
    up = lsub.add_parser("up", help="create (or complete) the lab; idempotent")
    up.add_argument("--hosts", type=int, default=2, help="number of hosts h1..hN (default 2)")
    up.add_argument("--mtu", type=int, default=1500, help="MTU of every host's eth0 (default 1500)")
    up.add_argument("--rate", help="egress rate limit per host, tc syntax, e.g. 1gbit (default: none)")
    for name in ("down", "status", "inventory"):
        lsub.add_parser(name, help={"down": "remove everything up created", "status": "hosts, addresses, sshd",
                                    "inventory": "print the inventory file's path"}[name])
    for sp in lsub.choices.values():
        sp.add_argument("--name", default="default", help="lab name (default: default)")
    lsub.choices["status"].add_argument("--json", action="store_true")
    lp.set_defaults(func=_lab)

    pp = sub.add_parser("plan", help="print a campaign's schedule without running anything")
    pp.add_argument("campaign", help="campaign YAML file")
    pp.add_argument("--head", type=int, default=12, help="runs to list (default 12)")
    pp.add_argument("--all", action="store_true", help="list every run")
    pp.add_argument("--json", action="store_true")
    pp.add_argument("--macros", metavar="FILE", help="write the planned values as inline values for the paper "
                    "(\\plset{<campaign>/plan/...}) to FILE instead of printing the plan")
    pp.set_defaults(func=_plan)

    st = sub.add_parser("studies", help="the studies declared in studies/*/study.yaml",
                        description="List the declared studies, or write the paper's generated list of their "
                        "chapters and inline values (paper/macros/studies-*.tex).",
                        epilog="example: perflab studies list; perflab studies index --paper-dir paper")
    st.add_argument("studies_cmd", choices=["list", "index"], help="list: print them; index: write the paper index")
    st.add_argument("--paper-dir", default="paper", help="the paper's directory (default paper)")
    st.add_argument("--no-demos", action="store_true", help="leave out studies marked demo: true")
    st.set_defaults(func=_studies)

    rp = sub.add_parser("run", help="run or resume a campaign")
    rp.add_argument("campaign", help="campaign YAML file")
    rp.add_argument("--inventory", default="lab",
                    help="inventory file, 'lab' (embedded lab; localhost when not root) or 'localhost' (default: lab)")
    rp.add_argument("--raw", default="data/raw", help="raw data root (default data/raw)")
    rp.add_argument("--limit", type=int, help="stop after this many samples (pilot)")
    rp.set_defaults(func=_run)

    pl = sub.add_parser("pilot", help="run a few repetitions and print what the planned n can detect per cell")
    pl.add_argument("campaign", help="campaign YAML file")
    pl.add_argument("--repetitions", type=int, default=5, help="pilot repetitions per cell (default 5)")
    pl.add_argument("--metric", help="summary metric to plan for (default: the tool's primary metric)")
    pl.add_argument("--halfwidth", type=float, default=1.0,
                    help="target half-width of the mean's CI, in %% of the mean (default 1)")
    pl.add_argument("--inventory", default="lab", help="as for `perflab run` (default: lab)")
    pl.add_argument("--raw", default="data/pilot", help="raw root of pilot data (default data/pilot)")
    pl.set_defaults(func=_pilot)

    tp = sub.add_parser("tidy", help="parse a campaign's raw data into a tidy table")
    tp.add_argument("raw_dir", help="data/raw/<campaign>")
    tp.add_argument("--out", default="data/processed", help="output directory (default data/processed)")
    tp.set_defaults(func=_tidy)

    vp = sub.add_parser("verify", help="check a campaign's raw files against its manifest")
    vp.add_argument("raw_dir")
    vp.set_defaults(func=_verify)

    sp = sub.add_parser("seal", help="checksum raw files the manifest lacks (e.g. the executed notebook)")
    sp.add_argument("raw_dir")
    sp.set_defaults(func=_seal)

    hp = sub.add_parser("report", help="render executed notebooks to an HTML report with an index")
    hp.add_argument("notebooks", nargs="+", help="executed notebooks")
    hp.add_argument("--out", default="reports", help="output directory (default reports)")
    hp.set_defaults(func=_report)

    for module in PLUGINS:
        try:
            importlib.import_module(module).register(sub)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse ``argv`` and run the subcommand; errors print one clear message."""
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (spec.SpecError, lab.LabError, runner.RunnerError, InventoryError, store.StoreError, tidy.TidyError,
            ValueError) as exc:
        print(f"perflab {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"perflab {args.command}: interrupted; services, neighbour loads and monitors were stopped "
              "and stored samples are kept; rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
