"""Tool pinning: trust bound to the full definition, against rug pulls (MCPoison and kin).

The first time a server is listed, each tool's definition hash (name, title, description,
input and output schema, annotations) and the server's launch fingerprint (command, args,
env, cwd, url, headers) are pinned in the catalog store. Later:

* a tool whose definition hash changed (after ``list_changed``, a refresh or an edit of the
  cached store on disk) is hidden until the user accepts it (``pegboard tools trust``);
  unchanged tools keep working, and a tool never seen before is pinned on first sight;
* a changed launch definition hides the whole server and the catalog does not start the
  new command until it is trusted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pegboard.core.tool import canonical_json

LAUNCH = ""  # the pin key of a server's launch fingerprint (no tool has an empty name)
PINNED_KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
TOOL_CHANGED = "definition changed since it was trusted"
LAUNCH_CHANGED = "launch definition changed since it was trusted"


def definition_hash(raw: Mapping[str, Any]) -> str:
    """sha256 of the parts of a tool definition the model and the approval depend on."""
    payload = {key: raw.get(key) for key in PINNED_KEYS}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


@dataclass(slots=True)
class TrustCheck:
    """The outcome of comparing a listing with the pins."""

    pending: dict[str, str] = field(default_factory=dict)  # tool name -> why it waits
    new_pins: dict[str, str] = field(default_factory=dict)  # first-sight pins to record
    launch_changed: bool = False


def check_trust(pins: Mapping[str, str], hashes: Mapping[str, str], fingerprint: str) -> TrustCheck:
    """Which tools of a listing wait for trust, and which first-sight pins to record."""
    result = TrustCheck()
    launch = pins.get(LAUNCH)
    if launch is None:
        result.new_pins[LAUNCH] = fingerprint
    elif launch != fingerprint:
        result.launch_changed = True
        result.pending = dict.fromkeys(hashes, LAUNCH_CHANGED)
        return result
    for name, digest in hashes.items():
        pinned = pins.get(name)
        if pinned is None:
            result.new_pins[name] = digest
        elif pinned != digest:
            result.pending[name] = TOOL_CHANGED
    return result


def launch_pending(pins: Mapping[str, str], fingerprint: str) -> bool:
    """Whether the server's launch definition differs from the trusted one."""
    launch = pins.get(LAUNCH)
    return launch is not None and launch != fingerprint
