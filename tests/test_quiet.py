"""The quiet-machine gate and the contention record, without the lab: readings, bounds, study defaults, records."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from perflab import campaign as campaign_mod, inventory, runner, study, tidy
from perflab.hosts import contention
from perflab.formats import records
from perflab.hosts.contention import Quiet, Reading

PSI = "some avg10=1.16 avg60=1.66 avg300=1.80 total=22501843\nfull avg10=0.16 avg60=0.69 avg300=1.20 total=18695592\n"
STAT = "cpu  52394 0 21064 89406 2377 0 815 1183 0 0\ncpu0 16790 0 8750 56921 364 0 102 616 0 0\n"


@pytest.fixture(autouse=True)
def own_lock(tmp_path, monkeypatch):
    """Campaigns of this file take a lock of their own (they measure nothing that matters)."""
    monkeypatch.setenv("PERFLAB_MEASURE_LOCK", str(tmp_path / "measure.lock"))


def test_pressure_and_stat_lines_are_read_as_the_kernel_writes_them():
    assert contention.parse_pressure(PSI) == {"some": 22501843.0, "full": 18695592.0}
    assert contention.parse_pressure(None) == {} and contention.parse_pressure("") == {}
    busy, steal, total = contention.parse_stat(STAT)
    assert (busy, steal) == (52394 + 21064 + 815, 1183)
    assert total == busy + 89406 + 2377 + 1183


def test_the_busiest_commands_outside_the_lab_are_summed_by_name():
    P = contention.Proc
    before = {1: P("stress-ng-cpu", 100), 2: P("stress-ng-cpu", 50), 3: P("python", 10), 4: P("idle", 5),
              6: P("ksoftirqd/0", 7, True), 7: P("kworker/1:2-loop0", 3, True)}
    after = {1: P("stress-ng-cpu", 190), 2: P("stress-ng-cpu", 150), 3: P("python", 60), 4: P("idle", 5),
             5: P("new", 9), 6: P("ksoftirqd/0", 37, True), 7: P("kworker/1:2-loop0", 8, True)}
    assert contention.busiest(before, after, 1.0) == [
        {"name": "stress-ng-cpu", "cpus": 1.9, "processes": 2, "pids": [2, 1], "kernel": False},
        {"name": "python", "cpus": 0.5, "processes": 1, "pids": [3], "kernel": False},
        {"name": "ksoftirqd/0", "cpus": 0.3, "processes": 1, "pids": [6], "kernel": True}]
    assert contention.kernel_cpus(before, after, 1.0) == 0.35  # ksoftirqd 30 ticks + the loop worker's 5, of 100


def test_a_scan_of_the_processes_tells_the_kernels_threads_from_user_processes():
    child = subprocess.Popen(["sleep", "30"])
    try:
        procs = contention.processes()
    finally:
        child.kill()
        child.wait()
    assert procs[child.pid].name == "sleep" and not procs[child.pid].kernel
    kthreadd = [pid for pid, p in procs.items() if p.name == "kthreadd"]  # the parent of every kernel thread
    assert kthreadd and procs[kthreadd[0]].kernel


def test_processes_in_the_labs_or_perflabs_own_cgroups_are_not_the_machines_other_load():
    lab = "0::/perflab/l1/h1/perflab-x/h1/c-1\n"
    own = "12:cpu,cpuacct:/perflab-own/4242\n0::/\n"
    other = "4:memory:/process_api/abc\n0::/user.slice/perflab-notes\n1:name=systemd:/perflab\n"
    assert contention._OURS.search(lab) and contention._OURS.search(own)
    assert not contention._OURS.search(other)


def _reading(t, *, some=0.0, busy=0, steal=0, total=0, lab=None, own=None, load1=0.5, psi=True):
    pressure = {r: ({"some": some, "full": 0.0} if psi else {}) for r in contention.PRESSURE}
    return Reading(t=t, pressure=pressure, load1=load1, busy=busy, steal=steal, total=total, cpus=2, lab=lab, own=own)


def test_delta_gives_shares_of_the_window_and_splits_the_cpu_between_lab_perflab_and_the_rest():
    a = _reading(100.0, some=0, busy=1000, steal=10, total=2000, lab=50.0, own=1.0)
    b = _reading(102.0, some=500_000, busy=1300, steal=14, total=2400, lab=51.0, own=1.2)  # 2 s later
    d = contention.delta(a, b)
    assert d["cpu_pressure"] == pytest.approx(0.25) and d["io_pressure_full"] == 0.0
    assert d["steal"] == pytest.approx(4 / 400)
    assert d["busy_cpus"] == pytest.approx(1.5)  # 300 ticks of 10 ms in 2 s
    assert d["lab_cpus"] == pytest.approx(0.5) and d["own_cpus"] == pytest.approx(0.1)
    assert d["other_cpus"] == pytest.approx(0.9)
    no_psi = contention.delta(_reading(0.0, psi=False), _reading(1.0, psi=False))
    assert no_psi["cpu_pressure"] is None and no_psi["lab_cpus"] is None and no_psi["other_cpus"] == 0.0


def test_bounds_judge_the_gate_on_everything_and_a_sample_on_the_cpu_outside_the_lab_and_steal():
    q = Quiet(max_other_cpus=0.1, max_cpu_pressure=5, max_io_pressure=5, max_steal=1, max_load1=1.0)
    record = {"other_cpus": 0.05, "cpu_pressure": 0.2, "io_pressure": None, "steal": 0.0, "load1": 3.0}
    assert q.exceeded(record) == ["cpu pressure 20.00 % > 5 %", "1-min load 3.00 > 1"]
    assert q.exceeded(record, during=True) == []
    assert q.exceeded({**record, "other_cpus": 0.5}, during=True) == [], "a sample is judged on outside_cpus"
    assert q.exceeded({**record, "outside_cpus": 0.5}, during=True) == [
        "CPU used outside the lab (not its kernel work) 0.50 CPUs > 0.1 CPUs"]


BOUNDS = {"max_other_cpus": 0.1, "max_steal": 1.0}


def test_the_labs_kernel_work_is_told_from_the_cpu_outside_and_counted_with_the_workload():
    P = contention.Proc
    before = {1: P("ksoftirqd/0", 0, True), 2: P("kworker/u4:2-loop0", 0, True), 3: P("kblockd", 0, True),
              4: P("kswapd0", 0, True), 5: P("yes", 0)}
    after = {1: P("ksoftirqd/0", 40, True), 2: P("kworker/u4:2-loop0", 10, True), 3: P("kblockd", 5, True),
             4: P("kswapd0", 2, True), 5: P("yes", 20)}
    assert contention.split_outside(before, after, 1.0) == (0.55, 0.22)
    record = {"other_cpus": 1.0, "irq_cpus": 0.3}
    contention.attribute(record, 0.55, 0.22)
    assert record == {"other_cpus": 1.0, "irq_cpus": 0.3, "lab_kernel_cpus": 0.85, "outside_cpus": 0.22}
    busy = {"other_cpus": 0.3, "irq_cpus": 0.5}
    contention.attribute(busy, 0.2, 0.0)  # interrupt time also charged to the lab's tasks: capped, never below 0
    assert busy["lab_kernel_cpus"] == 0.3 and busy["outside_cpus"] == 0.0
    assert contention.parse_irq(STAT) == 815


def test_classify_reads_every_format_of_the_record_the_same_way():
    streams = {"format": 3, "steal": 0.002, "other_cpus": 0.9, "lab_kernel_cpus": 0.88, "outside_cpus": 0.02,
               "bounds": BOUNDS, "gate_gave_up": False}
    assert contention.classify(streams) == {"steal": 0.002, "outside_cpus": 0.02, "lab_kernel_cpus": 0.88,
                                            "steal_exceeded": False, "outside_exceeded": False,
                                            "gate_gave_up": False, "contended": False}
    hog = {**streams, "outside_cpus": 0.9, "steal": 0.05}
    assert contention.classify(hog)["contended"] and contention.classify(hog)["outside_exceeded"]
    # format 2: the kernel's threads (all of them) and the busiest commands, named
    old = {"format": 2, "steal": 0.003, "other_cpus": 0.5, "kernel_cpus": 0.48, "bounds": BOUNDS,
           "busiest": [{"name": "ksoftirqd/1", "cpus": 0.4, "kernel": True},
                       {"name": "kdamond.0", "cpus": 0.05, "kernel": True}],
           "exceeded": ["CPU used outside the lab 0.50 CPUs > 0.1 CPUs"], "contended": True}
    c = contention.classify(old)
    assert c["lab_kernel_cpus"] == pytest.approx(0.43) and c["outside_cpus"] == pytest.approx(0.07)
    assert c["contended"] is False, "the lab's softirq threads no longer make the sample contended"
    hog2 = {**old, "busiest": [{"name": "stress-ng-cpu", "cpus": 0.45, "kernel": False}], "kernel_cpus": 0.02}
    assert contention.classify(hog2)["outside_cpus"] == pytest.approx(0.48) and contention.classify(hog2)["contended"]
    gave_up = {**old, "exceeded": ["the gate before block 3 gave up waiting"]}
    assert contention.classify(gave_up)["gate_gave_up"]
    # format 1: only the steal can be judged
    first = {"format": 1, "steal": 0.02, "other_cpus": 0.5, "bounds": BOUNDS, "contended": True}
    assert contention.classify(first) == {"steal": 0.02, "outside_cpus": None, "lab_kernel_cpus": None,
                                          "steal_exceeded": True, "outside_exceeded": None,
                                          "gate_gave_up": False, "contended": True}
    assert contention.classify({"format": 3, "steal": 0.5, "bounds": None})["contended"] is None


def _study(root: Path, *, demo: bool = False, campaign: str = "campaign: c\n") -> Path:
    folder = root / "studies" / "s1"
    (folder / "campaigns").mkdir(parents=True)
    (folder / "study.yaml").write_text(f"format: 1\nstudy: s1\ntitle: t\ndemo: {str(demo).lower()}\n"
                                       "campaigns:\n  - file: campaigns/c.yaml\n")
    (folder / "campaigns" / "c.yaml").write_text(campaign)
    (folder / "campaigns" / "other.yaml").write_text(campaign)
    return folder / "campaigns"


def test_a_study_campaign_gets_the_strict_default_and_others_only_what_they_state(tmp_path):
    folder = _study(tmp_path)
    declared = study.declaring_study(folder / "c.yaml")
    assert declared == study.Declared("s1", folder.parent.resolve())
    assert study.declaring_study(folder / "other.yaml") is None, "a file the study does not declare"
    assert contention.quiet_of({}, folder / "c.yaml") == contention.STUDY_DEFAULT
    assert contention.quiet_of({"quiet": {"max_wait": 5}}, folder / "c.yaml") == \
        Quiet(**{**vars(contention.STUDY_DEFAULT), "max_wait": 5})
    assert contention.quiet_of({"quiet": False}, folder / "c.yaml") is None
    assert contention.quiet_of({}, folder / "other.yaml") is None
    assert contention.quiet_of({"quiet": {"max_other_cpus": 0.5}}, folder / "other.yaml") == Quiet(max_other_cpus=0.5)
    assert contention.quiet_of({"quiet": True}, folder / "other.yaml") == contention.STUDY_DEFAULT
    demo = _study(tmp_path / "d", demo=True)
    assert contention.quiet_of({}, demo / "c.yaml") is None, "a demonstration study's campaigns have no default gate"


def _fake_machine(monkeypatch, others: list[float]):
    """contention.read gives readings whose CPU outside the lab follows ``others`` (one value per window)."""
    state = {"t": 0.0, "busy": 0, "calls": 0}

    def read(root=None):
        state["calls"] += 1
        if state["calls"] % 2 == 0:  # the end of a window: the busy time grew by that window's value
            value = others[min(state["calls"] // 2 - 1, len(others) - 1)]
            state["t"] += 1.0
            state["busy"] += int(value * contention.USER_HZ)
        return _reading(state["t"], busy=state["busy"], total=int(state["t"] * 200) + 1)

    monkeypatch.setattr(contention, "read", read)
    monkeypatch.setattr(contention, "processes", lambda: {})
    busy = [{"name": "stress-ng-cpu", "cpus": 1.9, "processes": 2, "pids": [42, 43]}]
    monkeypatch.setattr(contention, "busiest", lambda *a, **k: busy)


def test_the_gate_waits_naming_what_is_busy_then_measures_once_quiet(monkeypatch):
    _fake_machine(monkeypatch, [1.9, 1.9, 0.0])
    notes, files = [], {}
    gate = contention.Gate(Quiet(max_other_cpus=0.1, window=0.001, max_wait=600), note=notes.append,
                           put=files.__setitem__)
    outcome = gate.before_block(3)
    assert outcome["quiet"] and outcome["polls"] == 3 and outcome["exceeded"] == []
    assert "before block 3 the machine is busy: CPU used outside the lab 1.90 CPUs > 0.1 CPUs" in notes[0]
    assert "stress-ng-cpu (1.90 CPUs, 2 processes: pid 42, 43)" in notes[0]
    assert notes[-1].startswith("quiet: the machine is quiet after")
    assert json.loads(files["blocks/3/quiet.json"])["quiet"] is True
    with gate.sample() as record:
        pass
    assert record["contended"] is False and record["format"] == contention.FORMAT


def test_a_gate_that_gives_up_measures_anyway_and_marks_the_blocks_samples_contended(monkeypatch):
    _fake_machine(monkeypatch, [1.9])
    notes, files = [], {}
    gate = contention.Gate(Quiet(max_other_cpus=0.1, window=0.001, max_wait=0), note=notes.append,
                           put=files.__setitem__, suffix="-g1")
    assert gate.before_block(0)["quiet"] is False
    assert "still busy" in notes[-1] and "record that the gate gave up" in notes[-1]
    assert "blocks/0/quiet-g1.json" in files
    stored = json.loads(files["blocks/0/quiet-g1.json"])
    assert stored["steal"] == 0.0 and stored["waited"] >= 0, "the gate records the steal it saw and its wait"
    with gate.sample() as record:
        pass
    assert record["gate_gave_up"] is True
    assert record["contended"] is True and record["outside_exceeded"] and not record["steal_exceeded"]


def test_a_gate_keeps_the_outcome_an_earlier_session_stored_for_the_block(monkeypatch):
    monkeypatch.setattr(contention, "read", lambda root=None: pytest.fail("the machine was read again"))
    gate = contention.Gate(Quiet(max_other_cpus=0.1), note=print, put=lambda *a: pytest.fail("stored twice"))
    assert gate.before_block(2, stored={"block": 2, "quiet": False}) == {"block": 2, "quiet": False}


CAMPAIGN = """\
campaign: c
benchmark: {tool: probe}
programs: [cmd]
hosts: {client: h1}
factors: {cmd: ['echo 7', 'echo 8']}
repetitions: 2
warmups: 0
seed: 3
monitors: false
fingerprints: false
"""


def test_every_sample_records_the_machines_contention_and_the_tidy_table_carries_it(probe, tmp_path):
    (tmp_path / "c.yaml").write_text(CAMPAIGN + "quiet: {max_other_cpus: 64, window: 0.05, max_wait: 5}\n")
    summary = runner.run(campaign_mod.load(tmp_path / "c.yaml"), inventory.localhost(), tmp_path / "raw",
                         stream=io.StringIO())
    assert summary.complete
    metas = [records.read_sample(p) for p in sorted((tmp_path / "raw/c/samples").glob("*/meta.json"))]
    assert len(metas) == 4 and {m.format for m in metas} == {4}
    for m in metas:
        c = m.contention
        assert c["format"] == 3 and c["bounds"]["max_other_cpus"] == 64
        assert c["contended"] is False and c["steal_exceeded"] is None, "no steal bound outside a study"
        assert set(c) >= {"seconds", "cpu_pressure", "io_pressure", "memory_pressure", "steal", "load1",
                          "busy_cpus", "lab_cpus", "own_cpus", "other_cpus", "kernel_cpus", "busiest", "exceeded",
                          "irq_cpus", "lab_kernel_cpus", "outside_cpus", "gate_gave_up"}
        assert 0 <= c["kernel_cpus"] and all(set(b) == {"name", "cpus", "processes", "pids", "kernel"}
                                             for b in c["busiest"])
    assert sorted(p.parent.name for p in (tmp_path / "raw/c/blocks").glob("*/quiet.json")) == ["0", "1"]
    df, _ = tidy.frame(tmp_path / "raw/c")
    assert str(df["contended"].dtype) == "boolean" and not df["contended"].any()
    assert {f"contention_{k}" for k in tidy.CONTENTION_COLUMNS} <= set(df.columns)
    assert df["contention_other_cpus"].notna().all() and df["contention_outside_cpus"].notna().all()


def test_without_quiet_bounds_samples_are_recorded_but_never_judged(probe, tmp_path):
    (tmp_path / "c.yaml").write_text(CAMPAIGN)
    runner.run(campaign_mod.load(tmp_path / "c.yaml"), inventory.localhost(), tmp_path / "raw", stream=io.StringIO())
    meta = records.read_sample(next((tmp_path / "raw/c/samples").glob("*/meta.json")))
    assert meta.contention["contended"] is None and meta.contention["bounds"] is None
    assert not (tmp_path / "raw/c/blocks").exists()
    df, _ = tidy.frame(tmp_path / "raw/c")
    assert df["contended"].isna().all()


def test_older_sample_records_are_read_without_contention_and_give_no_columns(tmp_path):
    from helpers import campaign_record, sample_meta
    from perflab.store import RawStore

    fixture = Path(__file__).parent / "fixtures/lab/iperf3-tcp-P4.json"
    s = RawStore(tmp_path, "c")
    s.begin(campaign_record("c", {"parallel": [4]}))
    old = json.loads(sample_meta("r0", {"parallel": 4}, 0))
    old["format"] = 3
    del old["contention"]
    s.put_sample("r0", {"stdout": fixture.read_text(), "stderr": "", "meta.json": json.dumps(old)})
    assert records.read_sample(tmp_path / "c/samples/r0/meta.json").contention is None
    df, _ = tidy.frame(tmp_path / "c")
    assert "contended" not in df and not any(c.startswith("contention_") for c in df)


def test_a_study_campaign_with_its_monitors_off_is_refused_before_anything_runs(probe, tmp_path):
    folder = _study(tmp_path, campaign=CAMPAIGN)
    with pytest.raises(runner.RunnerError) as err:
        runner.run(campaign_mod.load(folder / "c.yaml"), inventory.localhost(), tmp_path / "raw", stream=io.StringIO())
    assert "monitors: false: campaigns of study s1 run with their monitors on" in str(err.value)
    assert not list((tmp_path / "raw/c").glob("samples/*"))


def test_the_lab_cgroups_the_record_counts_are_those_the_lab_makes():
    from perflab.hosts import lab

    assert contention.LAB_CGROUP == lab.CGROUP_PARENT


@pytest.mark.parametrize("quiet,expected", [
    ("quiet: {max_other_cpus: lots}", "quiet.max_other_cpus: 'lots' is not of type"),
    ("quiet: {max_cpu_pressure: 150}", "quiet.max_cpu_pressure: 150 is greater than the maximum of 100"),
    ("quiet: {wait: 5}", "quiet.wait: unknown field; remove it or use one of max_other_cpus, max_cpu_pressure"),
    ("quiet: often", "quiet: 'often' is not of type 'boolean', 'object'"),
])
def test_a_wrong_quiet_section_is_refused_naming_its_line(probe, tmp_path, quiet, expected):
    (tmp_path / "c.yaml").write_text(CAMPAIGN + quiet + "\n")
    with pytest.raises(ValueError) as err:
        campaign_mod.load(tmp_path / "c.yaml")
    assert f"c.yaml:11: {expected}" in str(err.value)
