"""perflab's agent: runs a host's commands for :mod:`perflab.hosts.executor`, one request at a time.

This file is sent to a host as the source of ``python3 -c`` and must stay self-contained:
standard library only, Python 3.6 or later, no perflab import. Each request is one JSON line
``{"line", "timeout", "kill_after", "env", "tag", "cgroup"}``, or ``{"op": "observe", "truncate",
"read", "stat"}`` for small files read without starting a process (:func:`observe`); the answer is a
header line ``__PERFLAB_AGENT__ <rc> <n_out> <n_err> <seconds>`` and the bytes of stdout and stderr, copied from
the command's output files in chunks (:func:`send`), so the agent's memory does not grow with an output's size.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

MARK = b"__PERFLAB_AGENT__"
#: How a command runs: its text reaches ``sh`` in the environment, so no process's command line
#: holds it (``pgrep -f`` on a host finds the command's own processes, never the shell around it).
#: The shell waits for a line on its standard input, a pipe from the agent, before it runs the
#: command: the agent moves it into the command's cgroup meanwhile (a cgroup migration can take
#: tens of milliseconds) and starts the command's clock right before the line is written, so the
#: duration holds neither the migration nor a lag of the agent's. No line (a refused join) is exit
#: status 125 and the command does not run; the command itself gets /dev/null as its standard input.
EVAL = ('c=$PERFLAB_COMMAND; unset PERFLAB_COMMAND; read -r _ || { echo "perflab agent: the command could not be '
        'moved into its cgroup; nothing ran" >&2; exit 125; }; exec 0</dev/null; eval "$c"')
#: Exit statuses of a command the agent stopped: TERM sufficed (as GNU timeout), or KILL was needed.
STOPPED, KILLED = 124, 128 + 9


def _number(path, word=None, index=0):
    """The integer at ``index`` of the file ``path`` (of its line starting with ``word``), or None."""
    try:
        with open(path) as fh:
            for line in fh:
                fields = line.split()
                if word is None or (fields and fields[0] == word):
                    return int(fields[index])
    except (OSError, ValueError, IndexError):
        pass
    return None


class Since:
    """The pids a command's processes can have: those the host allocated from its shell's pid ``first`` on.

    The host's pid counter wraps at ``pid_max`` (a window whose last pid is below its first); the window is known
    while fewer than a quarter of ``pid_max`` processes and threads were started since (``/proc/stat``'s
    ``processes``): coming back to ``first`` would take nearly ``pid_max`` of them, less the pids in use. Else any
    pid may be the command's.
    """

    def __init__(self, first):
        self.first, self.forks = first, _number("/proc/stat", "processes", 1)
        self.pid_max = _number("/proc/sys/kernel/pid_max")

    def window(self):
        """(first, last) pid of the window (``last`` below ``first`` once the counter wrapped), or None: any pid."""
        forks, last = _number("/proc/stat", "processes", 1), _number("/proc/loadavg", index=4)
        if None in (self.forks, forks, last, self.pid_max) or forks - self.forks >= self.pid_max // 4:
            return None
        return self.first, last


def _inside(pid, window):
    """True when ``pid`` lies in ``window`` (see :meth:`Since.window`; None: every pid does)."""
    if window is None:
        return True
    first, last = window
    return first <= pid <= last if first <= last else pid >= first or pid <= last


def tagged(tag, since=None):
    """Pids of this host's processes whose environment carries ``PERFLAB_TAG=tag`` (among those ``since`` allows)."""
    want = ("PERFLAB_TAG=" + tag).encode()
    found = []
    window = since.window() if since is not None else None
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid() and _inside(int(pid), window):
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


def sweep(tag, wait=2.0, since=None):
    """Kill every process still tagged with a command's ``tag``; wait (``wait`` s at most) until they are gone.

    A process in the middle of an exec shows no environment for that moment, so the scan is
    repeated until two scans in a row find nothing tagged. ``since`` (:class:`Since`, the command's)
    limits the scans to the pids allocated since the command started.
    """
    end = time.monotonic() + wait
    clean = 0
    while clean < 2 and time.monotonic() < end:
        pids = tagged(tag, since)
        clean = 0 if pids else clean + 1
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        while pids and time.monotonic() < end:
            pids = [p for p in pids if not _gone(p)]
            if pids:
                time.sleep(0.005)


def _procs(directory):
    """Pids in the cgroup ``directory`` and its descendants."""
    pids = []
    for parent, _dirs, names in os.walk(directory):
        if "cgroup.procs" in names:
            try:
                with open(os.path.join(parent, "cgroup.procs")) as fh:
                    pids += [int(p) for p in fh.read().split()]
            except OSError:
                pass
    return pids


def _write(path, text):
    """Write ``text`` to the cgroup file ``path``; False when the kernel refuses (or the file is absent)."""
    try:
        with open(path, "w") as fh:
            fh.write(text)
        return True
    except OSError:
        return False


def kill_cgroup(directory, wait=2.0):
    """Kill every process of the cgroup ``directory`` and its descendants, wait (``wait`` s at most) until they
    are gone, and remove the cgroups (``cgroup.kill``, or freeze, kill each member and thaw on older kernels)."""
    if not os.path.isdir(directory):
        return
    if not _write(os.path.join(directory, "cgroup.kill"), "1"):
        _write(os.path.join(directory, "cgroup.freeze"), "1")
        for pid in _procs(directory):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _write(os.path.join(directory, "cgroup.freeze"), "0")
    end = time.monotonic() + wait
    while _procs(directory) and time.monotonic() < end:
        time.sleep(0.005)
    for parent, _dirs, _names in sorted(os.walk(directory), key=lambda w: -len(w[0])):
        try:
            os.rmdir(parent)
        except OSError:
            pass


def _join(cgroup, pid):
    """Move ``pid`` into the cgroup directory ``cgroup``; False when the kernel refuses."""
    return _write(os.path.join(cgroup, "cgroup.procs"), str(pid))


def _signal_group(proc, sig):
    """Send ``sig`` to the process group ``proc`` leads (already gone: nothing to do)."""
    try:
        os.killpg(proc.pid, sig)
    except OSError:
        pass


def _members(pgid):
    """Pids of the live processes (not zombies) of the process group ``pgid``."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/stat" % pid) as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z" and int(fields[2]) == pgid:
                found.append(int(pid))
    return found


def end_group(proc, wait=10.0):
    """KILL the process group ``proc`` leads, wait (``wait`` s at most) until none of its members is alive, then
    reap ``proc``.

    KILL is delivered asynchronously: the group's leader can be reaped while a member, not yet scheduled on a
    busy machine, still runs; so the members are waited for, not only the leader.
    """
    _signal_group(proc, signal.SIGKILL)
    end = time.monotonic() + wait
    while _members(proc.pid) and time.monotonic() < end:
        time.sleep(0.005)
    proc.wait()


def run(req):
    """Run one request with ``sh``; return (exit status, stdout file, stderr file, seconds on this host).

    The command runs in a session of its own with stdin from /dev/null (and, given ``cgroup``, in
    that cgroup, made for it and joined before it runs); at ``timeout`` its process group gets TERM,
    then KILL after ``kill_after``. When the command ends, what is left in its cgroup is killed and
    the cgroup removed; without a cgroup, a timed command's processes that left its group but still
    carry its ``tag`` are killed. The seconds are the command's own: from the moment its shell, in
    its cgroup, is let go to the moment it exits (a blocking wait, no polling); making the cgroup,
    moving the shell into it and the cleanup fall outside them. The output comes back as two
    anonymous temporary files positioned at their start (the caller closes them), never read into
    memory here: an output of any size costs this process no more than a chunk (:func:`send`).
    """
    env = dict(os.environ)
    env.update(req.get("env") or {})
    env["PERFLAB_COMMAND"] = req["line"]
    if req.get("tag"):
        env["PERFLAB_TAG"] = req["tag"]
    timeout = req.get("timeout")
    cgroup = req.get("cgroup")
    if cgroup:  # the command's own cgroup, joined before it runs: nothing it starts can leave it
        os.makedirs(cgroup, exist_ok=True)
    # Output goes to files, not pipes: a child the command leaves in the background keeps a pipe
    # open, and the reply would wait for it; the command is done when its own process exits.
    waiting, go = os.pipe()
    out_file, err_file = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    try:
        proc = subprocess.Popen(["sh", "-c", EVAL], stdin=waiting, stdout=out_file,
                                stderr=err_file, env=env, start_new_session=True)
        since = Since(proc.pid)
        os.close(waiting)
        waiting = -1
        guard = _Deadline(proc, timeout, req.get("kill_after", 5))
        try:
            joined = _join(cgroup, proc.pid) if cgroup else True
            start = time.monotonic()
            if joined:
                try:
                    os.write(go, b"go\n")
                except BrokenPipeError:  # the shell is gone already: its exit status says how
                    pass
            os.close(go)  # without the line (a refused join) the shell exits 125
            go = -1
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: its pid stays its own
            seconds = time.monotonic() - start
        except BaseException:  # interrupted (in-process, a signal's exception): end the command, then re-raise
            guard.ended()
            end_group(proc)
            _clean(req, since)
            raise
        stopped = guard.ended()
        rc = proc.wait()
        out_file.seek(0)
        err_file.seek(0)
    except BaseException:
        out_file.close()
        err_file.close()
        raise
    finally:
        for fd in (waiting, go):
            if fd >= 0:
                os.close(fd)
    if stopped is not None:
        rc = stopped
    elif rc < 0:  # killed by a signal: the status a shell reports
        rc = 128 - rc
    _clean(req, since)
    return rc, out_file, err_file, seconds


def _clean(req, since):
    """After a command: kill what is left in its cgroup and remove it; without one, kill what a timed command
    left carrying its tag (``since``: the command's :class:`Since`)."""
    if req.get("cgroup"):
        kill_cgroup(req["cgroup"])
    elif req.get("tag") and req.get("timeout") is not None:
        sweep(req["tag"], since=since)


class _Deadline:
    """A command's timeout, kept by a timer thread while the agent waits for the command to exit:
    TERM to its process group at ``timeout``, KILL ``kill_after`` seconds later if it is still there."""

    def __init__(self, proc, timeout, kill_after):
        self.proc, self.kill_after = proc, kill_after
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.status = None  # STOPPED or KILLED once the deadline acted
        self.timer = None
        if timeout is not None:
            self.timer = threading.Thread(target=self._expire, args=(timeout,), daemon=True)
            self.timer.start()

    def _signal(self, sig, status):
        with self.lock:  # never after ended(): the process may be reaped and its pid reused
            if self.done.is_set():
                return False
            _signal_group(self.proc, sig)
            self.status = status
            return True

    def _expire(self, timeout):
        if self.done.wait(timeout) or not self._signal(signal.SIGTERM, STOPPED):
            return
        if not self.done.wait(self.kill_after):
            self._signal(signal.SIGKILL, KILLED)

    def ended(self):
        """Call when the command has exited (before reaping it): stop the timer; return STOPPED, KILLED or None."""
        with self.lock:
            self.done.set()
        if self.timer is not None:
            self.timer.join()
        return self.status


def observe(req):
    """Empty, read and stat small files without starting a process; return the answer's JSON bytes.

    In this order: each file of ``truncate`` is emptied (made when absent) as the shell's ``: > file`` does, so
    that its modification time is the host's file clock now; the files of ``read`` are read into ``text``, in the
    form ``tail -n +1`` prints them (a ``==> path <==`` line before each, a blank line before every header but
    the first; a file that cannot be read gives a line saying so instead); ``stat`` gives each file's
    modification time in ns (``mtime_ns``; null when it cannot be read). A file that cannot be emptied raises.
    """
    for path in req.get("truncate") or ():
        with open(path, "wb"):
            pass
    parts = []
    headers = 0
    for path in req.get("read") or ():
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            parts.append(("perflab agent: cannot read %s: %s\n" % (path, exc.strerror)).encode())
            continue
        parts.append(("\n" if headers else "").encode() + ("==> %s <==\n" % path).encode() + data)
        headers += 1
    mtimes = {}
    for path in req.get("stat") or ():
        try:
            mtimes[path] = os.stat(path).st_mtime_ns
        except OSError:
            mtimes[path] = None
    return json.dumps({"text": b"".join(parts).decode("utf-8", "replace"), "mtime_ns": mtimes}).encode()


def size(fh):
    """Bytes in the file object ``fh``."""
    return os.fstat(fh.fileno()).st_size


#: Bytes the agent copies per write of a reply's output.
CHUNK = 1 << 16


def send(out, rc, o, e, seconds):
    """Write the reply of one request to the binary stream ``out``: its header line, then the bytes of ``o`` and
    ``e`` (bytes, or files copied in :data:`CHUNK` pieces, so that the reply's size does not matter)."""
    n_out, n_err = (len(x) if isinstance(x, bytes) else size(x) for x in (o, e))
    out.write(MARK + (" %d %d %d %.9f\n" % (rc, n_out, n_err, seconds)).encode())
    for part, n in ((o, n_out), (e, n_err)):
        if isinstance(part, bytes):
            out.write(part)
            continue
        while n > 0:  # the header's count, even if the file grew since (a command's leftover still writing)
            chunk = part.read(min(CHUNK, n)) or b"\0" * min(CHUNK, n)
            out.write(chunk)
            n -= len(chunk)
    out.flush()


def answer(req):
    """(exit status, stdout, stderr, seconds) of one request: :func:`observe` for ``op`` observe (bytes), else
    :func:`run` (files)."""
    if req.get("op") == "observe":
        return 0, observe(req), b"", 0.0
    return run(req)


def main():
    """Serve requests from standard input until it ends."""
    out = sys.stdout.buffer
    out.write(MARK + b" ready 1\n")
    out.flush()
    for raw in sys.stdin.buffer:
        try:
            rc, o, e, seconds = answer(json.loads(raw.decode()))
        except Exception as exc:  # a bad request is answered, never the end of the agent
            rc, o, e, seconds = 127, b"", ("perflab agent: %s\n" % exc).encode(), 0.0
        try:
            send(out, rc, o, e, seconds)
        finally:
            for part in (o, e):
                if not isinstance(part, bytes):
                    part.close()


if __name__ == "__main__":
    main()
