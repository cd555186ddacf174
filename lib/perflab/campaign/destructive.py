"""Campaigns that overwrite block devices: declared, confirmed before they run, never silently.

A campaign that writes to a raw device (fio or dd on ``/dev/...``) or reformats one (``mkfs``,
``wipefs``, ``zpool create``, ``mdadm --create``, ``nvme format`` in its steps or services)
must say ``destructive: true`` and name the devices it overwrites under ``devices`` (role or
host -> devices). :func:`problems` finds an undeclared one (``perflab plan`` and ``run``
refuse it); :func:`confirm` asks for the device names on the terminal, or takes them from
``--yes-destroy``; the preflight checks every named device exists and is not mounted.
"""

from __future__ import annotations

import re
import sys
from typing import Callable

from . import Campaign
from ..errors import UserError

#: Device files that are not storage (writing them destroys nothing).
HARMLESS = frozenset({"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/stdout",
                      "/dev/stderr"})
_REFORMAT = re.compile(r"\b(mkfs(\.\w+)?|wipefs|zpool\s+create|mdadm\s+(--create|-C)|nvme\s+format|sgdisk|parted|"
                       r"pvcreate|blkdiscard)\b")
_WRITES = re.compile(r"write|rw|trim", re.I)


class DestructiveError(UserError, ValueError):
    """An undeclared or unconfirmed destructive campaign; one line saying what to add or pass."""


def writes(campaign: Campaign) -> list[str]:
    """What in ``campaign`` overwrites a device: ``fio filename /dev/X (rw write)``, ``setup: mkfs ...``, ..."""
    found: dict[str, None] = {}
    for cell in campaign.cells():
        params = campaign.cell_params(cell.levels)
        for key in ("filename", "of"):
            target = str(params.get(key, ""))
            mode = str(params.get("rw", "write" if key == "of" else "read"))
            if target.startswith("/dev/") and target not in HARMLESS and not target.startswith("/dev/shm/") \
                    and _WRITES.search(mode):
                found[f"{campaign.tool} {key} {target} ({mode})"] = None
    steps = [("setup", s.run) for s in campaign.setup] + [("teardown", s.run) for s in campaign.teardown] + \
        [(f"service {d.name}", d.start) for d in campaign.services]
    for where, command in steps:
        if _REFORMAT.search(command):
            found[f"{where}: {command}"] = None
    return list(found)


def problems(campaign: Campaign) -> list[str]:
    """One line per way ``campaign`` is destructive without saying so (empty: declared or harmless)."""
    doc, where = campaign.doc, f"{campaign.source}: destructive"
    found = writes(campaign)
    if found and not doc.get("destructive"):
        return [f"{where}: the campaign overwrites devices ({'; '.join(found)}) but does not say so; add "
                "`destructive: true` and `devices: {ROLE: [/dev/...]}` naming what it overwrites"]
    if doc.get("destructive") and not doc.get("devices"):
        return [f"{where}: true, but no `devices` names what it overwrites; add `devices: {{ROLE: [/dev/...]}}`"]
    return []


def check(campaign: Campaign) -> None:
    """Raise :class:`DestructiveError` when ``campaign`` overwrites devices without declaring them."""
    found = problems(campaign)
    if found:
        raise DestructiveError(found[0])


def confirm(campaign: Campaign, yes: list[str], ask: Callable[[str], str] | None = None) -> None:
    """Let a destructive ``campaign`` run only when every device it names is confirmed.

    ``yes`` holds the devices given with ``--yes-destroy``; those it lacks are asked for on
    the terminal (the user types the device names) when there is one, else refused in one line.
    """
    check(campaign)
    if not campaign.doc.get("destructive"):
        return
    named = [(target, dev) for target, devs in campaign.doc["devices"].items() for dev in devs]
    todo = [(t, d) for t, d in named if d not in yes]
    if not todo:
        return
    listing = ", ".join(f"{d} on {t} ({campaign.host_of(t)})" for t, d in todo)
    flags = " ".join(f"--yes-destroy {d}" for d in dict.fromkeys(d for _, d in todo))
    if ask is None and not sys.stdin.isatty():
        raise DestructiveError(f"{campaign.source}: destructive: the campaign overwrites {listing}; "
                               f"rerun with {flags} to confirm")
    typed = (ask or input)(f"{campaign.name} OVERWRITES {listing}. Type the device name(s) to go on: ").split()
    if sorted(set(typed)) != sorted({d for _, d in todo}):
        raise DestructiveError(f"{campaign.source}: not confirmed (typed {' '.join(typed) or 'nothing'}); "
                               f"nothing was run; to confirm without the question pass {flags}")
