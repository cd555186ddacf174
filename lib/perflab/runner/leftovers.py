"""The leftovers record: processes of the campaign's registry killed on the hosts, by host, and why.

``leftovers/<time>.json`` (format 1): ``owner`` (the registry), ``cause`` (what found them:
an earlier, killed run found on resume; a run stopped by a signal; the end of a run), and
``killed``, host -> ``"<pid> <command line>"`` per process killed on that host.
"""

from __future__ import annotations

import json
import time
from typing import Mapping

from ..store import RawStore

#: Version of the leftovers record.
FORMAT = 1


def record(store: RawStore, killed: Mapping[str, list[str]], cause: str) -> str | None:
    """Store what was killed (host -> processes) with ``cause``; return the record's path, or None when nothing was."""
    killed = {host: lines for host, lines in killed.items() if lines}
    if not killed:
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = f"leftovers/{stamp}.json"
    n = 1
    while (store.dir / path).exists():  # two records in one second (a resume's reap, then the run's end)
        n += 1
        path = f"leftovers/{stamp}-{n}.json"
    store.put_file(path, json.dumps({"format": FORMAT, "owner": store.owner, "cause": cause, "killed": killed},
                                    indent=1) + "\n")
    return path


def describe(killed: Mapping[str, list[str]], path: str | None) -> str:
    """"N process(es) on h1, h2 (recorded in PATH)" for a message."""
    hosts = sorted(host for host, lines in killed.items() if lines)
    return (f"{sum(len(killed[h]) for h in hosts)} process(es) on {', '.join(hosts)}"
            + (f" (recorded in {path})" if path else ""))


def found_at_start(store: RawStore, killed: Mapping[str, list[str]]) -> list[str]:
    """Record what a run killed when it started (left by an earlier, killed attempt); a note saying so, if any."""
    path = record(store, killed, "left by an earlier run, found when this one started")
    return [f"stopped {describe(killed, path)} that an earlier attempt left"] if path else []
