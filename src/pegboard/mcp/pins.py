"""Tool pinning: trust bound to the full definition, against rug pulls (MCPoison and kin).

The first time a server is listed, each tool's definition hash (name, title, description,
input and output schema, annotations) and the server's launch fingerprint (command, args,
env, cwd, url, headers) are pinned in the catalog store. Later:

* a tool whose definition hash changed (after ``list_changed``, a refresh or an edit of the
  cached store on disk) is hidden until the user accepts it (``pegboard tools trust``);
  unchanged tools keep working;
* a tool that appears after the server's first listing (a new tool, or an old one renamed:
  ``danger`` served as ``Danger`` or ``danger2``, which no ``force_prompt_tools`` entry names)
  is hidden until trusted, so a rename cannot walk a tool out of its approval gate;
* on the first listing every tool is pinned, unless an approval gate of the server names no
  listed tool: then the gate is escaped or misspelt, and every tool waits for a person;
* a changed launch definition hides the whole server and the catalog does not start the
  new command until it is trusted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from pegboard.core.tool import canonical_json

LAUNCH = ""  # the pin key of a server's launch fingerprint (no tool has an empty name)
PINNED_KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
TOOL_CHANGED = "definition changed since it was trusted"
LAUNCH_CHANGED = "launch definition changed since it was trusted"
NEW_TOOL = "new since the server was trusted"


def definition_hash(raw: Mapping[str, Any]) -> str:
    """sha256 of the parts of a tool definition the model and the approval depend on."""
    return text_hash(definition_text(raw))


def definition_text(raw: Mapping[str, Any]) -> str:
    """The canonical JSON of the parts :func:`definition_hash` covers."""
    return canonical_json({key: raw.get(key) for key in PINNED_KEYS})


def text_hash(text: str) -> str:
    """:func:`definition_hash` of the definition whose :func:`definition_text` is ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class TrustCheck:
    """The outcome of comparing a listing with the pins."""

    pending: dict[str, str] = field(default_factory=dict)  # tool name -> why it waits
    new_pins: dict[str, str] = field(default_factory=dict)  # first-sight pins to record
    launch_changed: bool = False


def check_trust(
    pins: Mapping[str, str],
    hashes: Mapping[str, str],
    fingerprint: str,
    *,
    hold_first: str | None = None,
) -> TrustCheck:
    """Which tools of a listing wait for trust, and which first-sight pins to record.

    ``hold_first`` is why the first listing may not be trusted on sight (an approval gate
    that names no listed tool): its tools then wait with that reason.
    """
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
        if pinned is None and launch is None and hold_first is None:
            result.new_pins[name] = digest
        elif pinned is None:
            result.pending[name] = hold_first if launch is None and hold_first else NEW_TOOL
        elif pinned != digest:
            result.pending[name] = TOOL_CHANGED
    return result


def unmatched_gate(gates: Collection[str], names: Collection[str]) -> str | None:
    """Why a server's ``force_prompt_tools`` gate nothing it lists (None when all match).

    Such a gate is loud: it is the server's status error, and it holds the server's
    first-sight tools until a person trusts them. A server listing nothing is not judged.
    """
    missing = sorted(set(gates) - set(names))
    if not missing or not names:
        return None
    listed = ", ".join(repr(g) for g in missing)
    return (
        f"force_prompt_tools lists {listed}, which matches no tool of this server (renamed "
        "or misspelt?); its new tools are held until `pegboard tools trust`"
    )


def launch_pending(pins: Mapping[str, str], fingerprint: str) -> bool:
    """Whether the server's launch definition differs from the trusted one."""
    launch = pins.get(LAUNCH)
    return launch is not None and launch != fingerprint
