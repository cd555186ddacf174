"""stress-ng: load generation (seed 002's noisy neighbour) and its bogo-op metrics.

Role: ``client`` (a campaign may give it to a neighbour host). Parameters:
``stressors`` (mapping name -> instances, e.g. ``{"cpu": 1, "io": 1, "vm": 1}``),
``vm_bytes`` (e.g. "1G"), ``duration`` (s), ``options`` (other stress-ng options as a
mapping). Seed 002's ``stress --cpu 1 --io 1 --vm 1 --vm-bytes 1G`` is
``{"stressors": {"cpu": 1, "io": 1, "vm": 1}, "vm_bytes": "1G"}``.

The command writes ``--yaml /dev/stdout`` (stdout) and ``--metrics-brief`` lines
(stderr). The parser reads the YAML ``metrics`` list and falls back to the metric
lines when there is no YAML. Rows carry the dim ``stressor``.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import yaml

from . import _blocks
from .base import Command, Measurement, Param, ParseError, Rows, Tool

#: YAML key -> (metric, unit).
YAML_METRICS = {
    "bogo-ops": ("bogo_ops", "count"),
    "bogo-ops-per-second-real-time": ("bogo_ops_per_second", "bogo-op/s"),
    "bogo-ops-per-second-usr-sys-time": ("bogo_ops_per_cpu_second", "bogo-op/s"),
    "wall-clock-time": ("wall_time", "s"),
    "user-time": ("user_time", "s"),
    "system-time": ("system_time", "s"),
    "cpu-usage-per-instance": ("cpu_usage_per_instance", "%"),
}
#: Sections of stress-ng's --yaml output, each written once per run.
_YAML_SECTIONS = tuple(re.compile(rf"^{key}:", re.M) for key in ("system-info", "metrics"))
#: An indented YAML entry (``  key: value``, ``- key: value``), as in the metrics list.
_YAML_ENTRY = re.compile(r"^\s+(?:- )?[\w-]+:(?:\s|$)", re.M)
_TEXT = re.compile(r"stress-ng: \w+:\s+\[\d+\]\s+(?P<stressor>[a-z][\w-]*)\s+(?P<ops>\d+)\s+(?P<real>[\d.]+)\s+"
                   r"(?P<usr>[\d.]+)\s+(?P<sys>[\d.]+)\s+(?P<rate>[\d.]+)\s+(?P<cpu_rate>[\d.]+)\s*$", re.MULTILINE)


class StressNg(Tool):
    """Adapter for stress-ng (0.1x) with --metrics-brief and --yaml."""

    name = "stress-ng"
    parser_version = 1
    debian_packages = ("stress-ng",)
    version_command = ("stress-ng", "--version")
    params = (
        Param("stressors", "options", {"cpu": 1}, "", "stressor -> instances (0: one per CPU)",
              programs=frozenset({"exec", "spawn"})),
        Param("duration", "number", 10, "s", "how long the stressors run (--timeout)", positive=True),
        Param("vm_bytes", "size", None, "byte", "bytes each vm stressor allocates (--vm-bytes)"),
        Param("options", "options", None, "", "any other stress-ng option -> value", programs=frozenset({"job"})),
    )

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """One timed stress-ng run with the requested stressors."""
        argv = ["stress-ng"]
        for stressor, instances in (params.get("stressors") or {"cpu": 1}).items():
            argv += [f"--{stressor}", str(instances)]
        if params.get("vm_bytes") is not None:
            argv += ["--vm-bytes", str(params["vm_bytes"])]
        for key, value in (params.get("options") or {}).items():
            argv += [f"--{key}", str(value)]
        argv += ["--timeout", f"{params.get('duration', 10)}s", "--metrics-brief", "--yaml", "/dev/stdout"]
        return [Command("client", tuple(argv))]

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """Bogo-ops, rates over real and CPU time, and times per stressor."""
        if re.search(r"unsuccessful run completed|stress-ng: (?:error|fail):", stdout + stderr):
            line = next(text for text in (stdout + "\n" + stderr).splitlines()
                        if re.search(r"unsuccessful|error:|fail:", text))
            raise ParseError(source, "a successful stress-ng run", line.strip())
        _blocks.once(stdout, *_YAML_SECTIONS, source=source)
        _blocks.once(stdout + "\n" + stderr, "dispatching hogs", "successful run completed", source=source)
        rows = Rows(source)
        metrics = _yaml_metrics(stdout, source)
        if metrics is not None:
            for i, entry in enumerate(metrics):
                stressor = entry.get("stressor") if isinstance(entry, dict) else None
                if not stressor:
                    raise ParseError(source, f"a 'stressor' name in metrics[{i}]", repr(entry)[:60])
                if any(isinstance(e, dict) and e.get("stressor") == stressor for e in metrics[:i]):
                    raise ParseError(source, "one metrics entry per stressor (one run's output)",
                                     f"{stressor!r} again in metrics[{i}]: two runs' outputs concatenated?")
                for key, (metric, unit) in YAML_METRICS.items():
                    if key in entry:
                        rows.add(metric, entry[key], unit, f"metrics[{i}].{key}", stressor=stressor)
            return rows
        lines = list(_TEXT.finditer(stdout + "\n" + stderr))
        if not lines:
            raise ParseError(source, "a YAML 'metrics:' list (--yaml) or --metrics-brief lines",
                             "neither (did stress-ng run with --metrics-brief?)")
        if "successful run completed" not in stdout + stderr:
            raise ParseError(source, "stress-ng's final 'successful run completed' line",
                             "no such line (output cut short?)")
        for match in lines:
            dims: dict[str, Any] = {"stressor": match["stressor"]}
            rows.add("bogo_ops", match["ops"], "count", "bogo ops column", **dims)
            rows.add("wall_time", match["real"], "s", "real time column", **dims)
            rows.add("user_time", match["usr"], "s", "usr time column", **dims)
            rows.add("system_time", match["sys"], "s", "sys time column", **dims)
            rows.add("bogo_ops_per_second", match["rate"], "bogo-op/s", "bogo ops/s (real time)", **dims)
            rows.add("bogo_ops_per_cpu_second", match["cpu_rate"], "bogo-op/s", "bogo ops/s (usr+sys)", **dims)
        return rows


def _yaml_metrics(stdout: str, source: str) -> list[Any] | None:
    """The YAML document's ``metrics`` list, or None when stdout holds no YAML document."""
    start = stdout.find("---")
    if start < 0 or "metrics:" not in stdout:
        return None
    if "\n..." not in stdout[start:]:
        raise ParseError(source, "a YAML document ending in '...'", "no end marker (output cut short?)")
    body, after = stdout[start:].split("\n...", 1)
    if _YAML_ENTRY.search(after):
        raise ParseError(source, "one YAML document (one run's output)", "YAML entries after its end marker "
                         "('...'): two runs' outputs concatenated?")
    try:
        doc = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise ParseError(source, "a complete stress-ng YAML document", str(exc).splitlines()[0]) from None
    metrics = doc.get("metrics") if isinstance(doc, dict) else None
    if not isinstance(metrics, list):
        raise ParseError(source, "a 'metrics' list in the YAML document", repr(metrics)[:60])
    return metrics
