"""The benchmarks of perflab itself still load what they run: their campaigns, their adapter, their raw store.

They run by hand (``python benchmarks/run.py``), never in the suite; two of them had stopped
working unnoticed (a campaign in an old format, a record tidy could no longer read). These
tests build what each one builds, without timing anything.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from perflab import campaign as campaign_mod, runner, tidy, tools

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def bench(monkeypatch):
    """Import a benchmark module by name, as ``benchmarks/run.py`` does (its folder first on the path)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))

    def load(name: str):
        sys.modules.pop(name, None)
        return importlib.import_module(name)
    return load


def test_every_benchmark_module_imports_and_has_results(bench):
    names = sorted(p.stem for p in BENCHMARKS.glob("bench_*.py"))
    assert {"bench_overhead", "bench_tidy", "bench_startup", "bench_pairs", "bench_estimates",
            "bench_dispatch", "bench_pipeline"} <= set(names)
    for name in names:
        assert callable(bench(name).results), name


def test_the_overhead_benchmarks_campaigns_load_with_its_adapter(bench, monkeypatch, tmp_path):
    overhead = bench("bench_overhead")
    monkeypatch.setitem(tools.REGISTRY, overhead.Sleep.name, "bench_overhead:Sleep")
    lean = overhead._campaign(tmp_path, "lean", lean=True)
    defaults = overhead._campaign(tmp_path, "defaults", lean=False)
    assert (lean.monitors, lean.fingerprints, defaults.monitors, defaults.fingerprints) == (False, False, True, True)
    assert lean.planned()["samples"] == overhead.SAMPLES
    one = overhead._campaign(tmp_path, "one", lean=False, one_block=True)
    assert runner.plan(one)["blocks"] == 1 and runner.plan(defaults)["blocks"] == overhead.SAMPLES


def test_the_pairs_benchmarks_campaigns_load(bench, tmp_path):
    pairs = bench("bench_pairs")
    loaded = pairs._campaigns(tmp_path, True)
    assert len(loaded[pairs.PAIRS].groups) == pairs.PAIRS and len(loaded[1].groups) == 1


def test_the_tidy_benchmarks_raw_store_tidies(bench, tmp_path):
    raw = bench("bench_tidy").campaign(tmp_path, 4)
    df, quarantine = tidy.frame(raw)
    assert len(quarantine) == 0 and len(df) == 4 * bench("bench_tidy").ROWS_PER_SAMPLE


def test_the_estimates_benchmark_finds_campaigns_that_load(bench):
    files = bench("bench_estimates")._campaigns()
    assert files, "no campaign to estimate"
    for path in files:
        assert campaign_mod.load(path).name, path


def test_the_overhead_benchmarks_parts_timer_finds_what_it_times_and_counts_each_part_once(bench, monkeypatch):
    overhead = bench("bench_overhead")
    for part, places in overhead.PARTS.items():  # every function it wraps still exists where it is looked up
        for owner, attr in places:
            assert callable(owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)), (part, attr)

    class Store:
        def put(self) -> str:
            return "stored"

    def measure() -> str:
        return Store().put()

    ns = SimpleNamespace(measure=measure)
    original = Store.__dict__["put"]
    ticks = iter(range(100))
    monkeypatch.setattr(overhead, "PARTS", {"outer": [(ns, "measure")], "inner": [(Store, "put")]})
    with overhead._Parts(clock=lambda: float(next(ticks))) as parts:
        assert ns.measure() == "stored"
    # clock: outer starts at 0, inner runs from 1 to 2, outer ends at 3: the inner second is the inner part's only
    assert parts.seconds == {"outer": 2.0, "inner": 1.0}
    assert Store.__dict__["put"] is original and ns.measure is measure


#: A Snakemake 9 log in short: two jobs of one rule at once, one analysis, the `all` job and the elapsed time.
SNAKEMAKE_LOG = """\
Provided cores: 2
[Sun Nov 29 06:25:41 2026]
localrule verify_raw:
    input: data/raw/a/experiment.ipynb
    jobid: 31
[Sun Nov 29 06:25:41 2026]
localrule verify_raw:
    jobid: 71
[Sun Nov 29 06:25:43 2026]
Finished jobid: 71 (Rule: verify_raw)
[Sun Nov 29 06:25:45 2026]
Finished jobid: 31 (Rule: verify_raw)
[Sun Nov 29 06:25:45 2026]
rule analysis_a_rtt:
    jobid: 5
[Sun Nov 29 06:26:05 2026]
Finished jobid: 5 (Rule: analysis_a_rtt)
[Sun Nov 29 06:26:05 2026]
localrule all:
    jobid: 0
[Sun Nov 29 06:26:05 2026]
Finished jobid: 0 (Rule: all)
Elapsed time: 0:00:25.500000
"""


def test_the_pipeline_profile_reads_each_jobs_time_per_rule_from_a_snakemake_log(bench, tmp_path):
    log = tmp_path / "run.snakemake.log"
    log.write_text(SNAKEMAKE_LOG)
    pipeline = bench("bench_pipeline")
    found = pipeline.read(log)
    assert found.jobs == {"verify_raw": [2.0, 4.0], "analysis_* (one notebook each)": [20.0]}
    assert (found.wall, found.cores, found.job_sum()) == (25.5, 2, 26.0)
    assert "| `analysis_* (one notebook each)` | 1 | 20 s | 20.0 s | 77 % |" in pipeline.table(found)
    [row] = pipeline.results(log)
    assert row.measured == "26 s" and row.met is True and "sum of its 3 jobs 26 s" in row.note


def test_the_startup_benchmark_times_every_subcommands_help(bench):
    assert {"lab", "plan", "run", "tidy", "verify", "report", "compare", "recheck"} <= set(
        bench("bench_startup").subcommands())


def test_the_pipeline_row_of_a_run_started_here_has_its_cpu_time(bench, tmp_path):
    (tmp_path / "Snakefile").write_text('rule all:\n    input: "done"\n\n'
                                        'rule made:\n    output: "done"\n    shell: "echo > {output}"\n')
    [row] = bench("bench_pipeline").results(run=tmp_path, cores=1)
    assert (tmp_path / "done").exists()
    assert "sum of its 1 jobs" in row.note and "CPU " in row.note and "CPUs busy" in row.note, row.note
