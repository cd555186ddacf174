"""nfsbench (libnfs load loop behind aoe.py cost): commands from safe tokens, and its parser on a recorded run."""

from __future__ import annotations

import base64
import shlex

import pytest

from perflab import tools
from perflab.tools.base import ParseError, littles_law_flags
from perflab.tools.nfsbench import NFSBENCH_SCRIPT

NFS = tools.get("nfsbench")


def summary(rows):
    return {r.metric: r.value for r in rows if not r.dims}


def test_recorded_zfs_run_gives_rates_latencies_and_costs(read_fixture):
    rows = NFS.parse(read_fixture("nfsbench/randwrite-sync-zfs.txt"), source="zfs")
    top = summary(rows)
    assert top["ops"] == 814 and top["bytes"] == 814 * 4096
    assert top["iops"] == pytest.approx(814 / 1.0201737360000607)
    assert top["lat_mean"] == pytest.approx(0.0049482409938604805)
    assert top["target_cpu_per_op"] == pytest.approx(0.27 / 814)
    assert top["loop_cpu"] == pytest.approx(0.020465 + 0.015028)
    assert {r.dims["percentile"] for r in rows if r.metric == "lat_percentile"} == {50.0, 90.0, 99.0, 99.9}
    assert littles_law_flags(rows) == [], "2 jobs x 2 in flight: IOPS x mean latency is about 4"


def test_failed_run_and_repeated_output_are_refused(read_fixture):
    good = read_fixture("nfsbench/randwrite-sync-zfs.txt")
    failed = '\n@cost {"returncode": 1, "elapsed": 0.2, "initiator_cpu": 0.05, "target_cpu": 0.0}\n'
    with pytest.raises(ParseError, match="returncode 1: nfsbench.py: mount"):
        NFS.parse(failed, "nfsbench.py: mount 198.18.1.12:/zfs: RPC error\n", source="f")
    with pytest.raises(ParseError, match="one '@cost' line"):
        NFS.parse(good + good, source="twice")
    with pytest.raises(ParseError, match="key 'lat_mean'"):
        NFS.parse(good.replace('"lat_mean"', '"latency"'), source="schema")


def test_commands_are_safe_tokens_and_refuse_a_bad_export():
    cmds = NFS.commands({"export": "zfs", "rw": "randwrite", "iodepth": 4, "numjobs": 2, "sync": True},
                        {"server": "198.18.1.12"})
    assert [c.service for c in cmds] == [True, False]
    install = cmds[0].argv
    assert install[-2] == tools.nfsbench.HOST_SCRIPT and base64.b64decode(install[-1]) == NFSBENCH_SCRIPT.read_bytes()
    assert install[-4] == tools.blockproto.HOST_SCRIPT, "one service installs both scripts, so ready waits for both"
    run = cmds[-1].argv
    assert run[run.index("--server") + 1] == "198.18.1.12" and run[run.index("--export") + 1] == "/zfs"
    assert "--sync" in run and run[run.index("--jobs") + 1] == "2" and "--" in run
    assert shlex.split(cmds[-1].line()) == list(run)
    for bad in ("/zfs", "zfs; reboot", "..", "a/../etc"):
        with pytest.raises(ValueError, match="export"):
            NFS.commands({"export": bad}, {"server": "198.18.1.12"})


@pytest.mark.parametrize("tool", ["nfsbench", "blockproto"])
@pytest.mark.parametrize("line", ['@cost {"returncode": 0, x}', '@cost {1: 2}', '@cost {"a": [1, }'])
def test_a_cost_line_that_is_not_json_is_a_parse_error(tool, line):
    """The '@cost' line both adapters read (one helper) refuses what is not a JSON object as a parse error, never
    as a JSONDecodeError (the property test of every parser found it)."""
    with pytest.raises(ParseError, match="a JSON object on the '@cost' line"):
        tools.get(tool).parse('{"ops": 1}\n' + line + "\n", source="fixture")
