"""The shared contract: units, JSON extraction, measurements, windows, Little's law, registry, packages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perflab import tools
from perflab.tools.base import (Measurement, ParseError, ParseOnly, Rows, extract_json,
                                littles_law_flags, littles_law_ratio, number, quantity, require, seconds,
                                unit_factor)


@pytest.mark.parametrize(("unit", "binary", "expected"), [
    ("Gbits/sec", False, (1e9, "bit/s")),
    ("bits/sec", False, (1.0, "bit/s")),
    ("GBytes", True, (2.0**30, "byte")),
    ("KByte", True, (1024.0, "byte")),
    ("MB/s", False, (1e6, "byte/s")),
    ("MB/sec", True, (2.0**20, "byte/s")),
    ("MiB/s", False, (2.0**20, "byte/s")),
    ("kB/s", False, (1e3, "byte/s")),
])
def test_unit_factor_distinguishes_decimal_and_binary_prefixes(unit, binary, expected):
    assert unit_factor(unit, binary_bytes=binary) == expected


def test_unknown_unit_is_a_parse_error_naming_the_file():
    with pytest.raises(ParseError, match=r"run\.txt: expected a size or rate unit.*'furlongs'"):
        unit_factor("furlongs", source="run.txt")


def test_quantity_reads_a_decimal_comma():
    assert quantity("1,3", "GB/s") == (1.3e9, "byte/s")


def test_seconds_converts_and_rejects_unknown_units():
    assert seconds("163", "us") == pytest.approx(163e-6)
    with pytest.raises(ParseError, match="time unit"):
        seconds("1", "fortnights", source="x")


def test_number_maps_nan_to_missing_and_refuses_text():
    assert number(float("nan"), source="s", what="w") is None
    assert number("5,4", source="s", what="w") == 5.4
    with pytest.raises(ParseError, match="a number for end.sum.jitter_ms"):
        number("fast", source="s", what="end.sum.jitter_ms")


def test_extract_json_skips_text_before_and_after_and_maps_bare_nan():
    text = 'warning: x\n{"a": nan, "b": -nan, "c": "nan"}\niperf3: error - unable to send control message\n'
    doc = extract_json(text)
    assert doc == {"a": None, "b": None, "c": "nan"}


def test_extract_json_says_truncated_for_an_unclosed_object():
    with pytest.raises(ParseError, match="ends before the JSON object is closed"):
        extract_json('{"jobs": [{"jobname": "x"', source="f.json")


def test_require_names_the_missing_key_and_where():
    with pytest.raises(ParseError, match=r"key 'bw_bytes' in jobs\[0\]\.read"):
        require({"bw": 1}, "bw_bytes", source="f", where="jobs[0].read")


def test_rows_scale_values_and_keep_missing_values_missing():
    rows = Rows("f")
    rows.add("jitter", "1.5", "s", "jitter_ms", scale=1e-3)
    rows.add("loss", None, "%", "lost_percent")
    assert [r.value for r in rows] == [pytest.approx(1.5e-3), None]


def test_measurement_refuses_unknown_units():
    with pytest.raises(ValueError, match="furlong"):
        Measurement("x", 1.0, "furlong")


def test_littles_law_ratio_and_flags():
    assert littles_law_ratio(1000.0, 0.016, 16) == pytest.approx(1.0)
    assert littles_law_ratio(None, 0.1, 4) is None
    good = Measurement("littles_law_ratio", 0.97, "ratio")
    bad = Measurement("littles_law_ratio", 0.4, "ratio")
    assert littles_law_flags([good, bad, Measurement("iops", 0.4, "IOPS")]) == [bad]


def test_registry_resolves_every_tool_and_alias():
    for name in tools.REGISTRY:
        adapter = tools.get(name)
        assert adapter.name == name
        assert adapter.roles and adapter.parser_version >= 1
    assert tools.get("iperf").name == "iperf2"
    with pytest.raises(KeyError, match="unknown tool 'netperf'"):
        tools.get("netperf")


@pytest.mark.parametrize("name", ["npb", "filebench"])
def test_parse_only_tools_refuse_to_build_commands(name):
    with pytest.raises(NotImplementedError, match="only parses"):
        tools.get(name).commands({}, {"client": "10.0.0.1"})


ROOT = Path(__file__).resolve().parents[2]
COLLECTOR = ROOT / "scripts" / "debian-packages.py"


def _collect(root: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", str(COLLECTOR), str(root)], capture_output=True, text=True)


def test_install_list_holds_every_runnable_tools_packages():
    printed = _collect().stdout.split()
    assert printed == sorted(set(printed)) and "python3" in printed
    for name in tools.REGISTRY:
        adapter = tools.get(name)
        if isinstance(adapter, ParseOnly):
            assert adapter.debian_packages == () and adapter.version_command == (), name
        else:
            assert adapter.debian_packages, f"{name} declares no Debian package"
            assert set(adapter.debian_packages) <= set(printed), name


def test_collector_reads_module_lists_and_refuses_computed_ones(tmp_path):
    lib = tmp_path / "lib" / "perflab"
    (lib / "tools").mkdir(parents=True)
    (lib / "lab.py").write_text('DEBIAN_PACKAGES: tuple[str, ...] = ("bridge-utils",)\n')
    (lib / "tools" / "x.py").write_text('class X:\n    debian_packages = ("netperf",)\n')
    assert {"bridge-utils", "netperf"} <= set(_collect(tmp_path).stdout.split())
    (lib / "tools" / "x.py").write_text('class X:\n    debian_packages = tuple(["net" + "perf"])\n')
    result = _collect(tmp_path)
    assert result.returncode != 0
    assert "x.py:2 (class X): expected a literal tuple of package names" in result.stderr
