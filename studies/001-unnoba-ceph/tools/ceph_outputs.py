"""Seed 001's verbatim Ceph outputs (tests/fixtures/ceph/seed001_*) parsed by perflab's Ceph parsers.

Writes data/raw/published/001-unnoba-ceph-ceph-outputs.csv, one row per measurement, in the
tidy table's long form (tool, metric, value, unit, dims as JSON) plus the figure and seed lines
it comes from. Files the parsers refuse (OCR damage, several runs in one file) are listed in
data/raw/published/001-unnoba-ceph-ORIGIN.md, not guessed. Run from the project root:
``python studies/001-unnoba-ceph/tools/ceph_outputs.py [OUT]``.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

from perflab.tools import ceph

#: fixture -> (parser, figure, first and last seed lines, pool / target)
PARSED = {
    "tests/fixtures/ceph/seed001_fig93_rados_write.txt": (ceph.RadosBench, "Fig. 93", "4083-4106", "testhdd+cache"),
    "tests/fixtures/ceph/seed001_fig102_rbd_write_seq.txt": (ceph.RbdBench, "Fig. 102", "4293-4299", "testhdd/imagen1"),
}
#: fixtures the parsers must refuse, with the figure they come from
REFUSED = {
    "tests/fixtures/ceph/seed001_fig84_rados_write_ocr_split.txt": "Fig. 84",
    "tests/fixtures/ceph/seed001_fig102_rbd_four_runs.txt": "Fig. 102",
    "tests/fixtures/ceph/seed001_fig79_osd_bench_ocr.txt": "Fig. 79",
}
FIELDS = ["source", "figure", "lines", "target", "tool", "parser_version", "metric", "value", "unit", "dims"]


def rows(root: Path) -> list[dict[str, object]]:
    """Every measurement of the parseable seed 001 Ceph outputs, in file order."""
    out: list[dict[str, object]] = []
    for name, (parser, figure, lines, target) in PARSED.items():
        tool = parser()
        for m in tool.parse((root / name).read_text(), source=name):
            out.append({"source": name, "figure": figure, "lines": lines, "target": target, "tool": tool.name,
                        "parser_version": tool.parser_version, "metric": m.metric, "value": repr(float(m.value)),
                        "unit": m.unit, "dims": json.dumps(m.dims, sort_keys=True)})
    return out


def csv_text(root: Path) -> str:
    """The CSV file's text, as committed."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows(root))
    return buf.getvalue()


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "data/raw/published/001-unnoba-ceph-ceph-outputs.csv")
    target.write_text(csv_text(Path(".")))
