"""The harness's own cost per sample and per command, each as a ratio to a peer measured in the same run.

- local: 40 samples of a ~60 ms command (``sleep 0.06``) run by perflab on this machine (the
  ``localhost`` inventory), with the leanest settings (no fingerprints, no monitors) and with the
  defaults, against a bash loop of the same 40 commands and, where installed, hyperfine's
  ``--runs 40`` (targets: leanest <= 1.10x, defaults <= 1.5x the bash loop);
- remote (root: a one-host lab): the same 40 samples on a lab host, against the floor of 40
  commands written to one plain ``sh`` on the same SSH connection (target: <= 2 ms per sample
  over the floor with the leanest settings, <= 5 ms with the defaults), and the same per sample once
  the run has started: the slope between runs of 20 and 40 samples, the run's start-up (connections,
  agents, the cgroup registry, the preflight check) being the intercept;
- the defaults twice: under RMIT, where a campaign of one cell makes every sample a block of its own
  (fingerprinted and recorded on its own), and under the sequential design, one block for the cell;
- where a sample's time over the floor goes, per variant: the wall time of one run split into the
  runner's parts (:data:`PARTS`: the measured command over the floor, the raw store, the monitor
  archive's compression, the ledger, the contention record, the monitors' reads and recordings,
  the fingerprints, and the rest: connecting, the preflight check, teardown, bookkeeping), so that
  a missed per-sample target says what each promise costs;
- one command through perflab's persistent shell (with and without its timeout; with it, also in a
  cgroup of a campaign's registry on the host, as a campaign's commands run) against the same
  connection's plain shell (target: <= 2 ms over it);
- the duration perflab records for a 200 ms command (``meta.json``'s ``duration``, taken on the
  host; the controller's ``ended - started`` where there is none) against a stopwatch around the
  same command on the same host (a direct fork, exec and wait; target: within 1 ms), and against
  200 ms for reference.

Each comparison is interleaved: round i runs every variant once, in a rotating order, so a busy
machine slows them alike.
"""

from __future__ import annotations

import io
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from measure import Result, spread

from perflab import campaign as campaign_mod, inventory, runner, store, tools
from perflab.hosts import contention, fingerprint, lab, monitors, remote
from perflab.ledger import Ledger
from perflab.formats.records import read_sample
from perflab.runner import samples as samples_mod
from perflab.runner.session import Blocks
from perflab.tools.base import Command, Measurement, Param, Rows, Tool

SAMPLES = 40
SECONDS = 0.06
ROUNDS = 3
TARGET_LEAN, TARGET_DEFAULTS = 1.10, 1.5
TARGET_REMOTE_LEAN_MS, TARGET_REMOTE_DEFAULTS_MS, TARGET_COMMAND_MS, TARGET_DURATION_MS = 2.0, 5.0, 2.0, 1.0


class Sleep(Tool):
    """The benchmark's own adapter: a sample is ``sleep SECONDS``; it reports nothing but that it ran."""

    name = "bench-sleep"
    roles = ("client",)
    params = (Param("seconds", "number", SECONDS, "s", "how long the sample sleeps"),)

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """One ``sleep`` of the campaign's ``seconds``."""
        return [Command("client", ("sleep", str(params["seconds"])))]

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """One row: the sample ran."""
        rows = Rows(source)
        rows.add("ran", "1", "1", "stdout")
        return rows

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """The sleep's length."""
        return float(params["seconds"])


def _campaign(tmp: Path, name: str, *, lean: bool, seconds: float = SECONDS, n: int = SAMPLES,
              one_block: bool = False) -> Any:
    """The benchmark's campaign: one cell of ``n`` samples; ``lean`` without fingerprints and monitors; ``one_block``
    under the sequential design (one block for the cell) rather than RMIT (with one cell, a block per sample)."""
    path = tmp / f"{name}.yaml"
    path.write_text(f"format: 1\ncampaign: {name}\nbenchmark: {{tool: bench-sleep}}\n"
                    f"hosts: {{client: h1}}\nfactors: {{seconds: [{seconds}]}}\nrepetitions: {n}\nwarmups: 0\nseed: 1\n"
                    f"fingerprints: {str(not lean).lower()}\nmonitors: {str(not lean).lower()}\n"
                    + ("design: sequential\n" if one_block else ""))
    return campaign_mod.load(path)


def _perflab(entries: Mapping[str, inventory.HostEntry], *, lean: bool, n: int = SAMPLES,
             one_block: bool = False) -> Callable[[], None]:
    def run() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            runner.run(_campaign(Path(tmp), "bench", lean=lean, n=n, one_block=one_block), entries, Path(tmp) / "raw",
                       stream=io.StringIO())
    return run


#: The perflab variants compared: name -> (lean, one block). The defaults are RMIT's: with one cell, every
#: sample is a block of its own, fingerprinted and recorded on its own; "defaults, one block" is the sequential design.
VARIANTS = {"lean": (True, False), "defaults": (False, False), "defaults, one block": (False, True)}


def _interleave(variants: Mapping[str, Callable[[], object]], rounds: int = ROUNDS) -> dict[str, list[float]]:
    names = list(variants)
    times: dict[str, list[float]] = {n: [] for n in names}
    for i in range(rounds):
        for name in names[i % len(names):] + names[:i % len(names)]:
            start = time.perf_counter()
            variants[name]()
            times[name].append(time.perf_counter() - start)
    return times


def _ratio(a: list[float], b: list[float]) -> list[float]:
    return [x / y for x, y in zip(a, b)]


def local() -> list[Result]:
    """The local rows: perflab (leanest, defaults) and hyperfine against a bash loop."""
    entries = inventory.localhost(("h1",))
    loop = f"for i in $(seq {SAMPLES}); do sleep {SECONDS}; done"
    variants: dict[str, Callable[[], object]] = {
        "bash": lambda: subprocess.run(["bash", "-c", loop], check=True),
        **{key: _perflab(entries, lean=lean, one_block=one) for key, (lean, one) in VARIANTS.items()},
    }
    if shutil.which("hyperfine"):
        variants["hyperfine"] = lambda: subprocess.run(
            ["hyperfine", "--runs", str(SAMPLES), "--warmup", "0", "-N", f"sleep {SECONDS}", "--style", "none"],
            check=True, capture_output=True)
    t = _interleave(variants)
    out = []
    for key, target in (("lean", TARGET_LEAN), ("defaults", TARGET_DEFAULTS), ("defaults, one block", TARGET_DEFAULTS)):
        r = _ratio(t[key], t["bash"])
        out.append(Result(f"local, {SAMPLES} x {SECONDS * 1e3:.0f} ms, {key} / bash loop", spread(r, "x"),
                          f"<= {target}x", statistics.median(r) <= target,
                          f"perflab {spread(t[key])}; bash loop {spread(t['bash'])}"))
    if "hyperfine" in t:
        out.append(Result("local, hyperfine --runs 40 / bash loop (peer)", spread(_ratio(t["hyperfine"], t["bash"]), "x"),
                          "(peer)", None, f"hyperfine {spread(t['hyperfine'])}"))
    return out


class _PlainShell:
    """One plain ``sh`` on a channel of an open connection: the floor for commands sent to a host."""

    MARK = b"__bench_done__"

    def __init__(self, host: remote.Host) -> None:
        self.chan = host.connection().client.get_transport().open_session()
        self.chan.exec_command("sh")
        self.buf = b""

    def run(self, line: str) -> None:
        self.chan.sendall(f"{line}; echo {self.MARK.decode()}\n".encode())
        while self.MARK not in self.buf:
            self.buf += self.chan.recv(65536)
        self.buf = self.buf.split(self.MARK, 1)[1]

    def repeat(self, line: str, n: int) -> None:
        """Run ``line`` ``n`` times, one after the other."""
        for _ in range(n):
            self.run(line)

    def close(self) -> None:
        self.chan.close()


#: The parts of a sample's time the breakdown tells apart: name -> the functions doing it (owner, attribute).
PARTS: dict[str, list[tuple[Any, str]]] = {
    "measured command": [(samples_mod, "run_waves")],
    "raw store": [(store.RawStore, "put_sample"), (store.RawStore, "put_file")],
    "xz of the monitor archive": [(store, "xz")],
    "ledger": [(Ledger, "running"), (Ledger, "done"), (Ledger, "failed")],
    "contention record": [(contention, "processes"), (contention, "read")],
    "monitors' reads": [(monitors, "before"), (monitors, "after")],
    "recordings' start and stop": [(monitors.Recordings, "ensure"), (monitors.Recordings, "stop_all")],
    "fingerprints": [(Blocks, "finish"), (Blocks, "_collect"), (fingerprint, "collect")],
}


class _Parts:
    """Wall time a run spends in each of :data:`PARTS`, exclusive of the parts called inside it (a fingerprint's
    stored file counts as raw store), by wrapping the functions while the ``with`` block runs.

    For a run on one host: on several, the parts the hosts do at the same time (one thread each) add up."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.seconds = dict.fromkeys(PARTS, 0.0)
        self._stack = threading.local()
        self._saved: list[tuple[Any, str, Any]] = []

    def _wrap(self, part: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack = self._stack.__dict__.setdefault("frames", [])
            stack.append(0.0)  # time spent in parts called from this one
            start = self.clock()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = self.clock() - start
                inner = stack.pop()
                self.seconds[part] += elapsed - inner
                if stack:
                    stack[-1] += elapsed
        return timed

    def __enter__(self) -> "_Parts":
        for part, places in PARTS.items():
            for owner, attr in places:
                function = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
                self._saved.append((owner, attr, function))
                setattr(owner, attr, self._wrap(part, function))
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, attr, function in reversed(self._saved):
            setattr(owner, attr, function)


def _breakdown(entries: Mapping[str, inventory.HostEntry], floor: float) -> list[Result]:
    """Where a sample's time over the floor goes, per variant: the run (of :data:`ROUNDS`) with the median total,
    split into :data:`PARTS` per sample; the measured command's part is over the floor's ``floor`` s per sample."""
    out = []
    for key, (lean, one) in VARIANTS.items():
        runs = []
        for _ in range(ROUNDS):
            with _Parts() as parts:
                start = time.perf_counter()
                _perflab(entries, lean=lean, one_block=one)()
                total = time.perf_counter() - start
            runs.append((total, parts.seconds))
        total, seconds = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
        per = {k: v / SAMPLES * 1e3 for k, v in seconds.items()}
        per["measured command"] -= floor * 1e3
        per["the rest: connecting, preflight, teardown, bookkeeping"] = (total / SAMPLES - floor) * 1e3 - sum(per.values())
        parts_text = ", ".join(f"{k} {v:.1f}" for k, v in per.items() if abs(v) >= 0.05)
        out.append(Result(f"remote, per sample over the floor, {key}: where it goes", f"{(total / SAMPLES - floor) * 1e3:.1f} ms",
                          "(none)", None, f"ms per sample: {parts_text} (the run of median total of {ROUNDS})"))
    return out


def remote_rows() -> list[Result]:
    """The remote rows on a one-host lab: per-sample and per-command costs over the plain shell floor."""
    name = f"bo{os.getpid() % 10000}"
    created = lab.up(name, 1)
    try:
        entries = inventory.load(created.inventory_path)
        with remote.connect(entries) as hosts:
            host = hosts["h1"]
            shell = _PlainShell(host)
            try:
                samples = _interleave({
                    "floor": lambda: shell.repeat(f"sleep {SECONDS}", SAMPLES),
                    **{key: _perflab(entries, lean=lean, one_block=one) for key, (lean, one) in VARIANTS.items()},
                    **{f"{key}, half": _perflab(entries, lean=lean, one_block=one, n=SAMPLES // 2)
                       for key, (lean, one) in VARIANTS.items() if key != "defaults"},
                })
                # as a campaign's commands run: each in a cgroup of the campaign's registry on the host
                registered = remote.Host(entries["h1"])
                registered.owner = f"bench-{os.getpid()}"
                registered.open_registry()
                commands = _interleave({
                    "plain": lambda: shell.repeat("true", 50),
                    "perflab": lambda: [host.run("true") for _ in range(50)],
                    "perflab, timeout": lambda: [host.run("true", timeout=10) for _ in range(50)],
                    "perflab, timeout, in a registry": lambda: [registered.run("true", timeout=10) for _ in range(50)],
                })
                registered.close_registry()
                registered.close()
            finally:
                shell.close()
        duration, nominal, watched = _recorded_error(entries)
        breakdown = _breakdown(entries, statistics.median(samples["floor"]) / SAMPLES)
    finally:
        lab.down(name)
    out = []
    targets = {"lean": TARGET_REMOTE_LEAN_MS, "defaults": TARGET_REMOTE_DEFAULTS_MS,
               "defaults, one block": TARGET_REMOTE_DEFAULTS_MS}
    for key, target in targets.items():
        extra = [(a - b) / SAMPLES * 1e3 for a, b in zip(samples[key], samples["floor"])]
        out.append(Result(f"remote, per sample over `sh` on the connection, {key}", spread(extra, "ms"),
                          f"<= {target} ms", statistics.median(extra) <= target,
                          f"{SAMPLES} samples: perflab {spread(samples[key])}, floor {spread(samples['floor'])}"))
    half = SAMPLES // 2
    for key in (k for k in targets if f"{k}, half" in samples):
        # the slope between runs of 20 and 40 samples: what one more sample costs once the run has started
        slope = [(a - b) / (SAMPLES - half) * 1e3 - f / SAMPLES * 1e3
                 for a, b, f in zip(samples[key], samples[f"{key}, half"], samples["floor"])]
        start = [(2 * b - a) for a, b in zip(samples[key], samples[f"{key}, half"])]
        out.append(Result(f"remote, per sample once started (slope {half} to {SAMPLES} samples), {key}",
                          spread(slope, "ms"), f"<= {targets[key]} ms", statistics.median(slope) <= targets[key],
                          f"over the floor's {spread([f / SAMPLES * 1e3 for f in samples['floor']], 'ms')} per sample; "
                          f"the run's start-up and end (intercept): {spread(start)}"))
    for key in ("perflab", "perflab, timeout", "perflab, timeout, in a registry"):
        extra = [(a - b) / 50 * 1e3 for a, b in zip(commands[key], commands["plain"])]
        out.append(Result(f"one command, {key} - plain shell", spread(extra, "ms"), f"<= {TARGET_COMMAND_MS} ms",
                          statistics.median(extra) <= TARGET_COMMAND_MS,
                          f"plain shell {spread([c / 50 * 1e3 for c in commands['plain']], 'ms')} per command"))
    out.append(Result("recorded duration of `sleep 0.2` - the host's stopwatch", spread(duration, "ms"),
                      f"within {TARGET_DURATION_MS} ms", abs(statistics.median(duration)) <= TARGET_DURATION_MS,
                      f"{len(duration)} samples on a lab host; the stopwatch's own timings vary by "
                      f"{spread(watched, 'ms')} around their median; recorded - 200 ms: {spread(nominal, 'ms')} "
                      "(process start and exit included, as any stopwatch around the process sees them)"))
    return out + breakdown


#: The peer of a recorded duration: the same command timed on the host by a direct fork, exec and wait.
_STOPWATCH = ("import subprocess, sys, time\n"
              "for _ in range(int(sys.argv[1])):\n"
              "    t = time.monotonic(); subprocess.run(['sleep', sys.argv[2]]); print(time.monotonic() - t)\n")


def _recorded_error(entries: Mapping[str, inventory.HostEntry],
                    n: int = 10) -> tuple[list[float], list[float], list[float]]:
    """Recorded duration of ``n`` samples of ``sleep 0.2`` on the lab host minus (ms): the stopwatch's
    median for the same command on the same host (a direct fork, exec and wait), and 200 ms; and the
    stopwatch's own timings minus their median (how much the process itself varies)."""
    with tempfile.TemporaryDirectory() as tmp:
        c = _campaign(Path(tmp), "duration", lean=True, seconds=0.2, n=n)
        runner.run(c, entries, Path(tmp) / "raw", stream=io.StringIO())
        metas = [read_sample(p) for p in (Path(tmp) / "raw/duration/samples").glob("*/meta.json")]
    recorded = [c.get("duration", c["ended"] - c["started"]) for c in (m.commands[0] for m in metas)]
    with remote.connect(entries, ["h1"]) as hosts:
        out = hosts["h1"].check(f"python3 -c {shlex.quote(_STOPWATCH)} {n} 0.2")
    watched = [float(x) for x in out.split()]
    stopwatch = statistics.median(watched)
    return ([(r - stopwatch) * 1e3 for r in recorded], [(r - 0.2) * 1e3 for r in recorded],
            [(w - stopwatch) * 1e3 for w in watched])


def results() -> list[Result]:
    """Every row: local always, the remote ones as root (they need the lab)."""
    tools.REGISTRY[Sleep.name] = f"{__name__}:Sleep"
    out = local()
    if os.geteuid() == 0:
        out += remote_rows()
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    for result in results():
        print(result.line())
