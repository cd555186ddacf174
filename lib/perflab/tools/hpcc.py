"""HPC Challenge (Debian's ``hpcc``): HPL (LINPACK) and STREAM, plus DGEMM, PTRANS,
RandomAccess and FFT, parsed from ``hpccoutf.txt``.

Role: ``client``. hpcc reads ``hpccinf.txt`` and writes ``hpccoutf.txt`` in its working
directory, so the command is a short shell script: make a temporary directory, write
the input file from the parameters, run hpcc, print ``hpccoutf.txt`` on stdout, remove
the directory. Parameters: ``n`` (HPL problem size, seed 003 used 6000), ``nb``
(block size, default 80), ``p`` and ``q`` (process grid, default 1 x 1), ``np``
(MPI processes, default p x q; more than one runs ``mpirun --allow-run-as-root``).
hpcc sizes its STREAM arrays from the memory HPL's matrix uses.

The parser reads the ``Begin of Summary section`` key=value block, refuses a run whose
``Success`` is not 1, and skips values hpcc reports as -1 (tests that did not run).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from . import _blocks
from .base import Command, Measurement, Param, ParseError, Rows, Tool, search

#: Summary key -> (metric, unit, scale, dims). STREAM rates are 1e9 byte/s (hpcc's "GB/s").
SUMMARY_KEYS: dict[str, tuple[str, str, float, dict[str, Any]]] = {
    "HPL_Tflops": ("hpl_rate", "GFLOP/s", 1e3, {}),
    "HPL_time": ("hpl_time", "s", 1.0, {}),
    "HPL_N": ("hpl_n", "count", 1.0, {}),
    "HPL_NB": ("hpl_nb", "count", 1.0, {}),
    "StarDGEMM_Gflops": ("dgemm_rate", "GFLOP/s", 1.0, {"scope": "star"}),
    "SingleDGEMM_Gflops": ("dgemm_rate", "GFLOP/s", 1.0, {"scope": "single"}),
    "PTRANS_GBs": ("ptrans_bandwidth", "byte/s", 1e9, {}),
    "StarRandomAccess_GUPs": ("random_access_rate", "op/s", 1e9, {"scope": "star"}),
    "SingleRandomAccess_GUPs": ("random_access_rate", "op/s", 1e9, {"scope": "single"}),
    "MPIRandomAccess_GUPs": ("random_access_rate", "op/s", 1e9, {"scope": "mpi"}),
    "StarFFT_Gflops": ("fft_rate", "GFLOP/s", 1.0, {"scope": "star"}),
    "SingleFFT_Gflops": ("fft_rate", "GFLOP/s", 1.0, {"scope": "single"}),
    "MPIFFT_Gflops": ("fft_rate", "GFLOP/s", 1.0, {"scope": "mpi"}),
    "STREAM_VectorSize": ("stream_array_size", "count", 1.0, {}),
    "STREAM_Threads": ("stream_threads", "count", 1.0, {}),
    "CommWorldProcs": ("processes", "count", 1.0, {}),
    "AvgPingPongLatency_usec": ("pingpong_latency", "s", 1e-6, {}),
    "AvgPingPongBandwidth_GBytes": ("pingpong_bandwidth", "byte/s", 1e9, {}),
}
for _scope in ("Star", "Single"):
    for _kernel in ("Copy", "Scale", "Add", "Triad"):
        SUMMARY_KEYS[f"{_scope}STREAM_{_kernel}"] = (
            "stream_bandwidth", "byte/s", 1e9, {"kernel": _kernel.lower(), "scope": _scope.lower()})

_FAILED = re.compile(r"(\d+) tests completed and failed residual checks")
_SUMMARY = re.compile(r"Begin of Summary section\.\n(?P<body>.*?)\nEnd of Summary section\.", re.DOTALL)

#: hpccinf.txt template (the HPL.dat layout plus hpcc's PTRANS lines), after Debian's example.
INPUT_TEMPLATE = """HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
{n}         Ns
1            # of NBs
{nb}           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
{p}            Ps
{q}            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
"""


def input_file(params: Mapping[str, Any]) -> str:
    """The ``hpccinf.txt`` text for ``params`` (n, nb, p, q)."""
    values = {key: int(params.get(key, default)) for key, default in (("n", 1000), ("nb", 80), ("p", 1), ("q", 1))}
    return INPUT_TEMPLATE.format(**values)


class Hpcc(Tool):
    """Adapter for hpcc 1.5 (HPL 2.0 inside) via its summary section."""

    name = "hpcc"
    parser_version = 1
    primary_metric = "hpl_rate"
    roles = ("client",)
    debian_packages = ("hpcc", "openmpi-bin")
    version_command = ("sh", "-c", "command -v hpcc >/dev/null && dpkg-query -W -f '${Version}\\n' hpcc")
    params = (
        Param("n", "int", 1000, "", "HPL's problem size N (the matrix is N x N)", positive=True),
        Param("nb", "int", 80, "", "HPL's block size NB", positive=True),
        Param("p", "int", 1, "", "rows of the process grid", positive=True),
        Param("q", "int", 1, "", "columns of the process grid", positive=True),
        Param("np", "int", None, "", "MPI processes (default p x q; 1 runs hpcc without mpirun)", positive=True),
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """A shell script that runs hpcc in a temporary directory and prints hpccoutf.txt."""
        np = int(params.get("np", int(params.get("p", 1)) * int(params.get("q", 1))))
        run = "hpcc" if np == 1 else f"mpirun --allow-run-as-root -np {np} hpcc"
        script = ('d=$(mktemp -d) && cd "$d" && cat > hpccinf.txt <<\'EOF\'\n' + input_file(params) + "EOF\n"
                  f'{run} >/dev/null; rc=$?; cat hpccoutf.txt; cd / && rm -rf "$d"; exit $rc')
        return [Command("client", ("sh", "-c", script))]

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """HPL's 2/3 N^3 flops at 1 GFLOP/s, plus 0.45 s for the other tests at small N (0.47-0.51 s in all at
        N = 300 on a lab host of a 2-core machine, 2026-11-27)."""
        n = float(params.get("n", 1000))
        return 0.45 + (2.0 / 3.0) * n ** 3 / 1e9

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """HPL rate and time, STREAM Copy/Scale/Add/Triad (star and single), and the rest."""
        _blocks.once(stdout, "This is the DARPA/DOE HPC Challenge Benchmark", "Begin of Summary section.",
                     source=source)
        match = search(_SUMMARY, stdout, source=source,
                       expected="hpcc's 'Begin of Summary section.' ... 'End of Summary section.' block "
                                "(is this hpccoutf.txt, and did hpcc finish?)")
        summary = dict(line.split("=", 1) for line in match["body"].splitlines() if "=" in line)
        if summary.get("Success") != "1":
            raise ParseError(source, "Success=1 in the summary section", f"Success={summary.get('Success')!r}")
        missing = [key for key in ("HPL_Tflops", "SingleSTREAM_Triad") if key not in summary]
        if missing:
            raise ParseError(source, f"summary keys {missing} (hpcc 1.4/1.5 layout)", f"keys {sorted(summary)[:10]}...")
        failed = [int(n) for n in _FAILED.findall(stdout)]
        if any(failed):
            raise ParseError(source, "0 tests failing HPL/PTRANS residual checks", f"{sum(failed)} failed")
        rows = Rows(source)
        for key, (metric, unit, scale, dims) in SUMMARY_KEYS.items():
            if key in summary and summary[key].strip() != "-1":
                rows.add(metric, summary[key], unit, f"summary {key}", scale=scale, **dims)
        return rows
