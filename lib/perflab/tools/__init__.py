"""Benchmark adapters, one module per tool, looked up by name with :func:`get`."""

from __future__ import annotations

import importlib

from .base import Command, Measurement, ParseError, Tool

#: Tool name -> "module:Class" of its adapter. Add a tool by adding a module and a line here.
REGISTRY: dict[str, str] = {
    "iperf3": "perflab.tools.iperf3:Iperf3",
    "iperf2": "perflab.tools.iperf2:Iperf2",
    "fio": "perflab.tools.fio:Fio",
    "fio_iozone": "perflab.tools.fio:FioIozone",
    "hpcc": "perflab.tools.hpcc:Hpcc",
    "sysbench": "perflab.tools.sysbench:Sysbench",
    "stress-ng": "perflab.tools.stressng:StressNg",
    "ping": "perflab.tools.ping:Ping",
    "dd": "perflab.tools.dd:Dd",
    "mpstat": "perflab.tools.sysstat:Mpstat",
    "sadf": "perflab.tools.sysstat:Sadf",
    "loadavg": "perflab.tools.procfs:LoadAvg",
    "procstat": "perflab.tools.procfs:ProcStat",
    "cgroup": "perflab.tools.cgroupfs:CgroupCpu",
    "npb": "perflab.tools.npb:Npb",
    "filebench": "perflab.tools.filebench:Filebench",
    "rados_bench": "perflab.tools.ceph:RadosBench",
    "rbd_bench": "perflab.tools.ceph:RbdBench",
    "ceph_osd_bench": "perflab.tools.ceph:CephOsdBench",
    "blockproto": "perflab.tools.blockproto:BlockProto",
    "nfsbench": "perflab.tools.nfsbench:NfsBench",
}

#: Other names users type for the same tools.
ALIASES: dict[str, str] = {"iperf": "iperf2", "stressng": "stress-ng", "stress": "stress-ng", "iozone": "fio_iozone"}


def get(name: str) -> Tool:
    """Return an adapter instance for the tool called ``name`` (or one of its :data:`ALIASES`)."""
    try:
        target = REGISTRY[ALIASES.get(name, name)]
    except KeyError:
        raise KeyError(f"unknown tool {name!r}; known tools: {', '.join(sorted(REGISTRY))}") from None
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)()


__all__ = ["Command", "Measurement", "ParseError", "Tool", "REGISTRY", "ALIASES", "get"]
