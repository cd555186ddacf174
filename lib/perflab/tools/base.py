"""The contract every benchmark adapter fulfils: build commands, name roles, parse output.

An adapter is a small class with a ``name``, a ``parser_version`` (bumped whenever the
rows it yields for the same input change), the roles it needs, the command lines it
runs for a set of campaign parameters, and a parser from verbatim output to tidy
measurements with explicit units.

Conventions shared by every parser (see ``docs/tools.md``):

- values leave a parser in the normalised units of :data:`UNITS`: rates in bit/s or
  byte/s, sizes in byte, every duration and latency in s;
- a measurement without dims is the sample's summary; per-stream, per-job, per-interval
  or per-CPU rows carry dims (``stream``, ``job``, ``direction``, ``interval_start``,
  ``interval_end``, ``percentile``, ``phase``, ``cpu``, ``iface``, ``device``,
  ``timestamp``) whose names are the same across tools;
- anything a parser cannot turn into a trustworthy number raises :class:`ParseError`.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Mapping

from ..errors import UserError

#: Units a measurement may carry; values are normalised to these before they leave a parser.
UNITS = frozenset({
    "bit/s", "byte/s", "byte", "bit", "IOPS", "s", "ns", "us", "ms", "%", "count",
    "op/s", "Mop/s", "GFLOP/s", "event/s", "bogo-op/s", "packet", "packet/s", "ratio", "1",
    "s/op", "byte/op",
})

#: Durations quoted in text outputs, as factors to seconds.
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3,
              "s": 1.0, "sec": 1.0, "secs": 1.0, "seconds": 1.0}

_PREFIX = {"": 0, "k": 1, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_UNIT_RE = re.compile(
    r"^(?P<prefix>[kKMGTPE]?)(?P<iec>i?)(?P<base>bits?|Bytes?|bytes?|B)(?P<rate>/s(?:ec)?|ps)?$")


class ParseError(UserError, ValueError):
    """Raised when output cannot be turned into trustworthy measurements.

    The message names the source file, what was expected and what was found, so a
    user can open the file and see the problem.
    """

    def __init__(self, source: str, expected: str, found: str) -> None:
        self.source, self.expected, self.found = source, expected, found
        super().__init__(f"{source or '<output>'}: expected {expected}; found {found}")


@dataclass(slots=True)
class Measurement:
    """One tidy value: a metric, its value in a normalised unit, and extra dimensions.

    ``dims`` holds whatever identifies the value inside one sample (stream, job,
    direction, interval start, percentile, ...); keys become columns of the tidy table.
    Parsers make one per tidy row and nothing changes one afterwards: a plain class with slots is
    made in 0.4 us, a frozen dataclass in 1.1 us (a second of a million-row tidy).
    """

    metric: str
    value: float | None
    unit: str
    dims: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.unit not in UNITS:  # a parser's own unit names: another is a bug in the tool adapter
            raise ValueError(f"metric {self.metric!r}: unit {self.unit!r} is not one of {sorted(UNITS)}")

    def as_row(self) -> dict[str, Any]:
        """Return the measurement as a flat dict (metric, value, unit, then the dims)."""
        return {"metric": self.metric, "value": self.value, "unit": self.unit, **dict(self.dims)}


@dataclass(frozen=True)
class Command:
    """A command line to run on the host that plays ``role``."""

    role: str
    argv: tuple[str, ...]
    #: True for a long-running service (started before the samples, stopped after).
    service: bool = False

    def line(self) -> str:
        """The command as one shell-quoted string."""
        return shlex.join(self.argv)


#: Kinds of parameter value an adapter declares, with what a campaign may give for each.
PARAM_TYPES = {
    "int": "a whole number",
    "number": "a number",
    "size": "a size: a number of bytes, or a number with a unit suffix such as 4k, 64M, 1G",
    "bool": "true or false",
    "word": "a word: letters, digits and . _ - + : , @ %",
    "path": "a path relative to the project root, inside it",
    "write-path": "a file or device the tool writes: relative, or under one of the campaign's scratch locations",
    "options": "a mapping of option name -> value, each a word or a number",
    "program": "a command line the tool runs as a program",
}

#: The range a numeric parameter (``int``, ``number``, ``size``) takes when it declares none, by its unit: up to a
#: day of seconds, a PiB of bytes (or bits per second), 100 % and 10^9 of a count. Far beyond any run, they keep
#: a value from overflowing what the runner computes from it (a sample's timeout, the plan's estimate).
RANGES = {"s": (0, 86400), "byte": (0, 2**50), "bit/s": (0, 2**50), "%": (0, 100), "": (0, 10**9)}


@dataclass(frozen=True)
class Param:
    """One parameter an adapter reads from a campaign: its contract, checked when a campaign is loaded.

    ``programs`` names what makes the parameter run a program: for a ``program`` parameter any
    value (``"*"``); for a word, the values that do (fio's ``ioengine=exec``); for ``options``, the
    option names (``exec_prerun``) or ``name=value`` pairs that do. A campaign must list such a
    parameter under ``programs`` to use it that way. ``bounds`` (lowest, highest) is the range of a
    numeric parameter's values; without it the parameter takes its unit's (:data:`RANGES`). A
    ``positive`` parameter (a time, a count, a size) refuses 0 and negative numbers first, in words of
    their own ("must be > 0"); with ``allow_zero`` it takes 0 too (0 meaning none: no warm-up time, no
    periodic reports).
    """

    name: str
    type: str
    default: Any
    unit: str
    doc: str
    programs: frozenset[str] = frozenset()
    choices: tuple[Any, ...] = ()
    bounds: tuple[float, float] | None = None
    positive: bool = False
    allow_zero: bool = False

    def __post_init__(self) -> None:
        # parameters are declared in the tool adapters' code, not by users: a bad declaration is a bug there
        if self.type not in PARAM_TYPES:
            raise ValueError(f"parameter {self.name}: type {self.type!r} is not one of {sorted(PARAM_TYPES)}")
        if (self.positive or self.allow_zero) and (self.type not in ("int", "number", "size") or not self.positive):
            raise ValueError(f"parameter {self.name}: positive is for numbers, allow_zero for positive ones")
        if self.type in ("int", "number", "size") and self.bounds is None and self.unit not in RANGES:
            # a bug in the declaration too, like the two above
            raise ValueError(f"parameter {self.name}: unit {self.unit!r} has no default range; declare bounds")

    @property
    def range(self) -> tuple[float, float] | None:
        """(lowest, highest) value of a numeric parameter (declared, else its unit's); None for other types."""
        if self.type not in ("int", "number", "size"):
            return None
        return self.bounds or RANGES[self.unit]

    def not_positive(self, value: Any) -> str | None:
        """Why a number given for a ``positive`` parameter is refused ("count must be > 0; found 0"); None when it
        is not refused on that ground (text and other values are checked against the type and range)."""
        if not self.positive or isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if isinstance(value, float) and not math.isfinite(value):  # refused as not finite, in words of its own
            return None
        if value > 0 or (value == 0 and self.allow_zero):
            return None
        return f"{self.name} must be {'>= 0' if self.allow_zero else '> 0'}; found {value!r}"

    def span(self) -> str:
        """The range as a reader writes it ("1 to 65535", "0 to 2^50 byte"); empty for a parameter without one."""
        if self.range is None:
            return ""

        def one(x: float) -> str:
            if isinstance(x, int) and x >= 2**20:
                return f"2^{x.bit_length() - 1}" if x & (x - 1) == 0 else f"10^{len(str(x)) - 1}" \
                    if str(x).strip("0") == "1" else str(x)
            return f"{x:g}"

        low, high = self.range
        return f"{one(low)} to {one(high)}" + (f" {self.unit}" if self.unit else "")


class Tool:
    """Base class of the benchmark adapters (see ``perflab.tools.iperf3`` for an example)."""

    name: ClassVar[str]
    parser_version: ClassVar[int] = 1
    #: The summary metric a user reports first (pilots, progress lines); None: the first one parsed.
    primary_metric: ClassVar[str | None] = None
    #: Metrics whose values add up over hosts that run the tool at the same time (rates, bytes, counts;
    #: never latencies, ratios or percentages): the tidy table sums them into rows of host ``all``.
    additive: ClassVar[frozenset[str]] = frozenset()
    #: Roles a campaign must assign to hosts for this tool, client-side role first.
    roles: ClassVar[tuple[str, ...]] = ("client",)
    #: Debian packages that provide the tool; ``scripts/debian-packages.py`` reads these
    #: literal tuples from the source (no import), so keep them plain string tuples.
    debian_packages: ClassVar[tuple[str, ...]] = ()
    #: Command that prints the tool's version on its first line, probed by the host
    #: fingerprint of a campaign that uses the tool (output schemas drift between versions).
    #: Empty: no version to probe (parse-only tools, /proc readers).
    version_command: ClassVar[tuple[str, ...]] = ()
    #: The metric counting a sample's operations (I/Os, packets), for the tidy table's costs
    #: per operation (``cpu_seconds_per_op``, ``bytes_per_op``); None: the tool counts none.
    operations_metric: ClassVar[str | None] = None
    #: Every parameter the adapter reads (its contract); a campaign may set no other.
    params: ClassVar[tuple[Param, ...]] = ()

    def param(self, name: str) -> Param | None:
        """The declaration of parameter ``name`` (None: the adapter reads no such parameter)."""
        return next((p for p in self.params if p.name == name), None)

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """Commands for one sample with ``params``; ``addresses`` maps roles to host addresses."""
        raise NotImplementedError

    def operations(self, measurements: list[Measurement]) -> float | None:
        """A sample's operation count: its summary rows of :attr:`operations_metric` added up (None: none)."""
        values = [m.value for m in measurements if m.metric == self.operations_metric and m.value is not None
                  and (not m.dims or m.dims.get("summary"))]
        return sum(values) if values else None

    def parse(self, stdout: str, stderr: str = "", *, source: str = "") -> list[Measurement]:
        """Tidy measurements from one sample's verbatim output, or raise :class:`ParseError`."""
        raise NotImplementedError

    def expected_duration(self, params: Mapping[str, Any]) -> float:
        """Seconds one sample is expected to take, for plans and remote-side timeouts."""
        return float(params.get("duration", 10))

    def ready(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> str | None:
        """A shell test that succeeds on the service host once its service accepts work (or None)."""
        return None


class ParseOnly(Tool):
    """Base of adapters for tools that perflab parses but cannot run (fixtures only)."""

    def commands(self, params: Mapping[str, Any], addresses: Mapping[str, str]) -> list[Command]:
        """Refuse: this tool is parsed from logs produced elsewhere."""
        raise NotImplementedError(
            f"{self.name}: perflab only parses this tool's output; run it outside perflab and "
            f"use `perflab parse {self.name} FILE`")


class Rows(list):
    """A list of :class:`Measurement` that converts and checks values as they are added."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source
        self._keys: set[tuple] = set()

    def append(self, row: Measurement) -> None:
        """Add ``row``; a second row with the same metric and dims raises :class:`ParseError`.

        Two values for one measurement mean the output repeats a block (a spliced or
        concatenated log), so no row of it can be trusted.
        """
        try:  # dims compare by value (1 and 1.0 are one tidy value); hashing them is cheap, repr is not
            key = (row.metric, frozenset(row.dims.items()))
        except TypeError:  # an unhashable dim value (a list): compare by its text
            key = (row.metric, frozenset((k, repr(v)) for k, v in row.dims.items()))
        if key in self._keys:
            dims = ", ".join(f"{k}={v}" for k, v in row.dims.items())
            raise ParseError(self.source, "each measurement once (one run per output)",
                             f"{row.metric}{f' ({dims})' if dims else ''} twice (a repeated or concatenated block?)")
        self._keys.add(key)
        super().append(row)

    def add(self, metric: str, value: Any, unit: str, what: str, *, scale: float = 1.0, **dims: Any) -> None:
        """Append ``value`` x ``scale`` under ``metric``; ``what`` names the field for errors.

        The value is coerced with :func:`number`, so ``None`` and NaN stay missing.
        """
        kind = type(value)  # plain numbers inline: a tidy run adds millions of rows
        if kind is float or kind is int:
            parsed = None if value != value else float(value)
        else:
            parsed = number(value, source=self.source, what=what)
        self.append(Measurement(metric, None if parsed is None else parsed * scale, unit, dims))


_NAN_RE = re.compile(r"(?<![\w\"])(-?nan|-?inf(?:inity)?)(?![\w\"])", re.IGNORECASE)
#: Python's decoder accepts NaN, Infinity and -Infinity; like bare nan they mean "missing".
_DECODER = json.JSONDecoder(parse_constant=lambda _: None)


def extract_json(text: str, *, source: str = "") -> Any:
    """Parse the first complete JSON object in ``text``, skipping junk before and after it.

    fio and iperf3 print warnings around their JSON and older versions write bare
    ``nan``; those become ``None``. Raises :class:`ParseError` when no object parses.
    The text is decoded as is first; only when that fails are bare ``nan``/``inf``
    replaced (a regex over every output would cost more than the decoding).
    """
    start = text.find("{")
    if start < 0:
        found = repr(text[:80]) if text.strip() else "empty output"
        raise ParseError(source, "a JSON object", found)
    try:
        return _DECODER.raw_decode(text, start)[0]
    except json.JSONDecodeError:
        pass
    cleaned = _NAN_RE.sub("null", text[start:])
    try:
        obj, _ = _DECODER.raw_decode(cleaned)
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(cleaned.rstrip()) or cleaned.count("{") > cleaned.count("}")
        found = ("output that ends before the JSON object is closed (truncated?)" if truncated
                 else f"{exc.msg} at line {exc.lineno}, column {exc.colno} of the JSON")
        raise ParseError(source, "a complete JSON object", found) from None
    return obj


def number(value: Any, *, source: str, what: str) -> float | None:
    """Coerce a parsed field to float; ``None``/NaN become ``None``, anything else raises.

    Strings may use a decimal comma ("5,4", as dd prints in some locales).
    """
    if value is None:
        return None
    if type(value) is float:  # the common cases first: a tidy run converts millions of values
        return None if value != value else value
    if type(value) is int:
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ParseError(source, f"a number for {what}", repr(value))
    try:
        out = float(str(value).replace(",", ".")) if isinstance(value, str) else float(value)
    except ValueError:
        raise ParseError(source, f"a number for {what}", repr(value)) from None
    return None if math.isnan(out) else out


def require(mapping: Any, key: str, *, source: str, where: str) -> Any:
    """Return ``mapping[key]`` or raise :class:`ParseError` naming ``where`` the key was expected."""
    if not isinstance(mapping, Mapping):
        raise ParseError(source, f"an object at {where}", type(mapping).__name__)
    if key not in mapping:
        raise ParseError(source, f"key {key!r} in {where} (a schema change between tool versions?)",
                         f"keys {sorted(mapping)[:12]}")
    return mapping[key]


def unit_factor(unit: str, *, binary_bytes: bool = False, source: str = "", what: str = "unit") -> tuple[float, str]:
    """Factor and normalised unit for a textual size or rate unit such as "Gbits/sec" or "MiB/s".

    Bits always use decimal prefixes. Byte units with an explicit "i" (KiB, MiB/s) are
    binary; other byte prefixes are decimal unless ``binary_bytes`` (iperf's "MBytes" and
    rados bench's "MB/sec" mean 2**20). Returns e.g. ``(1e9, "bit/s")``.
    """
    match = _UNIT_RE.match(unit.strip())
    if not match:
        raise ParseError(source, f"a size or rate unit for {what} (e.g. Mbits/sec, MB/s, KiB)", repr(unit))
    power = _PREFIX[match["prefix"]]
    is_bits = match["base"].lower().startswith("bit")
    binary = not is_bits and (bool(match["iec"]) or binary_bytes)
    factor = float((1024 if binary else 1000) ** power)
    base = "bit" if is_bits else "byte"
    return factor, f"{base}/s" if match["rate"] else base


def quantity(value: str, unit: str, *, binary_bytes: bool = False, source: str = "",
             what: str = "value") -> tuple[float, str]:
    """A textual number with a size or rate unit, as ``(value in bytes/bits, unit)``."""
    factor, normalised = unit_factor(unit, binary_bytes=binary_bytes, source=source, what=what)
    parsed = number(value, source=source, what=what)
    if parsed is None:
        raise ParseError(source, f"a number for {what}", repr(value))
    return parsed * factor, normalised


def seconds(value: Any, unit: str, *, source: str = "", what: str = "duration") -> float | None:
    """A duration quoted with ``unit`` (ns, us, ms, s, sec, ...) in seconds."""
    if unit not in TIME_UNITS:
        raise ParseError(source, f"a time unit for {what} (one of {sorted(TIME_UNITS)})", repr(unit))
    parsed = number(value, source=source, what=what)
    return None if parsed is None else parsed * TIME_UNITS[unit]


def search(pattern: re.Pattern[str], text: str, *, source: str, expected: str) -> re.Match[str]:
    """The first match of ``pattern`` in ``text``, or :class:`ParseError` saying what was ``expected``."""
    match = pattern.search(text)
    if match is None:
        tail = text.strip().splitlines()[-1][:80] if text.strip() else ""
        raise ParseError(source, expected, f"no such line (last line: {tail!r})" if tail else "empty output")
    return match


def key_values(text: str, separator: str = ":") -> dict[str, str]:
    """Lines ``key<separator> value`` as a dict of stripped strings (the last one wins)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(separator)
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def mean_in_flight(iops: Any, mean_latency_s: Any) -> Any:
    """Little's law: the mean number of operations in flight is the rate (IOPS) times the mean latency (s).

    Numbers or pandas columns alike (element by element); the one place the law is written."""
    return iops * mean_latency_s


def littles_law_ratio(iops: float | None, mean_latency_s: float | None, outstanding: float) -> float | None:
    """Observed over expected concurrency: ``IOPS x mean latency / (jobs x queue depth)`` (:func:`mean_in_flight`).

    By Little's law a closed-loop storage benchmark that keeps ``outstanding`` I/Os in
    flight has a ratio close to 1; a ratio far from 1 means the IOPS, the latency or the
    assumed queue depth is wrong (or the engine could not keep the queue full).
    """
    if iops is None or mean_latency_s is None or outstanding <= 0:
        return None
    return mean_in_flight(iops, mean_latency_s) / outstanding


def littles_law_flags(measurements: Iterable[Measurement], tolerance: float = 0.25) -> list[Measurement]:
    """The ``littles_law_ratio`` rows whose ratio is farther than ``tolerance`` from 1."""
    return [row for row in measurements
            if row.metric == "littles_law_ratio" and row.value is not None
            and abs(row.value - 1.0) > tolerance]
