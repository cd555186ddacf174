"""perflab's agent: runs a host's commands for :mod:`perflab.executor`, one request at a time.

This file is sent to a host as the source of ``python3 -c`` and must stay self-contained:
standard library only, Python 3.6 or later, no perflab import. Each request is one JSON line
``{"line", "timeout", "kill_after", "env", "tag"}``; the answer is a header line
``__PERFLAB_AGENT__ <rc> <n_out> <n_err> <seconds>`` and the bytes of stdout and stderr.
"""

import json
import os
import signal
import subprocess
import sys
import time

MARK = b"__PERFLAB_AGENT__"
#: Exit statuses of a command the agent stopped: TERM sufficed (as GNU timeout), or KILL was needed.
STOPPED, KILLED = 124, 128 + 9


def tagged(tag):
    """Pids of this host's processes whose environment carries ``PERFLAB_TAG=tag``."""
    want = ("PERFLAB_TAG=" + tag).encode()
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                with open("/proc/%s/environ" % pid, "rb") as fh:
                    if want in fh.read().split(b"\0"):
                        found.append(int(pid))
            except OSError:
                pass
    return found


def _gone(pid):
    """True when ``pid`` has exited (gone, or a zombie waiting for its parent)."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def sweep(tag, wait=2.0):
    """Kill every process still tagged with a command's ``tag``; wait (``wait`` s at most) until they are gone."""
    pids = tagged(tag)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    end = time.monotonic() + wait
    while pids and time.monotonic() < end:
        pids = [p for p in pids if not _gone(p)]
        if pids:
            time.sleep(0.005)


def _signal_group(proc, sig):
    """Send ``sig`` to the process group ``proc`` leads (already gone: nothing to do)."""
    try:
        os.killpg(proc.pid, sig)
    except OSError:
        pass


def run(req):
    """Run one request with ``sh -c``; return (exit status, stdout bytes, stderr bytes, seconds on this host).

    The command runs in a session of its own with stdin from /dev/null; at ``timeout`` its process
    group gets TERM, then KILL after ``kill_after``. When a timed command ends, processes that left
    the group but still carry its ``tag`` are killed. The seconds are the command's own, taken here
    around its process alone.
    """
    env = dict(os.environ)
    env.update(req.get("env") or {})
    if req.get("tag"):
        env["PERFLAB_TAG"] = req["tag"]
    timeout = req.get("timeout")
    start = time.monotonic()
    proc = subprocess.Popen(["sh", "-c", req["line"]], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=req.get("kill_after", 5))
            rc = STOPPED
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            out, err = proc.communicate()
            rc = KILLED
    seconds = time.monotonic() - start
    if rc < 0:  # killed by a signal: the status a shell reports
        rc = 128 - rc
    if req.get("tag") and timeout is not None:
        sweep(req["tag"])
    return rc, out, err, seconds


def main():
    """Serve requests from standard input until it ends."""
    out = sys.stdout.buffer
    out.write(MARK + b" ready 1\n")
    out.flush()
    for raw in sys.stdin.buffer:
        try:
            rc, o, e, seconds = run(json.loads(raw.decode()))
        except Exception as exc:  # a bad request is answered, never the end of the agent
            rc, o, e, seconds = 127, b"", ("perflab agent: %s\n" % exc).encode(), 0.0
        out.write(MARK + (" %d %d %d %.9f\n" % (rc, len(o), len(e), seconds)).encode() + o + e)
        out.flush()


if __name__ == "__main__":
    main()
