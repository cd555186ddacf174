"""Digitize the tables of seed 000 into data/raw/published/000-cedri-*.csv.

Reads the seed's text (../shared/seeds/000_0215f2644d92d7fd.txt relative to the project
root, or the path given as the first argument) and writes long-format CSVs whose every
row names the table and the 1-based line of the source it was read from. Printed values
keep their text (decimal comma turned into a dot) so that the printed precision survives.
Run from the project root: `python studies/000-cedri/digitize.py`.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

SEED = Path("../shared/seeds/000_0215f2644d92d7fd.txt")
OUT = Path("data/raw/published")

#: (table, header line, firewall, smt) of the appendix tables: rows follow the header.
APPENDIX = (("A.1", 1293, "virtual", "off"), ("A.2", 1303, "virtual", "on"),
            ("A.3", 1313, "native", "off"), ("A.4", 1323, "native", "on"))
APPENDIX_METRICS = {"Largura de Banda": ("throughput", "Gbit/s"), "Carga i7Server": ("load_server", "load1"),
                    "Carga i7Client": ("load_client", "load1"), "Carga Firewall": ("load_firewall", "load1")}
#: Tables 3.3-3.6: threads x (mtu, smt, firewall) columns.
THREAD_TABLES = (("3.3", 506, "throughput", "Gbit/s"), ("3.4", 536, "load_client", "load1"),
                 ("3.5", 548, "load_server", "load1"), ("3.6", 560, "load_firewall", "load1"))
THREAD_COLUMNS = [(mtu, smt, fw) for mtu in (1500, 9000) for smt in ("off", "on") for fw in ("native", "virtual")]
SUMMARY_TABLES = (("3.1", 454, "native"), ("3.2", 469, "virtual"))
SUMMARY_METRICS = {"Taxa de Transferência": ("throughput", "Gbit/s"), "Carga CPU Firewall": ("load_firewall", "load1"),
                   "Carga CPU i7Client": ("load_client", "load1"), "Carga CPU i7Server": ("load_server", "load1")}
P2P_TABLES = (("3.7", 582, "i7server"), ("3.8", 605, "pfsense-virtual"), ("3.9", 622, "vyos-virtual"),
              ("3.10", 631, "ubuntu-virtual"))
#: Known problems, by (table, metric-or-row key): flag and note.
NOTES = {
    ("A.3", "load_firewall", 1500, "1"): "printed 0,5798 (four decimals); Table 3.6 prints 0,580",
    ("A.4", "load_client", 1500, "1"): "printed 0,0482 (four decimals); Table 3.4 prints 0,048",
    ("3.6", "load_firewall", 1500, "2", "on", "native"): (
        "printed 0,749 here, 0,748 in Table A.4; the mean 0,743 matches 0,748"),
    ("3.2", "load_client", 1500, "delta"): "printed +245%; 0,143/0,042-1 = +240% from the printed values",
    ("3.2", "load_server", 1500, "delta"): "printed +306%; 0,412/0,102-1 = +304% from the printed values",
    ("3.9", "throughput", "mean"): "printed mean 9,357 is the mean of 2, 4 and 8 threads only; all four give 8,457",
    ("3.10",): "every cell equals Table 3.7 (direct i7Server-i7Client): probably a copy error in the thesis",
}


def cells(line: str) -> list[str]:
    """The cells of one markdown table row, stripped, markers like [•] and * removed."""
    out = []
    for c in line.strip().strip("|").split("|"):
        c = c.strip()
        for mark in ("[•]", "[‡]", "[*]", "[†]"):
            c = c.replace(mark, "")
        out.append(c.replace("*", "").strip())
    return out


def num(text: str) -> str:
    """A printed number with its decimal comma as a dot, '%' and '+' dropped."""
    return text.replace(",", ".").replace("%", "").replace("+", "").strip()


def main(seed: Path = SEED) -> None:
    lines = seed.read_text(encoding="utf-8").splitlines()
    row = lambda n: cells(lines[n - 1])  # noqa: E731
    fw_rows: list[dict] = []
    fields = ["source_table", "line", "firewall", "smt", "mtu", "threads", "metric", "value", "unit", "uncertain",
              "note"]

    def add(rows, table, n, **kw):
        key_note = next((v for k, v in NOTES.items() if k[0] == table and all(
            str(x) in map(str, (kw.get("metric"), kw.get("mtu"), kw.get("threads"), kw.get("smt"), kw.get("firewall")))
            for x in k[1:])), "")
        rows.append({"source_table": f"Tabela {table}", "line": n, **kw, "uncertain": str(bool(key_note)).lower(),
                     "note": key_note})

    for table, header, fw, smt in APPENDIX:
        assert row(header)[0] in ("threads iperf", "N.º Threads", "MultiThreading"), (table, row(header))
        for n in range(header + 1, header + 5):
            label, *vals = row(n)
            metric, unit = APPENDIX_METRICS[label]
            for i, v in enumerate(vals):
                mtu, threads = (1500, 9000)[i // 5], ("1", "2", "4", "8", "mean")[i % 5]
                add(fw_rows, table, n, firewall=fw, smt=smt, mtu=mtu, threads=threads, metric=metric, value=num(v),
                    unit=unit)
    for table, first, metric, unit in THREAD_TABLES:
        for n in range(first, first + 5):
            label, *vals = row(n)
            threads = "mean" if label == "Média" else label.split()[0]
            for (mtu, smt, fw), v in zip(THREAD_COLUMNS, vals):
                add(fw_rows, table, n, firewall=fw, smt=smt, mtu=mtu, threads=threads, metric=metric, value=num(v),
                    unit=unit)
    for table, first, fw in SUMMARY_TABLES:
        for n in range(first, first + 4):
            label, *vals = row(n)
            metric, unit = SUMMARY_METRICS[label]
            # printed order per MTU: Não, Sim, delta %, Média (the header row is misaligned)
            for i, v in enumerate(vals):
                mtu = (1500, 9000)[i // 4]
                smt, threads, u = (("off", "mean", unit), ("on", "mean", unit), ("on-vs-off", "delta", "%"),
                                   ("both", "mean", unit))[i % 4]
                add(fw_rows, table, n, firewall=fw, smt=smt, mtu=mtu, threads=threads, metric=metric, value=num(v),
                    unit=u)
    write(OUT / "000-cedri-firewall.csv", fields, fw_rows)

    p2p: list[dict] = []
    p2p_fields = ["source_table", "line", "endpoint", "mtu", "smt", "threads", "metric", "value", "unit", "uncertain",
                  "note"]
    for table, caption, endpoint in P2P_TABLES:
        header = next(n for n in range(caption, caption + 8) if row(n)[0] == "Threads")
        threads = row(header)[1:]
        for n in range(header + 1, header + 4):
            label, *vals = row(n)
            metric = ("throughput" if label.startswith("Taxa") else
                      "load_client" if "i7Client" in label else "load_server")
            for t, v in zip(threads, vals):
                if not v:
                    continue
                t = "mean" if t == "Média" else t
                note = next((nv for k, nv in NOTES.items()
                             if k[0] == table and (len(k) == 1 or (k[1] == metric and k[2] == t))), "")
                p2p.append({"source_table": f"Tabela {table}", "line": n, "endpoint": endpoint, "mtu": 1500,
                            "smt": "on",
                            "threads": t, "metric": metric, "value": num(v),
                            "unit": "Gbit/s" if metric == "throughput" else "load1",
                            "uncertain": str(bool(note)).lower(), "note": note})
    write(OUT / "000-cedri-p2p.csv", p2p_fields, p2p)

    link: list[dict] = []
    header = 914
    assert row(header)[0] == "Threads"
    for n in (header + 1, header + 2):
        label, *vals = row(n)
        for i, v in enumerate(vals):
            link.append({"source_table": "Tabela 4.1", "line": n, "link": label.split()[0], "mtu": (1500, 9000)[i // 6],
                         "threads": (1, 2, 4, 8, 16, 32)[i % 6], "value": num(v), "unit": "Gbit/s",
                         "uncertain": "false", "note": ""})
    write(OUT / "000-cedri-link.csv", ["source_table", "line", "link", "mtu", "threads", "value", "unit", "uncertain",
                                       "note"], link)

    nfs: list[dict] = []
    for table, first, metric, unit in (("4.2", 1034, "iops", "kIOPS"), ("4.3", 1043, "latency", "ms")):
        for n in (first, first + 1):
            label, *vals = row(n)
            for i, v in enumerate(vals):
                nfs.append({"source_table": f"Tabela {table}", "line": n, "fs": label.lower(),
                            "direction": ("read", "write")[i // 4], "link": ("10G", "10G", "100G", "100G")[i % 4],
                            "mtu": (1500, 9000)[i % 2], "metric": metric, "value": num(v), "unit": unit,
                            "uncertain": "true" if table == "4.2" else "false",
                            "note": "header row misaligned in the extraction; column order from Table 4.3"
                            if table == "4.2" else ""})
    write(OUT / "000-cedri-nfs.csv", ["source_table", "line", "fs", "direction", "link", "mtu", "metric", "value",
                                      "unit", "uncertain", "note"], nfs)


def write(path: Path, fields: list[str], rows: list[dict]) -> None:
    """Write ``rows`` as CSV with ``fields`` in order."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"{path}: {len(rows)} rows")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else SEED)
