"""The ``perflab`` command: every stage of the pipeline, reachable without a notebook."""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import UserError


class _Deferred:
    """A perflab module imported on its first attribute access.

    Each subcommand imports only the stages it runs: ``perflab --help`` imports none and
    ``perflab plan`` no statistics, pandas or Arrow (``benchmarks/bench_startup.py``).
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


lab, labspec, runner = _Deferred("perflab.hosts.lab"), _Deferred("perflab.labspec"), _Deferred("perflab.runner")
store, tidy = _Deferred("perflab.store"), _Deferred("perflab.tidy")
campaign_mod = _Deferred("perflab.campaign")
lab_ceph = _Deferred("perflab.hosts.lab.ceph")

#: Modules that add their own subcommands through ``register(subparsers)``. A module is
#: imported only when one of its subcommands runs; otherwise its subcommands are listed
#: with the help text of its ``add_parser`` calls, read from its source.
PLUGINS = ("perflab.cli.stats", "perflab.cli.tools")



def _lab(args: argparse.Namespace) -> int:
    if args.lab_cmd == "up":
        flat = {"--hosts": args.hosts, "--mtu": args.mtu, "--rate": args.rate}
        if args.file:
            described = labspec.load(args.file)
            if args.name not in (None, described.name):
                raise lab.LabError(f"--name {args.name}: {args.file} describes lab {described.name!r}; drop --name")
            if any(v is not None for v in flat.values()):
                raise lab.LabError(f"{', '.join(k for k, v in flat.items() if v is not None)}: only for the flat lab; "
                                   f"{args.file} sets the links and hosts")
            created = lab.bring_up(described)
        else:
            created = lab.up(args.name or "default", 2 if args.hosts is None else args.hosts,
                             mtu=1500 if args.mtu is None else args.mtu, rate=args.rate)
        print(f"lab {created.name}: {len(created.hosts)} hosts up; inventory {created.inventory_path}")
        for h in created.hosts:
            print(f"  {h.name}  {' '.join(f'{p.link}={p.address}' for p in h.ports)}  netns {h.netns}")
        if created.spec.ceph:
            print(lab_ceph.summary(created))
        return 0
    if args.lab_cmd == "list":
        up = lab.names()
        print("\n".join(f"lab {n} is up; remove it with: perflab lab down --name {n}" for n in up) or "no lab is up")
        return 0
    name = args.name or "default"
    if args.lab_cmd == "down":
        removed = lab.down(name)
        print("\n".join(f"removed {r}" for r in removed) if removed else f"lab {name} is not up")
        left = lab.traces(name)
        if left:
            print(f"lab {name}: still present (remove by hand): {'; '.join(left)}", file=sys.stderr)
            return 1
    elif args.lab_cmd == "status":
        state = lab.status(name)
        if state is None:
            print(f"lab {name} is not up")
            return 1
        print(json.dumps(state, indent=1) if args.json else lab.draw(state))
    elif args.lab_cmd == "inventory":
        print(lab.STATE_ROOT / name / "inventory.yaml")
    return 0


def _plan(args: argparse.Namespace) -> int:
    from .. import study
    from ..campaign import destructive

    campaign = campaign_mod.load(args.campaign)
    if (declared := study.declaring_study(args.campaign)) is not None:
        study.check_analyses(declared.folder)  # what its study's pipeline would refuse, said before the run
    destructive.check(campaign)
    if args.macros:
        from ..report import planned

        out = planned.write(args.macros, args.campaign)
        print(f"planned values: {out}")
        return 0
    info = runner.plan(campaign)
    runs = info.pop("runs")
    if args.json:
        info["schedule"] = [{"run_id": r.run_id, "block": r.block, "position": r.position,
                             "warmup": r.warmup, "cell": dict(r.cell.levels)} for r in runs]
        print(json.dumps(info, indent=1, default=str))
        return 0
    seed = "seed drawn at the first run" if info["seed"] is None else f"seed {info['seed']}"
    print(f"campaign {info['campaign']}: tool {info['tool']}, design {info['design']} ({seed})")
    print(f"  {info['cells']} cells x ({info['warmups']} warm-up + {info['repetitions']} repetitions) "
          f"= {info['samples']} samples; {info['blocks']} fingerprinted block(s) on hosts {', '.join(info['hosts'])}")
    if info.get("groups"):
        groups = "; ".join(", ".join(f"{role}={host}" for role, host in g.items()) for g in info["groups"])
        print(f"  {len(info['groups'])} independent host groups, {info['parallel_groups']} at a time: {groups}")
    for role, names in info["concurrent"].items():
        print(f"  {role} on {', '.join(names)} at the same time")
    if info["phases"]:
        print(f"  phases of every sample, in order: {', '.join(info['phases'])}")
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
            print(f"  {kind} on {step['on']}: {step['run']}" + (f"; verify: {step['verify']}" if step["verify"] else ""))
    for n in info["neighbours"]:
        where = ", ".join(f"{k} in {v}" for k, v in n["cells"].items()) or "all cells"
        print(f"  neighbour on {n['on']} ({where}): {n['run']}")
    from ..hosts.contention import quiet_of

    quiet = quiet_of(campaign.doc, campaign.source)
    print("  quiet gate before each block: " + ("none" if quiet is None else ", ".join(
        f"{k} {v:g}" for k, v in vars(quiet).items() if v is not None)))
    for target, devices in campaign.doc.get("devices", {}).items():
        print(f"  DESTRUCTIVE on {target}: overwrites {', '.join(devices)} (`perflab run` asks first, or --yes-destroy)")
    print(f"  monitors (sysstat): {'on' if info['monitors'] else 'off'}; "
          f"fingerprints per block: {'on' if info['fingerprints'] else 'off'}")
    if args.check:
        from ..hosts import preflight, remote

        entries = lab.resolve_inventory(args.inventory, hosts=campaign.lab_hosts(), needs=campaign.involved())
        with remote.connect(entries, campaign.involved()) as hosts:
            problems = preflight.check(campaign, hosts)
        for p in problems:
            print(f"  preflight: {p}")
        print(f"  preflight on {', '.join(campaign.involved())}: "
              + (f"{len(problems)} problem(s); fix them before `perflab run`" if problems else "ready"))
        if problems:
            return 1
    shown = runs if args.all else runs[: args.head]
    for r in shown:
        print(f"  block {r.block:>3} pos {r.position:>2}  {'warm-up' if r.warmup else 'sample '}  {r.run_id}")
    if len(shown) < len(runs):
        print(f"  ... {len(runs) - len(shown)} more (--all to list them)")
    return 0


def _studies(args: argparse.Namespace) -> int:
    from .. import study
    from ..files import atomic_write

    found = study.discover(".", demos=not args.no_demos)
    if args.studies_cmd == "index":
        from ..report import datasource

        index = study.paper_index(found, args.paper_dir)
        index["studies-macros.tex"] += datasource.macros(found)  # which data each chapter's analyses read
        for name, text in index.items():
            print(f"paper index: {atomic_write(Path(args.paper_dir) / 'macros' / name, text)}")
        return 0
    if args.json:
        print(json.dumps([_study_json(s) for s in found], indent=1))
        return 0
    for s in found:
        print(f"{s.id}  {s.title}{'  (demo)' if s.demo else ''}")
        print(f"  declared in {s.declaration}; chapter {s.chapter or '(none)'}; part {s.part}")
        for c in s.campaigns:
            print(f"  campaign {c.id}: {c.file}" + (f" on {c.inventory}" if c.inventory else "")
                  + ("  (planned: not measured yet)" if c.pending() else ""))
        for p in s.published:
            print(f"  published {p}")
        for a in s.analyses:
            print(f"  analysis {a.name}: {a.notebook}" + (f" on {a.campaign}" if a.campaign else ""))
    return 0


def _study_json(s: Any) -> dict[str, Any]:
    """A declared study as plain data for ``perflab studies list --json``."""
    from dataclasses import asdict

    return {**asdict(s), "declaration": s.declaration}


def _run(args: argparse.Namespace) -> int:
    from ..campaign import destructive

    campaign = campaign_mod.load(args.campaign)
    destructive.confirm(campaign, args.yes_destroy)
    entries = lab.resolve_inventory(args.inventory, hosts=campaign.lab_hosts(), needs=campaign.involved())
    if args.rehearse:
        from .. import rehearse

        done = rehearse.rehearse(campaign, entries, args.raw or rehearse.DEFAULT_ROOT)
        return 0 if done.campaign is None or done.complete else 3
    summary = runner.run(campaign, entries, args.raw or "data/raw", limit=args.limit,
                         wait=0 if args.no_wait else None)
    for note in summary.notes:
        print(f"note: {note}")
    print(f"{campaign.name}: {summary.already_done + summary.done}/{summary.planned} samples stored in "
          f"{summary.raw_dir}; {len(summary.failed)} failed this time")
    return 0 if summary.complete or args.limit else 3


def _pilot(args: argparse.Namespace) -> int:
    from .. import pilot

    campaign = campaign_mod.load(args.campaign)
    pilot.pilot_campaign(campaign, args.repetitions)
    entries = lab.resolve_inventory(args.inventory, hosts=campaign.lab_hosts(), needs=campaign.involved())
    table = pilot.run(campaign, entries, args.raw, repetitions=args.repetitions, metric=args.metric,
                      halfwidth=args.halfwidth / 100, wait=0 if args.no_wait else None)
    print(pilot.format_table(table, list(campaign.factors)))
    return 0


def _workers(text: str) -> int:
    """``--workers``: a whole number of processes, at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of processes, at least 1; got {text!r}")
    return int(text)


def _tidy(args: argparse.Namespace) -> int:
    paths = tidy.write(args.raw_dir, args.out, csv=args.csv, workers=args.workers)
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    import tempfile
    import time

    from .. import evidence, verify

    if args.raw_dir and args.rebuild:
        raise UserError("--rebuild reruns the analyses behind every output of the repository, not of one raw "
                         "directory; run `perflab verify --rebuild` without a path")
    started = time.monotonic()

    def progress(step: str) -> None:
        print(f"verify: {step}", file=sys.stderr, flush=True)

    if not args.raw_dir:
        report = verify.repository(args.root, progress=progress)
        if args.rebuild:
            scratch = Path(args.scratch or tempfile.mkdtemp(prefix="perflab-verify-"))
            progress(f"rerunning the analyses into {scratch}")
            findings, notes, compared = verify.rebuild(args.root, scratch, kernel=args.kernel)
            report.findings += findings
            report.notes += [*notes, f"outputs rebuilt into {scratch}"]
            report.count("outputs rebuilt and compared", compared)
        counts = ", ".join(f"{n} {kind}" for kind, n in report.checked.items()) or "nothing"
        problems = evidence.failures(report.evidence)
        if args.json:
            print(json.dumps({"ok": report.ok and not problems, "checked": report.checked, "notes": report.notes,
                              "findings": [f.to_json() for f in report.findings],
                              "evidence": evidence.lines(report.evidence), "evidence_failures": problems,
                              "chain_heads": report.heads, "seconds": round(time.monotonic() - started, 1)}, indent=1))
            return 0 if report.ok and not problems else 1
        for finding in report.findings:
            print(finding)
        for note in report.notes:
            print(f"note: {note}")
        print("\n".join(evidence.lines(report.evidence) + problems))
        print("ledger hash chains (each campaign's head; the paper and the review site print them):")
        print("\n".join(f"  {name}: {text}" for name, text in report.heads.items()))
        print(f"{'verified' if report.ok else 'checked'} {counts} in {time.monotonic() - started:.0f} s; "
              f"{len(report.findings)} file(s) do not verify" + ("" if report.ok else " (listed above)"))
        return 0 if report.ok and not problems else 1
    results = []
    for i, raw_dir in enumerate(args.raw_dir, 1):
        progress(f"[{i}/{len(args.raw_dir)}] {raw_dir}")
        findings = verify.raw_directory(raw_dir)
        among = [] if args.bytes else [ev for ev in evidence.collect(Path(raw_dir).parent, args.root)
                                        if ev.campaign == Path(raw_dir).name]
        problems = evidence.failures(among)
        results.append({"path": raw_dir, "ok": not findings and not problems,
                        "files": len(store.read_manifest(raw_dir)),
                        "chain_head": verify.head(raw_dir) if (Path(raw_dir) / "campaign.json").exists() else None,
                        "findings": [f.to_json() for f in findings],
                        "evidence": evidence.lines(among)[1:-1] if among else [], "evidence_failures": problems})
        if not args.json:
            for finding in findings:
                print(finding)
            if not findings:
                print(f"{raw_dir}: {results[-1]['files']} files match {store.MANIFEST}")
            if results[-1]["chain_head"]:
                print(f"{raw_dir}: ledger {results[-1]['chain_head']}")
            if results[-1]["evidence"] or problems:
                print("\n".join(results[-1]["evidence"] + problems))
    failed = sum(not r["ok"] for r in results)
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        print(f"{len(results) - failed} of {len(results)} raw director{'y' if len(results) == 1 else 'ies'} verified")
    return 1 if failed else 0


def _evidence(args: argparse.Namespace) -> int:
    from .. import evidence

    found = evidence.collect(Path(args.root) / "data/raw", args.root)
    if args.macros or args.tables:
        from ..report import evidence as evidence_tables, macros
        from ..report.latex import escape_latex

        written = []
        if args.macros:
            values = {key: escape_latex(text) for key, text in evidence.macro_values(found).items()}
            written.append(macros.write(args.macros, values, generator="perflab evidence --macros",
                                        inputs=[Path(ev.raw_dir) / store.MANIFEST for ev in found]))
        if args.tables:
            written += evidence_tables.write(found, args.tables)
        print("\n".join(f"evidence: {out}" for out in written))
    elif args.json:
        print(json.dumps(evidence.site_rows(found), indent=1))
    else:
        print("\n".join(evidence.lines(found) + evidence.failures(found)))
        return 1 if evidence.failures(found) else 0
    return 0


def _seal(args: argparse.Namespace) -> int:
    campaign = Path(args.raw_dir)
    notes = store.RawStore(campaign.parent, campaign.name).seal() if (campaign / "campaign.json").exists() \
        else store.seal_digitized(campaign)
    for note in notes:
        print(note)
    return 0


def _lineage(args: argparse.Namespace) -> int:
    from ..formats import lineage as lineage_format
    from ..report import lineage

    try:
        lines = lineage.chain(args.file, args.root)
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    intact = not any("CHANGED" in line or "MISSING" in line or "do not match" in line for line in lines)
    if args.json:
        sidecar = lineage.sidecar_of(args.file)
        print(json.dumps({"file": args.file, "sidecar": sidecar.as_posix(), "ok": intact, "chain": lines,
                          "record": lineage_format.read(Path(args.root) / sidecar)}, indent=1))
    else:
        print("\n".join(lines))
    return 0 if intact else 1


def _export(args: argparse.Namespace) -> int:
    from .. import crate

    print(f"export: {crate.export(args.name, args.out, root=args.root)}")
    return 0


def _import(args: argparse.Namespace) -> int:
    from .. import crate

    for note in crate.import_crate(args.crate, root=args.root):
        print(note)
    return 0


def _report(args: argparse.Namespace) -> int:
    from ..report import site

    index = site.build(args.notebooks, args.out, root=args.root, csv=args.csv)
    print(f"report: {index}")
    line, warning = site.size_note(index.parent, Path(args.root) / "data/raw")
    print(line)
    if warning:
        print(f"perflab report: {warning}", file=sys.stderr)
    return 0


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``perflab`` command, with the full parser of ``command`` if a plugin adds it."""
    p = argparse.ArgumentParser(prog="perflab", description=__doc__)
    p.add_argument("--version", action="version", version=f"perflab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    lp = sub.add_parser("lab", help="the embedded lab of network-namespace hosts",
                        description="Create, draw or remove the embedded lab: hosts as network namespaces with "
                        "their own hostname, address and sshd, joined by a bridge (a flat lab) or by the links, "
                        "router, cgroups and devices of a lab file (docs/lab.md). Needs root.",
                        epilog="examples: perflab lab up --hosts 2; perflab lab up --file labs/routed.yaml; "
                        "perflab lab status; perflab lab down")
    lsub = lp.add_subparsers(dest="lab_cmd", required=True, metavar="{up,down,status,inventory,list}")
    up = lsub.add_parser("up", help="create (or complete) the lab; idempotent")
    up.add_argument("--file", help="lab description (YAML, see docs/lab.md), e.g. labs/routed.yaml; "
                    "without it: a flat lab of --hosts hosts on one link")
    up.add_argument("--hosts", type=int, help="flat lab: number of hosts h1..hN (default 2)")
    up.add_argument("--mtu", type=int, help="flat lab: MTU of every host's eth0 (default 1500)")
    up.add_argument("--rate", help="flat lab: egress rate limit per host, tc syntax, e.g. 1gbit (default: none)")
    for name in ("down", "status", "inventory"):
        lsub.add_parser(name, help={"down": "remove everything up created",
                                    "status": "draw links, hosts, routes, rules, cgroups and disks as text",
                                    "inventory": "print the inventory file's path"}[name])
    for sp in lsub.choices.values():
        sp.add_argument("--name", help="lab name (default: the file's lab, else default)")
    lsub.add_parser("list", help="name every lab that is up on this machine, with the command that removes it")
    lsub.choices["status"].add_argument("--json", action="store_true")
    lp.set_defaults(func=_lab)

    pp = sub.add_parser("plan", help="print a campaign's schedule without running anything",
                        description="Validate a campaign file and print its cells, schedule (RMIT or sequential), "
                        "number of samples and estimated time; with --check also ask the hosts for what the "
                        "campaign requires. Runs no benchmark.",
                        epilog="example: perflab plan studies/iperf3-streams/campaigns/iperf3-streams.yaml")
    pp.add_argument("campaign", help="campaign YAML file")
    pp.add_argument("--head", type=int, default=12, help="runs to list (default 12)")
    pp.add_argument("--all", action="store_true", help="list every run")
    pp.add_argument("--json", action="store_true")
    pp.add_argument("--check", action="store_true", help="also check on the hosts what the campaign requires "
                    "(commands, packages, file systems, modules, free space); exit 1 if anything is missing")
    pp.add_argument("--inventory", default="lab", help="hosts for --check, as for `perflab run` (default: lab)")
    pp.add_argument("--macros", metavar="FILE", help="write the planned values as inline values for the paper "
                    "(\\plset{<campaign>/plan/...}) to FILE instead of printing the plan")
    pp.set_defaults(func=_plan)

    st = sub.add_parser("studies", help="the studies declared in studies/*/study.yaml",
                        description="List the declared studies, or write the paper's generated list of their "
                        "chapters and inline values (paper/macros/studies-*.tex).",
                        epilog="example: perflab studies list; perflab studies index --paper-dir paper")
    st.add_argument("studies_cmd", choices=["list", "index"], metavar="{list,index}",
                    help="list: print them; index: write the paper index")
    st.add_argument("--json", action="store_true", help="list: print the declarations as JSON")
    st.add_argument("--paper-dir", default="paper", help="the paper's directory (default paper)")
    st.add_argument("--no-demos", action="store_true", help="leave out studies marked demo: true")
    st.set_defaults(func=_studies)

    rp = sub.add_parser("run", help="run or resume a campaign",
                        description="Run a campaign on the hosts of an inventory and store every sample's raw "
                        "output, checksummed, under RAW/<campaign>/. Stopped (Ctrl-C, kill -9), the same command "
                        "resumes with the samples not yet stored.",
                        epilog="example: perflab run studies/iperf3-streams/campaigns/iperf3-streams.yaml")
    rp.add_argument("campaign", help="campaign YAML file")
    rp.add_argument("--inventory", default="lab",
                    help="inventory file, 'lab' (embedded lab; localhost when not root) or 'localhost' (default: lab)")
    rp.add_argument("--raw", help="raw data root (default data/raw; with --rehearse scratch/rehearsal)")
    rp.add_argument("--limit", type=int, help="stop after this many samples (pilot)")
    rp.add_argument("--no-wait", action="store_true", help="stop at once, in one line, when another campaign is "
                    "measuring on this machine (default: wait for it; docs/campaigns.md, measurement lock)")
    rp.add_argument("--rehearse", action="store_true", help="every cell once at the shortest durations into "
                    "scratch, not evidence; cells the hosts cannot run are named and skipped (docs/real-hosts.md)")
    rp.add_argument("--yes-destroy", metavar="DEVICE", action="append", default=[],
                    help="confirm that a destructive campaign may overwrite DEVICE (repeat per device); "
                    "without it `perflab run` asks on the terminal")
    rp.set_defaults(func=_run)

    pl = sub.add_parser("pilot", help="run a few repetitions and print what the planned n can detect per cell",
                        description="Run a short pilot of a campaign into data/pilot/ and print per cell the "
                        "coefficient of variation, the minimum detectable effect at the planned n and the n a "
                        "confidence interval of the chosen half-width needs.",
                        epilog="example: perflab pilot studies/iperf3-streams/campaigns/iperf3-streams.yaml")
    pl.add_argument("campaign", help="campaign YAML file")
    pl.add_argument("--repetitions", type=int, default=5, help="pilot repetitions per cell (default 5)")
    pl.add_argument("--metric", help="summary metric to plan for (default: the tool's primary metric)")
    pl.add_argument("--halfwidth", type=float, default=1.0,
                    help="target half-width of the mean's CI, in %% of the mean (default 1)")
    pl.add_argument("--inventory", default="lab", help="as for `perflab run` (default: lab)")
    pl.add_argument("--raw", default="data/pilot", help="raw root of pilot data (default data/pilot)")
    pl.add_argument("--no-wait", action="store_true", help="stop at once when another campaign is measuring here")
    pl.set_defaults(func=_pilot)

    tp = sub.add_parser("tidy", help="parse a campaign's raw data into a tidy table",
                        description="Check a campaign's raw files against its manifest, parse every sample with "
                        "its tool's parser and write the tidy table (one row per sample and metric, with units) "
                        "as Parquet (and CSV on request), with a quarantine list of what did not parse.",
                        epilog="example: perflab tidy data/raw/iperf3-streams")
    tp.add_argument("raw_dir", help="data/raw/<campaign>")
    tp.add_argument("--out", default="data/processed", help="output directory (default data/processed)")
    tp.add_argument("--csv", action="store_true",
                    help="also write the CSV mirror <campaign>.csv (the pipeline does not: Parquet is its format)")
    tp.add_argument("--workers", type=_workers, metavar="N",
                    help="processes that parse the samples, this one included, at most 4 (default: one per CPU "
                    "for a campaign of 4,000 samples or more, else 1); the table is the same either way")
    tp.set_defaults(func=_tidy)

    vp = sub.add_parser(
        "verify", help="check raw data, published data, processed tables and outputs against their records",
        description="Without an argument, check the whole repository as a reviewer would (each step is shown "
                    "on stderr, then a summary): every raw campaign "
                    "and data/raw/published/ against its MANIFEST.sha256, a campaign's records against what "
                    "follows from them (schedule from seed, questions from their digest, samples from the "
                    "digests the ledger bound to their runs, the ledger's hash chain), every processed table "
                    "against the table re-derived from raw (exactly), and every lineage sidecar under paper/ "
                    "against the files it names; each campaign's chain head is printed. With directories, check "
                    "only those raw directories. Exit status 0 when "
                    "everything verifies, 1 when a file differs (each is named), 2 when there is nothing to check.",
        epilog="examples:\n  perflab verify\n  perflab verify --rebuild\n  perflab verify data/raw/iperf3-streams",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    vp.add_argument("raw_dir", nargs="*", metavar="PATH", help="raw campaign directories (default: the whole "
                    "repository); --rebuild needs the whole repository")
    vp.add_argument("--json", action="store_true", help="print the result as JSON (progress still goes to stderr)")
    vp.add_argument("--root", default=".", help="project root when checking the repository (default: .)")
    vp.add_argument("--rebuild", action="store_true",
                    help="also rerun every generating notebook into a scratch directory and compare its outputs "
                         "with paper/ byte for byte (takes minutes)")
    vp.add_argument("--scratch", help="directory for --rebuild (default: a new temporary directory, kept)")
    vp.add_argument("--kernel", default="perflab", help="Jupyter kernel for --rebuild (default perflab)")
    vp.add_argument("--bytes", action="store_true",
                    help="with raw directories: check only their bytes against the manifests, not the measurement "
                         "evidence (what the pipeline checks before it reads raw data)")
    vp.set_defaults(func=_verify)

    ev = sub.add_parser("evidence", help="how each committed campaign was measured: window, samples overlapping "
                        "another campaign's, contended samples, monitors (exit 1 when a study's campaign overlaps)",
                        description="For every committed campaign under data/raw/, print how it was measured: its "
                        "measurement window, the samples that overlap another campaign's, the samples taken while "
                        "the machine was contended, and its monitors; exit 1 when a study's campaign overlaps "
                        "another. --macros writes the same as the chapters' inline values.",
                        epilog="examples: perflab evidence; perflab evidence --json; "
                        "perflab evidence --macros paper/macros/evidence.tex --tables paper/tables")
    ev.add_argument("--root", default=".", help="project root holding data/raw (default: .)")
    ev.add_argument("--macros", metavar="FILE", help="write the inline values for the chapters "
                    "(\\plv{<campaign>/evidence/sentence}, .../contended, ...) to FILE instead of printing")
    ev.add_argument("--tables", metavar="DIR", help="write a table per study, "
                    "DIR/<study>-evidence.tex, of how its campaigns were measured (the chapters input it)")
    ev.add_argument("--json", action="store_true", help="one record per campaign, as the review site shows it")
    ev.set_defaults(func=_evidence)

    sp = sub.add_parser(
        "seal", help="checksum the executed notebook of a campaign, or newly digitized published files",
        description="Add to a raw directory's MANIFEST.sha256 the files written after its samples: the executed "
                    "experiment notebook of a campaign (data/raw/CAMPAIGN), or newly digitized published tables "
                    "(data/raw/published). Files already listed are never checksummed again, so a later edit still "
                    "fails `perflab verify`; in a campaign any other unlisted file is refused.",
        epilog="examples:\n  perflab seal data/raw/iperf3-streams\n  perflab seal data/raw/published",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("raw_dir", metavar="DIR", help="data/raw/CAMPAIGN or data/raw/published")
    sp.set_defaults(func=_seal)

    hp = sub.add_parser(
        "report", help="build the review site: notebooks, figures, raw data, manifests, lineage, machines",
        description="Render the executed notebooks with nbconvert and write a static review site: an index, a "
                    "page per campaign (figures, tables, fingerprint differences, links to raw samples, the "
                    "manifest, the processed Parquet table and lineage sidecars), a page per machine (host "
                    "fingerprint) and a search page. Every linked file, and every raw file a manifest lists, is "
                    "copied into OUT/files/, so OUT can be "
                    "copied and read on its own and its manifests checked there. Prints the site's size beside "
                    "the raw data's.",
        epilog="example:\n  perflab report --out reports data/raw/*/experiment.ipynb reports/notebooks/*.ipynb",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    hp.add_argument("notebooks", nargs="+", help="executed notebooks")
    hp.add_argument("--out", default="reports", help="output directory (default reports)")
    hp.add_argument("--root", default=".", help="project root holding data/ and paper/ (default: .)")
    hp.add_argument("--csv", action="store_true",
                    help="also ship the processed tables' CSV mirrors (made by perflab tidy --csv) where they exist")
    hp.set_defaults(func=_report)

    gp = sub.add_parser(
        "lineage", help="print how a figure, table or macro file was made, down to raw files and hosts",
        description="Read the lineage sidecar of FILE (FILE itself when it is a .lineage.json) and print the "
                    "chain: the output and its SHA-256, the generating notebook, its parameters, the git commit "
                    "and package versions, each input with its hash and, recursively, how it was made, down to "
                    "the raw campaign, its manifest and the host fingerprints. Every hash is compared with the "
                    "file on disk. Exit status 1 when a file changed or is missing.",
        epilog="examples:\n  perflab lineage paper/figures/iperf3-streams-throughput.pdf\n"
               "  perflab lineage paper/tables/003-openstack-opennebula-recheck-p.tex",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    gp.add_argument("file", help="a generated file (or its .lineage.json)")
    gp.add_argument("--json", action="store_true", help="print the chain and the sidecar's record as JSON")
    gp.add_argument("--root", default=".", help="project root the recorded paths are relative to (default: .)")
    gp.set_defaults(func=_lineage)

    ep = sub.add_parser(
        "export", help="write a campaign or a published study as an RO-Crate for reviewers or another lab",
        description="Write OUT/NAME/ with ro-crate-metadata.json (RO-Crate 1.1): for a campaign, its raw data "
                    "(samples, manifest, fingerprints, executed experiment notebook), campaign file, processed "
                    "tables, executed analysis notebook and paper outputs with lineage; for a study, its "
                    "digitized published tables, manifest and re-check outputs; and the environment's package "
                    "lock. Every file is listed with its size and SHA-256. Raw data that does not match its "
                    "manifest is not exported.",
        epilog="examples:\n  perflab export iperf3-streams --out exports\n"
               "  perflab export 003-openstack-opennebula --out exports",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ep.add_argument("name", help="campaign id (data/raw/NAME) or study id (data/raw/published/NAME-*.csv)")
    ep.add_argument("--out", default="exports", help="directory to write the crate into (default exports)")
    ep.add_argument("--root", default=".", help="project root (default: .)")
    ep.set_defaults(func=_export)

    ip = sub.add_parser(
        "import", help="check an RO-Crate from `perflab export` and add its raw data to this project",
        description="Check every file of the crate against ro-crate-metadata.json and each raw directory "
                    "against its MANIFEST.sha256, then copy the raw data (and the campaign file) into the "
                    "project's data/raw/, where the pipeline analyses it without rerunning the experiment. "
                    "Identical files already present are kept; different ones are refused, never overwritten.",
        epilog="example:\n  perflab import exports/iperf3-streams",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ip.add_argument("crate", help="the crate directory")
    ip.add_argument("--root", default=".", help="project root to import into (default: .)")
    ip.set_defaults(func=_import)

    for module in PLUGINS:
        declared = plugin_commands(module)
        if command in declared:
            importlib.import_module(module).register(sub)
            continue
        for name, text in declared.items():
            sub.add_parser(name, help=text, add_help=False)
    return p


def plugin_commands(module: str) -> dict[str, str]:
    """Subcommand name -> help text of the ``add_parser`` calls in plugin ``module``, read without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return {}
    path = Path(spec.origin)
    found: dict[str, Any] = {}
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_parser"
                and node.args and isinstance(node.args[0], ast.Constant)):
            found[str(node.args[0].value)] = next((k.value.value for k in node.keywords
                                              if k.arg == "help" and isinstance(k.value, ast.Constant)), None)
    return found


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse ``argv`` and run the subcommand; errors print one clear message."""
    command = parser().parse_known_args(argv)[0].command
    args = parser(command).parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except UserError as exc:  # anything else is a bug: its traceback shows
        for problem in exc.problems:
            print(f"perflab {args.command}: error: {problem}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        import os

        # The reader of stdout left early (`perflab parse ... | head`): not an error of ours. Point
        # stdout at /dev/null so that the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a command stopped by a closed pipe
    except KeyboardInterrupt as exc:
        if str(exc):  # the runner's own account of a stop (perflab.runner.Stopped): what was stopped, how to resume
            print(f"perflab {args.command}: {exc}", file=sys.stderr)
            return getattr(exc, "exit_code", 130)
        print(f"perflab {args.command}: interrupted; services, neighbour loads and monitors were stopped "
              "and stored samples are kept; rerun the same command to resume", file=sys.stderr)
        return 130
