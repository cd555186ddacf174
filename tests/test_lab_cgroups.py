"""Per-host cgroups on a real lab: CPU time is accounted per host, cpusets and memory limits hold."""

import os

import pytest

from helpers import ROOT_ONLY, leftovers, load_campaign, monitor_text
from perflab import inventory, labspec, runner, tidy
from perflab.hosts import lab as lab_mod, remote

pytestmark = [ROOT_ONLY, pytest.mark.lab]

NAME = f"c{os.getpid() % 100000}"
TEXT = f"""\
format: 1
lab: {NAME}
links: {{lan: }}
hosts:
  h1: {{links: [lan], cpuset: "0", memory: 128M}}
  h2: {{links: [lan]}}
"""
#: Fixed CPU work that prints the CPU time it used itself.
BUSY = "python3 -c 'import time; sum(i * i for i in range(3_000_000)); print(time.process_time())'"


@pytest.fixture(scope="module")
def lab():
    if not lab_mod.cgroup_hierarchies():
        pytest.skip("no usable cgroup hierarchy mounted")
    lab = lab_mod.bring_up(labspec.load(f"{NAME}.yaml", text=TEXT))
    try:
        yield lab
    finally:
        lab_mod.down(NAME)
        assert leftovers(NAME) == []


@pytest.fixture(scope="module")
def hosts(lab):
    with remote.connect(inventory.load(lab.inventory_path)) as connected:
        yield connected


#: One CPU-bound stress-ng worker on h1 (cpuset 0) for 1 s, h2 idle, with monitors.
BUSY_CAMPAIGN = """\
campaign: busy
benchmark: {tool: stress-ng, params: {stressors: {cpu: 1}}}
hosts: {client: h1, idle: h2}
factors: {duration: [1]}
repetitions: 2
warmups: 0
seed: 1
monitors: true
fingerprints: false
"""


def test_each_sample_records_its_hosts_own_cpu_time_in_the_tidy_table(lab, tmp_path):
    c = load_campaign(BUSY_CAMPAIGN, tmp_path)
    summary = runner.run(c, inventory.load(lab.inventory_path), tmp_path / "raw", stream=open(os.devnull, "w"))
    assert summary.complete and not summary.failed
    for sample in (summary.raw_dir / "samples").iterdir():
        for host in ("h1", "h2"):
            before = monitor_text(sample / "monitors" / host, "cgroup-before.txt")
            assert before.startswith("==> /proc/uptime <==") and f"/{NAME}/{host}/" in before
    rows, quarantined = tidy.frame(summary.raw_dir)
    assert quarantined.empty
    own = rows[rows.tool == "stress-ng"].pivot_table(index="run_id", columns="metric", values="value")
    cpu = rows[rows.tool == "cgroup"].pivot_table(index="run_id", columns=["host", "metric"], values="value")
    assert len(own) == len(cpu) == 2
    used = own["user_time"] + own["system_time"]  # stress-ng prints them to 0.01 s
    assert (cpu["h1", "cpu_seconds"] >= used - 0.01).all(), (cpu, used)
    assert (cpu["h2", "cpu_seconds"] < used / 10).all(), "the idle host's cgroup counts none of h1's work"
    # h1's cpuset is one CPU: its load cannot exceed 1 beyond the uptime's 10 ms resolution
    assert (cpu["h1", "cpu_load"] <= (cpu["h1", "elapsed"] + 0.01) / cpu["h1", "elapsed"]).all()
    assert (cpu["h1", "cpu_load"] > 0).all()
    assert not rows[rows.tool == "cgroup"].summary.any()


def test_cpu_time_of_a_command_counts_on_its_host_only(hosts):
    before = {h: lab_mod.usage(NAME, h) for h in ("h1", "h2")}
    used = float(hosts["h1"].check(BUSY))
    after = {h: lab_mod.usage(NAME, h) for h in ("h1", "h2")}
    h1 = after["h1"].cpu_seconds - before["h1"].cpu_seconds
    h2 = after["h2"].cpu_seconds - before["h2"].cpu_seconds
    assert h1 >= used > 0.1, (h1, used)
    assert h2 < used / 10, (h2, used)
    assert after["h1"].user_seconds - before["h1"].user_seconds >= used - 0.05  # cpuacct.stat ticks of 10 ms


def test_a_cpuset_confines_the_hosts_processes(hosts):
    assert hosts["h1"].check("grep Cpus_allowed_list /proc/self/status").split()[-1] == "0"
    assert lab_mod.usage(NAME, "h1").cpus == "0"
    every = lab_mod.usage(NAME, "h2").cpus
    assert hosts["h2"].check("grep Cpus_allowed_list /proc/self/status").split()[-1] == every


def test_the_memory_limit_is_set_and_enforced(hosts):
    use = lab_mod.usage(NAME, "h1")
    assert use.memory_limit_bytes == 128 << 20 and 0 < use.memory_bytes <= use.memory_limit_bytes
    assert lab_mod.usage(NAME, "h2").memory_limit_bytes is None
    res = hosts["h1"].run("python3 -c 'b = bytearray(256 << 20); b[::4096] = b\"x\" * len(b[::4096])'")
    assert res.exit_code == 137, "the kernel kills what exceeds the host's memory limit"
    assert hosts["h2"].run("python3 -c 'b = bytearray(256 << 20); b[::4096] = b\"x\" * len(b[::4096])'").ok


def test_status_shows_the_limits(hosts):
    text = lab_mod.draw(lab_mod.status(NAME))
    assert "cgroup: cpuset 0, memory 128 MiB" in text and "cgroup: cpuset all, memory unlimited" in text
    assert text.count("used since up: CPU ") == 2


def test_usage_names_unknown_hosts(hosts):
    with pytest.raises(lab_mod.LabError, match="has no host 'h9'"):
        lab_mod.usage(NAME, "h9")


def test_a_failed_up_says_so_and_removes_what_it_made():
    if not lab_mod.cgroup_hierarchies():
        pytest.skip("no usable cgroup hierarchy mounted")
    name = f"f{os.getpid() % 100000}"
    text = f"format: 1\nlab: {name}\nlinks: {{lan: }}\nhosts:\n  h1: {{links: [lan], cpuset: \"{os.cpu_count() + 7}\"}}\n"
    try:
        with pytest.raises(lab_mod.LabError, match=r"host h1: cpuset .*what was made of the new lab was removed again"):
            lab_mod.bring_up(labspec.load("f.yaml", text=text))
    finally:
        lab_mod.down(name)
    assert leftovers(name) == []


def test_lab_down_removes_cgroups_made_inside_a_host_and_kills_their_processes():
    """A run killed with kill -9 leaves its process registry (a cgroup inside the host's); down still removes all."""
    if not lab_mod.cgroup_hierarchies():
        pytest.skip("no usable cgroup hierarchy mounted")
    name = f"k{os.getpid() % 100000}"
    created = lab_mod.up(name, 1)
    try:
        entry = inventory.load(created.inventory_path)["h1"]
        host_dir = next(d for d in (entry.cgroups or {}).values() if "unified" in d or "cpu" not in d)
        child = os.path.join(host_dir, "perflab-left", "h1")
        os.makedirs(child)
        sleeper = __import__("subprocess").Popen(["sleep", "301.25"])
        with open(os.path.join(child, "cgroup.procs"), "w") as fh:
            fh.write(str(sleeper.pid))
    finally:
        lab_mod.down(name)
    assert sleeper.wait(timeout=10) == -9, "the registry's process was killed"
    assert leftovers(name) == []
