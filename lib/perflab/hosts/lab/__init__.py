"""The embedded lab: hosts on this machine as namespaces with their own sshd, cgroup and disks.

A lab is described by a :class:`~perflab.labspec.LabSpec` (a YAML file, or the flat lab of
``perflab lab up --hosts N``). ``up`` makes one bridge per link, one network namespace per
host with an interface per link (its MTU, rate and offloads: wire-like when they are off) (its own hostname and mount namespace too), routes through
the router hosts with their nftables rules, a cgroup per host with its cpuset and memory
limit, loop devices over sparse files (formatted and mounted inside the host) and an sshd
per host with keys made for the lab; a virtual host is instead a QEMU guest on taps of its
links, booted from the machine's kernel and root file system. It writes a ``known_hosts``
(strict checking stays on) and an inventory. Every resource is named in the lab's state
file first, so ``down`` removes exactly what ``up`` created. Links use /24s of
198.18.0.0/15, the block RFC 2544 reserves for benchmarking, picked from the lab and link
names, never one that another lab or an interface of the machine already uses.
``docs/lab.md`` describes it all.
"""

from .cgroups import CGROUP_PARENT, HostUsage, cgroup_hierarchies, usage
from .lifecycle import DEBIAN_PACKAGES, bring_up, down, draw, require_root, status, traces, up
from .model import STATE_ROOT, Lab, LabError, LabHost, LabLink, Port
from .net import router_counters
from .resolve import resolve_inventory
from .sshd import SSHD
from .state import SLOTS, STATE_VERSION, load, names
from .vm import QEMU, VM_BOOT_TIMEOUT, vm_accel

__all__ = ["CGROUP_PARENT", "DEBIAN_PACKAGES", "QEMU", "SLOTS", "SSHD", "STATE_ROOT", "STATE_VERSION",
           "VM_BOOT_TIMEOUT", "HostUsage", "Lab", "LabError", "LabHost", "LabLink", "Port", "bring_up",
           "cgroup_hierarchies", "down", "draw", "load", "names", "require_root", "resolve_inventory", "router_counters",
           "status", "traces", "up", "usage", "vm_accel"]
