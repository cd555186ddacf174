"""The lab's state file (every resource named before it is made) and its links' address slots."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ...files import atomic_write
from ...formats import labstate
from ...labspec import LabSpec
from . import model
from .model import Lab, LabError, layout
from .shell import sh

STATE_VERSION = labstate.FORMAT
#: Slots of 198.18.0.0/15: 512 /24s, slot s is 198.(18 + s // 256).(s % 256).0/24.
SLOTS = 512


def read_state(name: str) -> dict | None:
    """Lab ``name``'s state file, or ``None`` when it is not up; :class:`LabError` for another version's."""
    state = labstate.read(model.STATE_ROOT / name / "state.json")
    if state is None:
        return None
    found = labstate.version(state)
    if found != STATE_VERSION:
        raise LabError(f"{model.STATE_ROOT / name}/state.json: lab {name} was brought up by another perflab version "
                       f"(state format {found}, this one reads {STATE_VERSION}); remove it with "
                       f"`perflab lab down --name {name}`" + ("" if found == 1 else " of that version"))
    return state


def write_state(lab_dir: Path, state: dict) -> None:
    """Write a lab's state file atomically."""
    atomic_write(lab_dir / "state.json", labstate.dumps(state))


def lab_of(state: dict) -> Lab:
    """The layout a state file records."""
    return layout(LabSpec.from_json(state["spec"]), state["slots"])


def load(name: str = "default") -> Lab | None:
    """The layout of lab ``name`` as its state file records it, or ``None`` when it is not up."""
    state = read_state(name)
    return None if state is None else lab_of(state)


def names() -> list[str]:
    """Names of the labs that are up on this machine (those with a state file), sorted."""
    return sorted(path.parent.name for path in model.STATE_ROOT.glob("*/state.json"))


def _used_slots(own: str) -> set[int]:
    """Slots taken by other labs' state files or by any IPv4 address of this machine's root namespace."""
    used = set()
    for path in model.STATE_ROOT.glob("*/state.json"):
        if path.parent.name != own:
            used |= set((labstate.read(path) or {}).get("slots", {}).values())
    for m in re.finditer(r"inet 198\.(18|19)\.(\d+)\.", sh("ip", "-o", "-4", "addr", "show").stdout):
        used.add((int(m[1]) - 18) * 256 + int(m[2]))
    return used


def allocate(spec: LabSpec, previous: dict[str, int]) -> dict[str, int]:
    """A slot per link: the one it had, else the first free one from a hash of lab and link name."""
    used = _used_slots(spec.name) - set(previous.values())
    slots = {}
    for link in spec.links:
        if link.name in previous:
            slots[link.name] = previous[link.name]
            continue
        slot = int(hashlib.sha256(f"{spec.name}/{link.name}".encode()).hexdigest(), 16) % SLOTS
        for _ in range(SLOTS):
            if slot not in used and slot not in slots.values():
                break
            slot = (slot + 1) % SLOTS
        else:
            raise LabError("every /24 of 198.18.0.0/15 is in use by other labs; bring one down with `perflab lab down`")
        slots[link.name] = slot
    return slots
