"""The group pool: independent host groups run the schedule concurrently in a bounded thread pool."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Mapping

from ..campaign import design
from ..inventory import HostEntry
from ..hosts.remote import HostError
from ..campaign import Campaign
from ..store import RawStore
from .progress import Progress
from .samples import session
from .outcome import RunnerError, Summary


def run_groups(spec: Campaign, entries: Mapping[str, HostEntry], runs: list[design.Run], todo: list[design.Run],
                store: RawStore, progress: Progress, *, limit: int | None,
                on_sample: Callable[[design.Run], None] | None, summary: Summary) -> Summary:
    """Run every group's part of ``todo`` in a pool of ``parallel_groups`` threads; merge into ``summary``."""
    stop = threading.Event()

    def one(k: int) -> tuple[Summary, str | None]:
        part = Summary(planned=0, already_done=0)
        mine = [r for r in runs if r.group == k]
        try:
            session(spec.for_group(k), entries, mine, [r for r in todo if r.group == k][:limit], store, progress,
                     on_sample=on_sample, summary=part, stop=stop)
        except (HostError, RunnerError) as exc:
            progress.note(f"group {k} stopped: {exc}")
            return part, str(exc)
        return part, None

    with ThreadPoolExecutor(max_workers=spec.parallel_groups, thread_name_prefix="perflab-group") as pool:
        futures = [pool.submit(one, k) for k in range(len(spec.groups))]
        try:
            results = [f.result() for f in futures]
        except BaseException:
            stop.set()
            raise
    errors = []
    for k, (part, error) in enumerate(results):
        summary.done += part.done
        summary.failed += part.failed
        summary.notes += part.notes
        if error:
            errors.append(f"group {k}: {error}")
    if errors:
        raise RunnerError(f"{'; '.join(errors)}. The other groups ran on; {summary.already_done + summary.done} of "
                          f"{len(runs)} samples are stored; bring the host back, then rerun the same command to "
                          f"resume (stored samples are kept)")
    return summary


