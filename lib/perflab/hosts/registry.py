"""The process registry of a campaign on a host: a cgroup of the campaign that nothing started escapes.

Every process a run starts on a host lives in a cgroup of the campaign directory's
registry, ``perflab-<owner>/<host>/`` under the cgroup the host's SSH session runs in: one
child cgroup per command (``c-<tag>``) and per background process (``s-<name>``). A process
cannot leave its cgroup by changing its environment (``env -i``), its session (``setsid``)
or its parent, so killing a command's or a service's cgroup stops everything it started,
and killing ``perflab-<owner>/<host>`` (a resume, the end of a run, Ctrl-C) stops all of the
campaign's processes on that host. Killing uses ``cgroup.kill`` (Linux 5.14) or, on older
kernels, freezes the cgroup, kills every member and thaws it.

The cgroup2 hierarchy is the host's ``/sys/fs/cgroup`` (or ``/sys/fs/cgroup/unified`` on a
hybrid cgroup v1 host). A lab host, whose ``/sys`` is its own, mounts the hierarchy in its
own mount namespace under its work directory. A host where neither works (no cgroup2, no
right to create a cgroup) keeps only the environment registry (``PERFLAB_OWNER``), and the
preflight says so. This module only writes the shell lines; :mod:`perflab.hosts.remote` runs them.
"""

from __future__ import annotations

import shlex

#: Exit status of :func:`probe` when the host has no usable cgroup2 hierarchy.
NO_CGROUP = 3


def probe(owner: str, host: str, workdir: str) -> str:
    """Shell lines that create the campaign's cgroup for ``host`` and print its directory (exit NO_CGROUP if none).

    On a host in its own mount namespace (a lab host) without a visible cgroup2 hierarchy,
    the hierarchy is mounted under ``workdir``; on other hosts nothing is mounted.
    """
    mnt = shlex.quote(f"{workdir}/cgroup2")
    leaf = shlex.quote(f"perflab-{owner}/{host}")
    return (f"R=; for d in /sys/fs/cgroup /sys/fs/cgroup/unified {mnt}; do "
            f"[ -e \"$d/cgroup.controllers\" ] && R=$d && break; done; "
            f"if [ -z \"$R\" ] && [ \"$(readlink /proc/self/ns/mnt)\" != \"$(readlink /proc/1/ns/mnt)\" ]; then "
            f"mkdir -p {mnt} && mount -t cgroup2 perflab {mnt} 2>/dev/null && R={mnt}; fi; "
            f"[ -n \"$R\" ] || {{ echo 'no cgroup2 hierarchy is mounted' >&2; exit {NO_CGROUP}; }}; "
            f"P=$(sed -n 's/^0:://p' /proc/self/cgroup); D=\"$R${{P%/}}/\"{leaf}; "
            f"mkdir -p \"$D\" 2>/dev/null && [ -w \"$D/cgroup.procs\" ] || "
            f"{{ echo \"cannot create the cgroup $D\" >&2; exit {NO_CGROUP}; }}; echo \"$D\"")


def child(base: str, name: str) -> str:
    """The directory of the child cgroup ``name`` of the campaign's cgroup ``base`` on a host."""
    return f"{base}/{name}"


def make(directory: str) -> str:
    """Shell lines that create the cgroup ``directory``."""
    return f"mkdir -p {shlex.quote(directory)}"


def join(directory: str) -> str:
    """A shell command that moves the running shell (``$$``) into the cgroup ``directory``."""
    return f"echo $$ > {shlex.quote(directory + '/cgroup.procs')}"


def kill(directory: str, *, report: bool = False) -> str:
    """Shell lines that kill every process of the cgroup ``directory`` and its descendants, then remove them.

    They wait (up to 2 s) until the cgroups are empty. With ``report`` they first print
    ``<pid> <command line>`` per process. Nothing happens when ``directory`` does not exist.
    """
    return _kill(shlex.quote(directory), report=report)


def _kill(expr: str, *, report: bool) -> str:
    """:func:`kill` of the directory the shell expression ``expr`` names."""
    listing = ("for f in $(find \"$d\" -name cgroup.procs); do for p in $(cat \"$f\"); do "
               "echo \"$p $(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null)\"; done; done; ") if report else ""
    return (f"d={expr}; if [ -d \"$d\" ]; then {listing}"
            "if [ -e \"$d/cgroup.kill\" ]; then echo 1 > \"$d/cgroup.kill\"; else echo 1 > \"$d/cgroup.freeze\"; "
            "for f in $(find \"$d\" -name cgroup.procs); do for p in $(cat \"$f\"); do kill -KILL \"$p\"; done; done; "
            "echo 0 > \"$d/cgroup.freeze\"; fi 2>/dev/null; i=0; "
            "while [ $i -lt 400 ] && [ -n \"$(cat $(find \"$d\" -name cgroup.procs) 2>/dev/null)\" ]; do "
            "sleep 0.005; i=$((i+1)); done; find \"$d\" -depth -type d -exec rmdir {} + 2>/dev/null; fi; true")


def kill_all(owner: str, host: str) -> str:
    """Shell lines that kill (and print) every process of ``host``'s part of the campaign's registry, wherever
    its cgroup is (an earlier run's SSH session may have had another cgroup), and remove those cgroups."""
    name = shlex.quote(f"perflab-{owner}")
    return (f"for r in /sys/fs/cgroup /sys/fs/cgroup/unified $(awk '$3 == \"cgroup2\" {{print $2}}' /proc/mounts); do "
            f"[ -e \"$r/cgroup.controllers\" ] || continue; "
            f"for c in $(find \"$r\" -maxdepth 8 -type d -name {name} 2>/dev/null); do "
            f"{_kill(chr(34) + '$c' + chr(34) + '/' + shlex.quote(host), report=True)}; "
            f"rmdir \"$c\" 2>/dev/null; done; done; true")
