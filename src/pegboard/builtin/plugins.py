"""Tool plugins: the ``pegboard.tools`` entry-point group, pegboard's own tools included.

A package adds tools by declaring, in its pyproject::

    [project.entry-points."pegboard.tools"]
    mytools = "mypackage.tools:entries"

where ``entries(config, data_dir)`` returns an iterable of :class:`ToolEntry`. pegboard's
built-ins (``kb``, ``web``) register the same way.
"""

from __future__ import annotations

import logging
import pathlib
from importlib.metadata import EntryPoint, entry_points

from pegboard.config.model import PegboardConfig
from pegboard.core.entry import ToolEntry

logger = logging.getLogger(__name__)

GROUP = "pegboard.tools"


def load_tool_entries(config: PegboardConfig, data_dir: pathlib.Path) -> list[ToolEntry]:
    """Every entry of every ``pegboard.tools`` plugin, pegboard's own first.

    A plugin that fails to import, raises, or returns something other than tool entries is
    skipped with a warning naming it. A name already taken by an earlier plugin is refused
    with a warning naming both, so a plugin cannot replace a built-in.
    """
    loaded: list[ToolEntry] = []
    owners: dict[str, str] = {}
    for point in sorted(entry_points(group=GROUP), key=_order):
        label = f"{point.name} ({point.value})"
        try:
            entries = list(point.load()(config, data_dir))
            bad = [e for e in entries if not isinstance(e, ToolEntry)]
            if bad:
                raise TypeError(f"returned {type(bad[0]).__name__}, not ToolEntry")
        except Exception as exc:
            logger.warning("tool plugin %s failed and is skipped: %s", label, exc)
            continue
        for entry in entries:
            if entry.name in owners:
                logger.warning(
                    "tool plugin %s: tool %s is already provided by %s; skipped",
                    label,
                    entry.name,
                    owners[entry.name],
                )
                continue
            owners[entry.name] = label
            loaded.append(entry)
    return loaded


def _order(point: EntryPoint) -> tuple[bool, str, str]:
    dist = point.dist.name if point.dist is not None else ""
    return (dist != "pegboard", dist, point.name)
