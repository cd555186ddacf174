"""A user-space NFS load loop over libnfs: jobs x I/Os in flight against one export, one JSON line out.

The kernel here has no NFS client, so there is no mount for fio's file engines, and Debian's
fio has no ``nfs`` engine. This script drives Debian's libnfs (``libnfs.so.13``, through
ctypes: no compiler on the hosts) with its asynchronous API: each job is its own NFS
context (its own TCP connection, mounted once before the loop) on its own file
``perflab-nfsbench-<job>.dat`` of ``--size`` bytes (laid out before the loop when shorter,
and kept for later runs), and keeps ``--iodepth`` READs or WRITEs of ``--bs`` bytes in flight;
one thread polls every context. ``--sync`` opens the files with O_SYNC, so libnfs sends
FILE_SYNC writes (the server makes each write stable before it answers), else UNSTABLE ones.

It imports only the standard library so that a lab host can run it as a script::

    python3 nfsbench.py --server 198.18.1.12 --export /ext4 --rw randwrite --bs 4096 \\
        --iodepth 4 --jobs 2 --size 16777216 --runtime 5

and prints one JSON object: operations, bytes, elapsed seconds, the mean and percentiles of
each I/O's latency (issue to completion) in seconds, and the script's own user and system CPU
seconds during the loop. NFSv3 only: Debian's libnfs 4.0 fails writes over NFSv4.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import resource
import select
import sys
import time

LIBRARY = "libnfs.so.13"
RWS = ("read", "write", "randread", "randwrite")
_CB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_SIGNATURES = {
    "nfs_init_context": ([], ctypes.c_void_p),
    "nfs_destroy_context": ([ctypes.c_void_p], None),
    "nfs_set_version": ([ctypes.c_void_p, ctypes.c_int], ctypes.c_int),
    "nfs_get_error": ([ctypes.c_void_p], ctypes.c_char_p),
    "nfs_mount": ([ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p], ctypes.c_int),
    "nfs_open2": ([ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)],
                  ctypes.c_int),
    "nfs_close": ([ctypes.c_void_p, ctypes.c_void_p], ctypes.c_int),
    "nfs_lseek": ([ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)],
                  ctypes.c_int),
    "nfs_pwrite": ([ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_char_p],
                   ctypes.c_int),
    "nfs_pread_async": ([ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64, _CB, ctypes.c_void_p],
                        ctypes.c_int),
    "nfs_pwrite_async": ([ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_char_p, _CB,
                          ctypes.c_void_p], ctypes.c_int),
    "nfs_get_fd": ([ctypes.c_void_p], ctypes.c_int),
    "nfs_which_events": ([ctypes.c_void_p], ctypes.c_int),
    "nfs_service": ([ctypes.c_void_p, ctypes.c_int], ctypes.c_int),
}
LAYOUT_CHUNK = 1 << 20
#: Seconds the I/Os in flight may take to complete once the run is over.
DRAIN_TIMEOUT = 30.0


class NfsError(RuntimeError):
    """A libnfs call failed; the message has libnfs's own error."""


def _lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(LIBRARY)
    for name, (args, result) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, result
    return lib


class Job:
    """One NFS context with its file open, and the I/Os it has in flight."""

    def __init__(self, lib: ctypes.CDLL, server: str, export: str, index: int, size: int, sync: bool) -> None:
        self.lib, self.size = lib, size
        self.ctx = lib.nfs_init_context()
        if not self.ctx:
            raise NfsError("nfs_init_context failed")
        lib.nfs_set_version(self.ctx, 3)
        self._check(lib.nfs_mount(self.ctx, server.encode(), export.encode()), f"mount {server}:{export}")
        fh = ctypes.c_void_p()
        flags = os.O_RDWR | os.O_CREAT | (os.O_SYNC if sync else 0)
        self._check(lib.nfs_open2(self.ctx, f"/perflab-nfsbench-{index}.dat".encode(), flags, 0o644,
                                  ctypes.byref(fh)), "open")
        self.fh = fh
        end = ctypes.c_uint64()
        self._check(lib.nfs_lseek(self.ctx, fh, 0, os.SEEK_END, ctypes.byref(end)), "lseek")
        chunk = b"\x5a" * LAYOUT_CHUNK
        for offset in range(end.value - end.value % LAYOUT_CHUNK, size, LAYOUT_CHUNK):
            count = min(LAYOUT_CHUNK, size - offset)
            self._check(lib.nfs_pwrite(self.ctx, fh, offset, count, chunk), f"lay out {size} bytes")
        self.in_flight = 0

    def _check(self, rc: int, what: str) -> None:
        if rc < 0:
            raise NfsError(f"{what}: {self.lib.nfs_get_error(self.ctx).decode(errors='replace')}")

    def close(self) -> None:
        """Close the file and the context (which unmounts)."""
        self.lib.nfs_close(self.ctx, self.fh)
        self.lib.nfs_destroy_context(self.ctx)


def bench(server: str, export: str, rw: str, bs: int, iodepth: int, jobs: int, size: int, runtime: float,
          sync: bool) -> dict:
    """Run the loop for ``runtime`` seconds; its operations, bytes, latencies and CPU seconds."""
    lib = _lib()
    if size < bs:
        raise NfsError(f"size {size} is smaller than one I/O of {bs} bytes")
    workers = [Job(lib, server, export, j, size, sync) for j in range(jobs)]
    blocks, buf = size // bs, b"\xa5" * bs
    write, rand = "write" in rw, rw.startswith("rand")
    rng = random.Random(0)
    cursor = [0] * jobs
    latencies: list[float] = []
    errors: list[str] = []
    state = {"bytes": 0, "stop": False}

    def submit(j: int) -> None:
        job = workers[j]
        block = rng.randrange(blocks) if rand else cursor[j] % blocks
        cursor[j] += 1
        serial[0] += 1
        ref = ctypes.c_void_p(serial[0])
        issued[serial[0]] = (j, time.perf_counter())
        if write:
            rc = lib.nfs_pwrite_async(job.ctx, job.fh, block * bs, bs, buf, callback, ref)
        else:
            rc = lib.nfs_pread_async(job.ctx, job.fh, block * bs, bs, callback, ref)
        if rc < 0:
            raise NfsError(f"issue: {lib.nfs_get_error(job.ctx).decode(errors='replace')}")
        job.in_flight += 1

    @_CB
    def callback(err: int, ctx: int, data: int, private: int) -> None:
        done = time.perf_counter()
        j, started = issued.pop(private)
        workers[j].in_flight -= 1
        if err < 0:
            errors.append(ctypes.string_at(data).decode(errors="replace") if data else f"error {err}")
            return
        latencies.append(done - started)
        state["bytes"] += err
        if not state["stop"]:
            try:
                submit(j)
            except NfsError as exc:  # an exception cannot leave a ctypes callback
                errors.append(str(exc))

    issued: dict[int, tuple[int, float]] = {}
    serial = [0]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    for j in range(jobs):
        for _ in range(iodepth):
            submit(j)
    while True:
        now = time.perf_counter()
        if now - start >= runtime:
            state["stop"] = True
        if now - start > runtime + DRAIN_TIMEOUT:
            raise NfsError(f"{sum(w.in_flight for w in workers)} I/Os unanswered {DRAIN_TIMEOUT:.0f} s after the run")
        if errors or (state["stop"] and not any(w.in_flight for w in workers)):
            break
        poller = select.poll()
        fds = {}
        for w in workers:
            fd = lib.nfs_get_fd(w.ctx)
            fds[fd] = w
            poller.register(fd, lib.nfs_which_events(w.ctx))
        for fd, revents in poller.poll(100):
            if lib.nfs_service(fds[fd].ctx, revents) < 0:
                raise NfsError(f"service: {lib.nfs_get_error(fds[fd].ctx).decode(errors='replace')}")
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    for w in workers:
        w.close()
    if errors:
        raise NfsError(f"{len(errors)} I/O failed, the first: {errors[0]}")
    ordered = sorted(latencies)

    def pct(p: float) -> float | None:
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] if ordered else None

    return {"ops": len(latencies), "bytes": state["bytes"], "elapsed": elapsed,
            "lat_mean": sum(latencies) / len(latencies) if latencies else None,
            "lat_percentiles": {str(p): pct(p) for p in (50, 90, 99, 99.9)},
            "cpu_user": after.ru_utime - usage.ru_utime, "cpu_system": after.ru_stime - usage.ru_stime,
            "rw": rw, "bs": bs, "iodepth": iodepth, "jobs": jobs, "size": size, "sync": sync, "version": 3}


def main(argv: list[str] | None = None) -> int:
    """Command line: the load loop's options; prints its JSON object, or the error on stderr (exit 1)."""
    parser = argparse.ArgumentParser(prog="nfsbench.py", description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--export", required=True, help="the export's path (the server's pseudo path)")
    parser.add_argument("--rw", choices=RWS, default="randread")
    parser.add_argument("--bs", type=int, default=4096)
    parser.add_argument("--iodepth", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--size", type=int, default=16 << 20)
    parser.add_argument("--runtime", type=float, default=5.0)
    parser.add_argument("--sync", action="store_true", help="O_SYNC: FILE_SYNC writes")
    args = parser.parse_args(argv)
    try:
        result = bench(args.server, args.export, args.rw, args.bs, args.iodepth, args.jobs, args.size,
                       args.runtime, args.sync)
    except (NfsError, OSError) as exc:
        print(f"nfsbench.py: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
