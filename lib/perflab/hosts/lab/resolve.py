"""Inventory entries for ``--inventory``: a file, localhost, or a lab (brought up when needed)."""

from __future__ import annotations

import logging
import os
from typing import Sequence

from ... import inventory, labspec
from .lifecycle import bring_up, require_root, up
from .state import load

log = logging.getLogger(__name__)


def resolve_inventory(spec: str, *, hosts: int = 2, needs: Sequence[str] = ()) -> dict[str, inventory.HostEntry]:
    """Inventory entries for ``spec``: a file path, ``localhost``, ``lab``/``lab:NAME`` or ``labfile:PATH``.

    ``lab`` brings the flat lab up when running as root and falls back to the localhost
    inventory (saying so) otherwise; a lab brought up from a file is used as it is.
    ``labfile:labs/routed.yaml`` brings the lab that file describes up (if it is not up
    yet) and uses it: a study's campaign names the lab it needs this way. ``needs`` are the
    host names a campaign uses: one the inventory lacks is an :class:`~perflab.inventory.InventoryError`.
    """
    return inventory.require(_resolve(spec, hosts), needs, spec)


def _resolve(spec: str, hosts: int) -> dict[str, inventory.HostEntry]:
    if spec == "localhost":
        return inventory.localhost()
    if spec.startswith("labfile:"):
        require_root()
        return inventory.load(bring_up(labspec.load(spec.partition(":")[2])).inventory_path)
    if spec == "lab" or spec.startswith("lab:"):
        name = spec.partition(":")[2] or "default"
        if os.geteuid() != 0:
            log.warning("perflab: not root, so no namespace lab; using the localhost inventory (no SSH)")
            return inventory.localhost()
        existing = load(name)
        if existing is not None and existing.spec.source is not None:
            return inventory.load(existing.inventory_path)
        return inventory.load(up(name, hosts).inventory_path)
    return inventory.load(spec)
