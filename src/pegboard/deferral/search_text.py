"""``tool_search``'s answer text and rows from ready-made lines (stdlib only).

One rendering for both routes: the full server's :mod:`pegboard.deferral.tool_search` and the
ready path of ``pegboard serve`` (:mod:`pegboard.gateway.early_search`), which answers a first
search from the lines the last start wrote into the ready snapshot, before the SDK loads.
"""

from __future__ import annotations

from collections.abc import Sequence

# (wire name, namespace label, tool line as tool_search shows it, one-line summary)
Found = tuple[str, str, str, str]


def grouped_text(found: Sequence[Found], extra: Sequence[Sequence[str]] = ()) -> str:
    """The hits under their namespace labels (groups in order of their best hit); ``extra``:
    lines to add under each hit (``verbose``'s schema), in the same order."""
    groups: dict[str, list[int]] = {}
    for i, (_, label, _, _) in enumerate(found):
        groups.setdefault(label, []).append(i)
    lines: list[str] = []
    for label, members in groups.items():
        lines.append(f"[{label}]")
        for i in members:
            lines.append(found[i][2])
            if extra:
                lines.extend(extra[i])
    return "\n".join(lines)


def rows(found: Sequence[Found]) -> list[dict[str, str]]:
    """The structured form of the hits."""
    return [{"name": n, "namespace": label, "description": s} for n, label, _, s in found]
