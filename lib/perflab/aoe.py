"""Small user-space block initiators: ATA over Ethernet (AoE), and NBD for the same load loop.

AoE (Coraid's specification AoEr11) carries ATA commands in raw Ethernet frames of
ethertype 0x88A2. This module speaks it on an ``AF_PACKET`` socket bound to one interface
(root or CAP_NET_RAW; inside a lab host it uses that host's network namespace), so a
target such as ``vblade`` can be used where the kernel has no ``aoe`` module. It issues
READ/WRITE SECTORS EXT (LBA48) commands, at most the target's advertised sectors per
frame, several frames in flight per I/O, and retransmits a frame whose answer is late.

:class:`NbdInitiator` speaks the NBD protocol (fixed newstyle handshake, one export, one
request in flight) over TCP, so that the same load loop (:func:`bench`) drives AoE and NBD
and a protocol comparison is not also a comparison of load generators (fio drives NBD too).

It imports only the standard library so that a lab host can run it as a script::

    python3 aoe.py query --iface eth0 --major 1 --minor 1
    python3 aoe.py bench --peer 198.18.1.12 --major 1 --minor 1 --rw randread --bs 4096 --runtime 5
    python3 aoe.py bench --nbd 198.18.1.12:10809 --rw randread --bs 4096 --runtime 5
    python3 aoe.py cost --procs vblade -- python3 aoe.py bench ...

``bench`` prints one JSON object: operations, bytes, elapsed seconds, the process's own user
and system CPU seconds during the I/O loop alone (so without the interpreter's start-up and
the connection), and for AoE the frames sent (at most the target's advertised buffer count
unanswered at a time) and retransmitted. ``--peer ADDR`` picks the interface whose IPv4
network holds ADDR (the target's address on the link to use).
``cost`` runs any initiator command, passes its output through and appends a line
``@cost {...}`` with the command's CPU seconds (its rusage) and the CPU seconds the named
target processes spent meanwhile (``/proc/<pid>/stat`` of every process with that name
visible here: on the embedded lab all hosts share one PID namespace; on separate real
hosts the target's side reads 0 processes and the field is left empty).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import random
import resource
import select
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass

#: Ethernet type of AoE frames.
ETHERTYPE = 0x88A2
SECTOR = 512
BROADCAST = b"\xff" * 6
#: AoE commands and ATA opcodes used here (ATA/ATAPI-7 LBA48 forms).
CMD_ATA, CMD_QUERY = 0, 1
ATA_READ_EXT, ATA_WRITE_EXT, ATA_IDENTIFY = 0x24, 0x34, 0xEC
#: AoE flags (high nibble of byte 0 is the version, 1) and ATA argument flags.
FLAG_RESPONSE, FLAG_ERROR = 0x08, 0x04
AFLAG_EXTENDED, AFLAG_DEVICE, AFLAG_WRITE = 0x40, 0x10, 0x01
HEADER = struct.Struct("!6s6sHBBHBBI")  # dst, src, type, ver/flags, error, major, minor, command, tag
ATA_ARGS = struct.Struct("!BBBB6s2x")  # aflags, feature/error, sector count, command/status, lba, reserved
QUERY_ARGS = struct.Struct("!HHBBH")  # buffer count, firmware, sectors per frame, version/ccmd, string length


class AoEError(RuntimeError):
    """The target answered with an error, did not answer, or the arguments are impossible."""


#: NBD protocol constants (the NBD protocol document, "fixed newstyle negotiation").
NBD_MAGIC, NBD_IHAVEOPT = b"NBDMAGIC", 0x49484156454F5054
NBD_FLAG_FIXED_NEWSTYLE, NBD_FLAG_NO_ZEROES = 0x1, 0x2
NBD_OPT_EXPORT_NAME = 1
NBD_REQUEST_MAGIC, NBD_REPLY_MAGIC = 0x25609513, 0x67446698
NBD_CMD_READ, NBD_CMD_WRITE, NBD_CMD_DISC = 0, 1, 2
NBD_REQUEST = struct.Struct("!IHHQQI")  # magic, command flags, type, handle, offset, length
NBD_REPLY = struct.Struct("!IIQ")  # magic, error, handle


class NbdInitiator:
    """An NBD client for the default export of ``host``:``port``: fixed newstyle handshake, then one request
    in flight at a time (the AoE initiator's discipline, so that the two compare)."""

    def __init__(self, host: str, port: int, *, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.handle = 0
        hello = self._recv(18)
        if hello[:8] != NBD_MAGIC or struct.unpack("!Q", hello[8:16])[0] != NBD_IHAVEOPT:
            raise AoEError(f"NBD server {host}:{port}: expected the fixed newstyle greeting; found {hello!r}")
        flags = struct.unpack("!H", hello[16:18])[0]
        mine = NBD_FLAG_FIXED_NEWSTYLE | (flags & NBD_FLAG_NO_ZEROES)
        self.sock.sendall(struct.pack("!I", mine) + struct.pack("!QII", NBD_IHAVEOPT, NBD_OPT_EXPORT_NAME, 0))
        self.size, self.flags = struct.unpack("!QH", self._recv(10))
        if not mine & NBD_FLAG_NO_ZEROES:
            self._recv(124)

    def _recv(self, n: int) -> bytes:
        parts, got = [], 0
        while got < n:
            chunk = self.sock.recv(n - got)
            if not chunk:
                raise AoEError(f"NBD server closed the connection ({got} of {n} bytes received)")
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def _request(self, command: int, offset: int, length: int, data: bytes = b"") -> bytes:
        self.handle += 1
        self.sock.sendall(NBD_REQUEST.pack(NBD_REQUEST_MAGIC, 0, command, self.handle, offset, length) + data)
        magic, error, handle = NBD_REPLY.unpack(self._recv(NBD_REPLY.size))
        if magic != NBD_REPLY_MAGIC or handle != self.handle:
            raise AoEError(f"NBD reply: expected magic {NBD_REPLY_MAGIC:#x} handle {self.handle}; "
                           f"found {magic:#x} handle {handle}")
        if error:
            raise AoEError(f"NBD server: error {error} for a {'write' if data else 'read'} at offset {offset}")
        return self._recv(length) if command == NBD_CMD_READ else b""

    def read(self, lba: int, count: int) -> bytes:
        """Read ``count`` sectors from sector ``lba``."""
        return self._request(NBD_CMD_READ, lba * SECTOR, count * SECTOR)

    def write(self, lba: int, data: bytes) -> None:
        """Write ``data`` (a whole number of sectors) from sector ``lba``."""
        self._request(NBD_CMD_WRITE, lba * SECTOR, len(data), data)

    def describe(self) -> dict[str, int]:
        """The export's size in bytes (what ``bench`` reports beside its counts)."""
        return {"export_size": self.size}

    def close(self) -> None:
        """Say goodbye (NBD_CMD_DISC) and close the connection."""
        try:
            self.sock.sendall(NBD_REQUEST.pack(NBD_REQUEST_MAGIC, 0, NBD_CMD_DISC, 0, 0, 0))
        except OSError:
            pass
        self.sock.close()

    def __enter__(self) -> "NbdInitiator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class Target:
    """What a query config answer says about one shelf.slot."""

    mac: bytes
    major: int
    minor: int
    buffers: int
    firmware: int
    max_sectors: int
    config: bytes


class Initiator:
    """An AoE initiator for one target (``major``.``minor``) reached through ``iface``."""

    def __init__(self, iface: str, major: int, minor: int, *, timeout: float = 0.2, retries: int = 20) -> None:
        self.iface, self.major, self.minor = iface, major, minor
        self.timeout, self.retries = timeout, retries
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE))
        self.sock.bind((iface, ETHERTYPE))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.mac = self.sock.getsockname()[4]
        self.tag = random.getrandbits(31)
        self.target: Target | None = None
        self.frames = self.retransmits = 0

    def close(self) -> None:
        """Close the raw socket."""
        self.sock.close()

    def __enter__(self) -> "Initiator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next_tag(self) -> int:
        self.tag = (self.tag + 1) & 0x7FFFFFFF
        return self.tag

    def _frame(self, dst: bytes, command: int, tag: int, body: bytes) -> bytes:
        return HEADER.pack(dst, self.mac, ETHERTYPE, 0x10, 0, self.major, self.minor, command, tag) + body

    def _exchange(self, frames: dict[int, bytes], window: int = 1) -> dict[int, bytes]:
        """Send the frames (tag -> bytes), at most ``window`` unanswered at a time (the target's buffer
        count: a target drops what its buffers cannot hold), resend late ones; return tag -> answer."""
        answers: dict[int, bytes] = {}
        pending = list(frames)
        sent: dict[int, float] = {}
        tries: dict[int, int] = {}
        while len(answers) < len(frames):
            while pending and len(sent) < max(window, 1):
                tag = pending.pop(0)
                self.sock.send(frames[tag])
                self.frames += 1
                sent[tag] = time.monotonic()
            oldest = min(sent.values())
            left = oldest + self.timeout - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                for tag, when in list(sent.items()):
                    if time.monotonic() - when >= self.timeout:
                        tries[tag] = tries.get(tag, 0) + 1
                        if tries[tag] > self.retries:
                            raise AoEError(f"AoE target {self.major}.{self.minor} on {self.iface}: no answer after "
                                           f"{self.retries} retransmissions; is vblade serving this shelf.slot "
                                           f"on this link?")
                        self.sock.send(frames[tag])
                        self.retransmits += 1
                        sent[tag] = time.monotonic()
                continue
            packet = self.sock.recv(65536)
            if len(packet) < HEADER.size:
                continue
            _dst, _src, _type, flags, error, major, minor, _cmd, tag = HEADER.unpack_from(packet)
            if not flags & FLAG_RESPONSE or tag not in sent:
                continue
            if (major, minor) != (self.major, self.minor) and self.major != 0xFFFF:
                continue
            if flags & FLAG_ERROR:
                raise AoEError(f"AoE target {major}.{minor} on {self.iface}: error code {error} for tag {tag}")
            answers[tag] = packet
            del sent[tag]
        return answers

    def query(self) -> Target:
        """Broadcast a query config and keep the first answer: the target's MAC and frame size."""
        tag = self._next_tag()
        answer = self._exchange({tag: self._frame(BROADCAST, CMD_QUERY, tag, QUERY_ARGS.pack(0, 0, 0, 0, 0))})[tag]
        src = answer[6:12]
        buffers, firmware, sectors, _ccmd, length = QUERY_ARGS.unpack_from(answer, HEADER.size)
        start = HEADER.size + QUERY_ARGS.size
        self.target = Target(src, self.major, self.minor, buffers, firmware, max(sectors, 1),
                             answer[start:start + length])
        return self.target

    def _ata(self, opcode: int, lba: int, count: int, data: bytes = b"") -> list[tuple[int, bytes]]:
        """Send one frame per chunk of at most max_sectors; (sectors, answer) per frame in LBA order."""
        target = self.target or self.query()
        frames, order = {}, []
        step = target.max_sectors
        for first in range(lba, lba + count, step):
            n = min(step, lba + count - first)
            flags = AFLAG_EXTENDED | (AFLAG_WRITE if opcode == ATA_WRITE_EXT else 0)
            body = ATA_ARGS.pack(flags, 0, n, opcode, first.to_bytes(6, "little"))
            if data:
                off = (first - lba) * SECTOR
                body += data[off:off + n * SECTOR]
            tag = self._next_tag()
            frames[tag] = self._frame(target.mac, CMD_ATA, tag, body)
            order.append((tag, n))
        answers = self._exchange(frames, target.buffers)
        return [(n, answers[tag]) for tag, n in order]

    def read(self, lba: int, count: int) -> bytes:
        """Read ``count`` sectors from sector ``lba``."""
        start = HEADER.size + ATA_ARGS.size
        parts = []
        for n, answer in self._ata(ATA_READ_EXT, lba, count):
            status = answer[HEADER.size + 3]
            if status & 0x01:
                raise AoEError(f"AoE target {self.major}.{self.minor}: ATA error status {status:#x} reading lba {lba}")
            parts.append(answer[start:start + n * SECTOR])
        return b"".join(parts)

    def describe(self) -> dict[str, int]:
        """Frames sent and retransmitted, and the target's sectors per frame (what ``bench`` reports)."""
        target = self.target or self.query()
        return {"frames": self.frames, "retransmits": self.retransmits, "max_sectors": target.max_sectors}

    def write(self, lba: int, data: bytes) -> None:
        """Write ``data`` (a whole number of sectors) from sector ``lba``."""
        if not data or len(data) % SECTOR:
            raise AoEError(f"AoE write of {len(data)} bytes: give a positive multiple of {SECTOR} bytes")
        for _n, answer in self._ata(ATA_WRITE_EXT, lba, len(data) // SECTOR, data):
            status = answer[HEADER.size + 3]
            if status & 0x01:
                raise AoEError(f"AoE target {self.major}.{self.minor}: ATA error status {status:#x} writing lba {lba}")


def bench(ini: Initiator | NbdInitiator, rw: str, bs: int, runtime: float, size: int,
          seed: int = 1) -> dict[str, object]:
    """Issue ``bs``-byte reads or writes (sequential or random within ``size`` bytes) for ``runtime`` s, one at a
    time; the CPU seconds are the process's own during the loop."""
    if rw not in ("read", "write", "randread", "randwrite"):
        raise AoEError(f"--rw {rw!r}: use read, write, randread or randwrite")
    if bs <= 0 or bs % SECTOR or size < bs:
        raise AoEError(f"--bs {bs} --size {size}: bs must be a positive multiple of {SECTOR} and size at least bs")
    ini.describe()  # AoE: the query config, before the clock starts
    rng = random.Random(seed)
    sectors, slots = bs // SECTOR, size // bs
    payload = os.urandom(bs)
    write = rw.endswith("write")
    before = resource.getrusage(resource.RUSAGE_SELF)
    ops, start = 0, time.monotonic()
    while time.monotonic() - start < runtime:
        slot = rng.randrange(slots) if rw.startswith("rand") else ops % slots
        if write:
            ini.write(slot * sectors, payload)
        else:
            ini.read(slot * sectors, sectors)
        ops += 1
    elapsed = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {"rw": rw, "bs": bs, "ops": ops, "bytes": ops * bs, "elapsed": elapsed, **ini.describe(),
            "cpu_user": after.ru_utime - before.ru_utime, "cpu_system": after.ru_stime - before.ru_stime}


def iface_for(peer: str) -> str:
    """The local interface whose IPv4 network contains ``peer`` (from ``ip -o -4 addr show``)."""
    address = ipaddress.ip_address(peer)
    listing = subprocess.run(["ip", "-o", "-4", "addr", "show"], check=True, capture_output=True, text=True).stdout
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[2] == "inet" and address in ipaddress.ip_interface(fields[3]).network:
            return fields[1]
    raise AoEError(f"--peer {peer}: no local interface is on its network; give the target's address on a shared link")


def _proc_seconds(names: set[str]) -> tuple[float, int]:
    """User plus system CPU seconds of every visible process whose command name is in ``names``."""
    ticks, count = 0, 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if comm in names:
            ticks += int(rest[11]) + int(rest[12])
            count += 1
    return ticks / os.sysconf("SC_CLK_TCK"), count


def cost(command: list[str], procs: set[str]) -> int:
    """Run ``command``, pass its output through, then print ``@cost`` with its and the targets' CPU."""
    target_before, _ = _proc_seconds(procs)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.PIPE)
    elapsed = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    target_after, count = _proc_seconds(procs)
    sys.stdout.buffer.write(done.stdout)
    print("\n@cost " + json.dumps({
        "returncode": done.returncode, "elapsed": elapsed,
        "initiator_cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "target_cpu": target_after - target_before if count else None, "target_processes": count}))
    return done.returncode


def main(argv: list[str] | None = None) -> int:
    """Command line: ``query``, ``read``, ``write`` (stdin to sectors) and ``bench``."""
    parser = argparse.ArgumentParser(prog="aoe.py", description=__doc__.split("\n")[0])
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["cost"]:
        split = argv.index("--") if "--" in argv else len(argv)
        names = {n for i, a in enumerate(argv[:split]) if a == "--procs" for n in argv[i + 1].split(",") if n}
        if split + 1 >= len(argv):
            print("aoe.py cost: give the command to measure after --", file=sys.stderr)
            return 2
        return cost(argv[split + 1:], names)
    parser.add_argument("action", choices=("query", "read", "write", "bench"))
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--iface")
    where.add_argument("--peer", help="the target's IPv4 address: use the interface on its network")
    where.add_argument("--nbd", metavar="HOST:PORT", help="bench an NBD server's default export instead (bench only)")
    parser.add_argument("--major", type=int, default=1)
    parser.add_argument("--minor", type=int, default=1)
    parser.add_argument("--lba", type=int, default=0)
    parser.add_argument("--count", type=int, default=1, help="sectors to read")
    parser.add_argument("--rw", default="randread")
    parser.add_argument("--bs", type=int, default=4096)
    parser.add_argument("--size", type=int, default=64 << 20)
    parser.add_argument("--runtime", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        if args.nbd:
            if args.action != "bench":
                parser.error("--nbd: only bench speaks NBD")
            host, _, port = args.nbd.rpartition(":")
            with NbdInitiator(host, int(port)) as nbd:
                print(json.dumps(bench(nbd, args.rw, args.bs, args.runtime, args.size, args.seed)))
            return 0
        with Initiator(args.iface or iface_for(args.peer), args.major, args.minor) as ini:
            if args.action == "query":
                t = ini.query()
                print(json.dumps({"mac": t.mac.hex(":"), "buffers": t.buffers, "firmware": t.firmware,
                                  "max_sectors": t.max_sectors, "config": t.config.decode("latin-1")}))
            elif args.action == "read":
                sys.stdout.buffer.write(ini.read(args.lba, args.count))
            elif args.action == "write":
                ini.write(args.lba, sys.stdin.buffer.read())
            else:
                print(json.dumps(bench(ini, args.rw, args.bs, args.runtime, args.size, args.seed)))
    except (AoEError, OSError) as exc:
        print(f"aoe.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
