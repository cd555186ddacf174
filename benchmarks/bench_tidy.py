"""Tidy-stage throughput: samples parsed per second as a campaign grows."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from perflab import __version__, records, store, tidy

FIXTURE = Path(__file__).resolve().parents[1] / "tests/fixtures/lab/iperf3-tcp-P4.json"


def campaign(root: Path, n: int) -> Path:
    """A raw store with ``n`` copies of a real iperf3 sample."""
    s = store.RawStore(root, f"bench{n}")
    s.begin(records.CampaignRecord(campaign=s.campaign, design_digest="bench", spec={"factors": {"parallel": [4]}},
                                   source="bench", perflab=__version__, python="3", schedule=[], inventory={}))
    out = FIXTURE.read_text()
    for i in range(n):
        meta = records.SampleMeta(
            campaign=s.campaign, run_id=f"r{i:07d}", tool="iperf3", cell={"parallel": 4}, cell_index=0,
            repetition=i, warmup=False, block=i, position=0, seed=None, attempt=1, status="ok", reason=None,
            roles={}, settle=None, neighbours=[], perflab=__version__,
            commands=[{"host": "h1", "started_utc": "2026-11-22T00:00:00.000Z"}])
        s.put_sample(f"r{i:07d}", {"stdout": out, "stderr": "", "meta.json": meta.to_json()})
    return s.dir


def main() -> None:
    """Time tidy.frame at growing sizes and print per-sample costs and their ratio."""
    costs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (100, 1000):
            raw = campaign(Path(tmp), n)
            t0 = time.perf_counter()
            df, _ = tidy.frame(raw)
            costs[n] = (time.perf_counter() - t0) / n
            print(f"{n:>7} samples: {1 / costs[n]:8.0f} samples/s, {len(df) / n:.0f} rows per sample")
    print(f"per-sample cost ratio 1000/100: {costs[1000] / costs[100]:.2f} (1.0 = linear scaling)")


if __name__ == "__main__":
    main()
