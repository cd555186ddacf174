"""The perflab command: plan, verify, and clear errors with exit code 2."""

from pathlib import Path

from helpers import campaign_record
from perflab import cli, store

ROOT = Path(__file__).resolve().parents[1]


def test_plan_prints_schedule_size_and_duration(capsys):
    assert cli.main(["plan", str(ROOT / "studies/iperf3-streams/campaigns/iperf3-streams.yaml"), "--head", "3"]) == 0
    out = capsys.readouterr().out
    assert "2 cells x (1 warm-up + 40 repetitions) = 82 samples" in out
    assert out.count("block ") == 3 and "79 more" in out


def test_invalid_campaign_exits_2_with_file_line_field(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("campaign: x\nbenchmark: {tool: iperf3}\nhosts: {client: h1, server: h2}\nfactors: {p: [1]}\n"
                   "design: shuffled\n")
    assert cli.main(["plan", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:5: design: got 'shuffled'; allowed: 'rmit', 'sequential'" in err


def test_verify_exit_code_follows_the_manifest(tmp_path, capsys):
    raw = store.RawStore(tmp_path, "c")
    raw.begin(campaign_record())
    raw.put_sample("r", {"stdout": "x"})
    assert cli.main(["verify", str(raw.dir)]) == 0
    (raw.dir / "samples/r/stdout").write_text("y")
    assert cli.main(["verify", str(raw.dir)]) == 1
    assert "checksum differs" in capsys.readouterr().out


def test_pilot_refuses_a_single_repetition(capsys):
    assert cli.main(["pilot", str(ROOT / "studies/iperf3-streams/campaigns/iperf3-streams.yaml"), "--repetitions", "1",
                     "--inventory", "localhost", "--raw", "/nonexistent"]) == 2
    assert "at least 2 repetitions" in capsys.readouterr().err


def test_plan_shows_parallel_host_groups(tmp_path, capsys):
    path = tmp_path / "g.yaml"
    path.write_text("campaign: g\nbenchmark: {tool: iperf3}\ngroups: [{client: h1, server: h2}, {client: h3, server: h4}]\n"
                    "parallel_groups: 1\nfactors: {parallel: [1]}\nrepetitions: 2\n")
    assert cli.main(["plan", str(path), "--head", "0"]) == 0
    assert "2 independent host groups, 1 at a time: client=h1, server=h2; client=h3, server=h4" in capsys.readouterr().out
