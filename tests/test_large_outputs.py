"""Large outputs: a command's output of any size reaches the raw store byte for byte, in bounded memory and one
pass (the agent copies it in chunks, the controller spools it, the store copies the spool); a campaign's
``max_output`` fails a sample that writes more, saying so.

Memory is the controller's peak resident set (``VmHWM``) in a fresh process, against a baseline taken in the same
process once it has connected and run a small command: what the transfer and the store add.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import load_campaign
from perflab import store
from perflab.hosts import executor
from perflab.files import SPILL, Spool
from perflab.hosts.remote import Host, Result
from perflab.runner.measured import Measured, _failure

MiB = 1 << 20

#: The controller of one transfer, run in a fresh process: argv is the channel ("pipe", or "lab <inventory>"), the
#: file the host cats and the raw root; it prints the stored file's digest, its manifest line's and the peak's growth.
CONTROLLER = r"""
import hashlib, json, subprocess, sys
from perflab import inventory, store
from perflab.hosts import executor, remote

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

kind, big, root = sys.argv[1], sys.argv[2], sys.argv[3]
if kind == "pipe":
    sys.path.insert(0, sys.argv[4])
    from test_executor import PipeChannel
    agent = executor.Agent(PipeChannel(["sh", "-c", executor.command()]))
    assert agent.ready()
    run = lambda line: agent.run(line, timeout=600, reply_deadline=900)
else:
    host = remote.Host(inventory.load(sys.argv[4])["h1"])
    run = lambda line: host.run(line, timeout=600)
raw = store.RawStore(root, "big")
raw.dir.mkdir(parents=True)
small = run("echo warm")
raw.put_sample("warm", {"stdout": small.out, "stderr": small.err})
base = hwm()
res = run("cat " + big)
path = raw.put_sample("r1", {"stdout": res.out, "stderr": res.err})
grown = hwm() - base
h = hashlib.sha256()
with open(path / "stdout", "rb") as fh:
    while piece := fh.read(1 << 20):
        h.update(piece)
print(json.dumps({"sha256": h.hexdigest(), "listed": store.read_manifest(raw.dir)["samples/r1/stdout"],
                  "exit": res.exit_code, "grown": grown}))
"""


def _big_file(path: Path, size: int) -> str:
    """Write ``size`` random bytes to ``path``; return their SHA-256."""
    digest = hashlib.sha256()
    with open(path, "wb") as fh:
        for _ in range(size // MiB):
            piece = os.urandom(MiB)
            digest.update(piece)
            fh.write(piece)
    return digest.hexdigest()


def _transfer(tmp_path: Path, *channel: str) -> tuple[str, dict]:
    big = tmp_path / "big.bin"
    want = _big_file(big, 200 * MiB)
    try:
        done = subprocess.run([sys.executable, "-c", CONTROLLER, channel[0], str(big), str(tmp_path / "raw"),
                               *channel[1:]], capture_output=True, text=True, timeout=300)
    finally:
        big.unlink()
    assert done.returncode == 0, done.stderr[-2000:]
    return want, json.loads(done.stdout.strip().splitlines()[-1])


def test_200_mb_of_output_through_the_agent_is_stored_byte_for_byte_in_bounded_memory(tmp_path):
    want, got = _transfer(tmp_path, "pipe", str(Path(__file__).parent))
    assert got["exit"] == 0 and got["sha256"] == got["listed"] == want
    assert got["grown"] < 100 * MiB, f"the controller's peak grew by {got['grown'] / MiB:.0f} MiB"


@pytest.mark.lab
def test_200_mb_of_output_through_a_lab_host_is_stored_byte_for_byte_in_bounded_memory(tmp_path, lab):
    want, got = _transfer(tmp_path, "lab", str(lab.inventory_path))
    assert got["exit"] == 0 and got["sha256"] == got["listed"] == want
    assert got["grown"] < 100 * MiB, f"the controller's peak grew by {got['grown'] / MiB:.0f} MiB"


def test_a_spool_keeps_small_outputs_in_memory_and_spills_large_ones_to_a_file():
    small = Spool(b"abc")
    small.write(b"def")
    assert small == b"abcdef" and len(small) == 6 and small.dropped == 0
    assert small.file._rolled is False  # type: ignore[attr-defined]
    large = Spool()
    for _ in range(SPILL // MiB + 1):
        large.write(b"x" * MiB)
    assert large.file._rolled is True and len(large) == SPILL + MiB  # type: ignore[attr-defined]
    assert sum(len(piece) for piece in large.chunks()) == len(large)
    capped = Spool(limit=4)
    capped.write(b"abc")
    capped.write(b"defg")
    assert (capped, len(capped), capped.dropped) == (b"abcd", 4, 3)


def test_max_output_keeps_that_many_bytes_of_each_stream_and_counts_the_rest(tmp_path):
    line = "head -c 5000 /dev/zero; printf 'warn' >&2"
    here = executor.run_here(line, max_output=1000)
    assert (len(here.out), here.out.dropped, here.err, here.err.dropped) == (1000, 4000, b"warn", 0)
    agent = executor.Agent(__import__("test_executor").PipeChannel(["sh", "-c", executor.command()]))
    assert agent.ready()
    try:
        there = agent.run(line, max_output=1000)
        assert (len(there.out), there.out.dropped, there.err) == (1000, 4000, b"warn")
        assert agent.run("echo next").out == b"next\n", "the dropped bytes were read off the channel"
    finally:
        agent.close()


def test_a_sample_beyond_max_output_fails_saying_which_stream_where_and_both_sizes(tmp_path):
    spec = load_campaign("campaign: c\nbenchmark: {tool: dd, params: {of: /dev/stdout}}\nhosts: {client: h1}\n"
                         "factors: {count: [1]}\nmax_output: 1000\nscratch: [/dev/stdout]\n")
    assert spec.max_output == 1000
    host = Host(__import__("perflab").inventory.HostEntry("h1", "127.0.0.1", local=True))
    reply = executor.run_here("head -c 5000 /dev/zero", max_output=spec.max_output)
    res = Result("h1", "dd", reply.out, reply.err, reply.exit_code, 0.0, 1.0, reply.seconds)
    reason = _failure(spec, Measured("client", ("dd",), host="h1"), host, res)
    assert reason == ("stdout of the command on h1 exceeded the campaign's max_output of 1000 bytes (5000 and 0 "
                      "bytes written); the first 1000 bytes are kept: raise max_output or make the tool write less")
    kept = store.RawStore(tmp_path, "c").put_sample("r1", {"stdout": res.out}, failed=True)
    assert (kept / "stdout").read_bytes() == b"\0" * 1000


DD = """\
campaign: dd-stdout
benchmark: {{tool: dd, params: {{of: /dev/stdout, bs: 1M}}}}
scratch: [/dev/stdout]
hosts: {{client: h1}}
factors: {{count: [{count}]}}
repetitions: 2
warmups: 0
retries: 0
monitors: false
fingerprints: false
{cap}"""


@pytest.mark.lab
def test_a_campaign_whose_tool_writes_its_data_to_stdout_stores_every_sample_or_fails_it_past_max_output(
        lab_inventory, tmp_path):
    from perflab import runner

    whole = runner.run(load_campaign(DD.format(count=32, cap=""), tmp_path), lab_inventory, tmp_path / "raw",
                       stream=open(os.devnull, "w"))
    assert whole.complete and not whole.failed
    for sample in (whole.raw_dir / "samples").iterdir():
        assert (sample / "stdout").stat().st_size == 32 * MiB
        assert (sample / "stdout").read_bytes() == b"\0" * (32 * MiB)

    (tmp_path / "capped").mkdir()
    capped = runner.run(load_campaign(DD.format(count=4, cap="max_output: 1048576\n"), tmp_path / "capped"),
                        lab_inventory, tmp_path / "capped-raw", stream=open(os.devnull, "w"))
    assert len(capped.failed) == 2 and not capped.done
    for attempt in (capped.raw_dir / "failed").iterdir():
        meta = json.loads((attempt / "meta.json").read_text())
        assert meta["reason"].startswith("stdout of the command on h1 exceeded the campaign's max_output of 1048576 "
                                         f"bytes ({4 * MiB} and "), meta["reason"]
        assert (attempt / "stdout").stat().st_size == MiB
