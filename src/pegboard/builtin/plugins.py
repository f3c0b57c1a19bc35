"""Tool plugins: the ``pegboard.tools`` entry-point group, pegboard's own tools included.

A package adds tools by declaring, in its pyproject::

    [project.entry-points."pegboard.tools"]
    mytools = "mypackage.tools:entries"

where ``entries(config, data_dir)`` returns an iterable of :class:`ToolEntry`. pegboard's
built-ins (``kb``, ``web``) register the same way. ``pegboard serve`` and ``pegboard tools``
register them at start; a library user does it in one line::

    registry = pegboard.ToolRegistry(pegboard.load_tool_entries())
"""

from __future__ import annotations

import logging
import pathlib
from importlib.metadata import EntryPoint, distributions

from pegboard._release import header_field
from pegboard.config.load import LoadedConfig, load_config
from pegboard.config.model import PegboardConfig
from pegboard.core.entry import ToolEntry

logger = logging.getLogger(__name__)

GROUP = "pegboard.tools"


def load_tool_entries(
    config: PegboardConfig | LoadedConfig | None = None, data_dir: pathlib.Path | None = None
) -> list[ToolEntry]:
    """Every entry of every ``pegboard.tools`` plugin, pegboard's own first.

    ``config`` defaults to the config file ``pegboard`` itself reads (``--config`` aside:
    ``$PEGBOARD_CONFIG`` or the default path) and ``data_dir`` to that config's data
    directory (where ``pegboard kb add`` stores knowledge bases). A bare
    :class:`PegboardConfig` needs ``data_dir``. Loading imports no heavy module: parsers,
    search libraries and models load on a tool's first call.

    A plugin that fails to import, raises, or returns something other than tool entries is
    skipped with a warning naming it. A name already taken by an earlier plugin is refused
    with a warning naming both, so a plugin cannot replace a built-in.
    """
    if not isinstance(config, PegboardConfig):
        source = config if config is not None else load_config()
        config, data_dir = source.config, data_dir or source.data_dir
    elif data_dir is None:
        raise TypeError("load_tool_entries(config, data_dir): a PegboardConfig needs data_dir")
    loaded: list[ToolEntry] = []
    owners: dict[str, str] = {}
    for point in sorted(_points(), key=_order):
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


def _points() -> list[EntryPoint]:
    """The group's entry points, as ``importlib.metadata.entry_points(group=GROUP)`` finds
    them (the first distribution of a name on the path wins), parsing only the
    ``entry_points.txt`` files that name the group: parsing all of them (148 in a dev
    environment) was ~1.7 ms of every CLI read (bench/RESULTS.md, session 17)."""
    seen: set[str] = set()
    found: list[EntryPoint] = []
    for dist in distributions():
        # A path distribution's name from its folder, as entry_points() dedupes them.
        name = getattr(dist, "_normalized_name", None) or dist.name
        if name in seen:
            continue
        seen.add(name)
        text = dist.read_text("entry_points.txt")
        if text and f"[{GROUP}]" in text:
            found.extend(point for point in dist.entry_points if point.group == GROUP)
    return found


def _order(point: EntryPoint) -> tuple[bool, str, str]:
    """pegboard's own first, then by distribution and entry-point name (the distribution's
    name from its metadata's header: parsing the whole file was ~1% of a CLI read)."""
    found = point.dist
    dist = (header_field(found, "Name") or found.name) if found is not None else ""
    return (dist != "pegboard", dist, point.name)
