"""``pegboard config import``: merge another client's MCP server list into the config.

Reads the ``mcpServers`` object of Claude Desktop and Cursor, the ``servers`` object of a VS
Code ``.vscode/mcp.json``, or ``mcp.servers`` of a VS Code ``settings.json``. Servers are
merged by id: new ids are added, existing ones take the imported command/url while keeping
pegboard's own keys (``name``, ``enabled``, tool lists, timeouts).
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pegboard.config.load import render_config
from pegboard.config.server import foreign_keys, normalise_entry, parse_server
from pegboard.errors import ConfigError

_TRANSPORT_KEYS = ("command", "args", "env", "cwd", "url", "headers", "type")
_PEGBOARD_KEYS = (
    "name",
    "enabled",
    "disabled_tools",
    "force_prompt_tools",
    "approve_content",
    "connect_timeout",
    "list_timeout",
    "call_timeout",
)


@dataclass(slots=True)
class ImportPlan:
    """What an import would change; ``merged`` is the new raw config."""

    source: Path
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    before: dict[str, Any] = field(default_factory=dict)
    merged: dict[str, Any] = field(default_factory=dict)

    @property
    def has_changes(self) -> bool:
        return bool(self.added or self.changed)

    def diff(
        self, config_path: Path, mask: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    ) -> str:
        """A unified diff of the config file text, before -> after (``mask`` hides secrets).

        Both sides are the text :func:`write_config` would write, so the user's comments and
        layout show as kept.
        """
        before, after = (
            (mask(self.before), mask(self.merged)) if mask else (self.before, self.merged)
        )
        old = render_config(config_path, before).splitlines(keepends=True) if before else []
        new = render_config(config_path, after).splitlines(keepends=True)
        return "".join(
            difflib.unified_diff(old, new, fromfile=f"{config_path}", tofile=f"{config_path}")
        )


_STRING_OR_COMMENT = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.DOTALL)
_STRING_OR_TRAILING_COMMA = re.compile(r'("(?:\\.|[^"\\])*")|,(\s*[}\]])')


def strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (VS Code's settings.json, mcp.json) as JSON."""
    text = _STRING_OR_COMMENT.sub(lambda m: m.group(1) or "", text)
    return _STRING_OR_TRAILING_COMMA.sub(lambda m: m.group(1) or m.group(2), text)


def read_server_map(path: Path) -> dict[str, Any]:
    """The id -> server object map of a client config file (JSON, or JSONC like VS Code's)."""
    try:
        data = json.loads(strip_jsonc(path.read_text(encoding="utf-8")))
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: no such file") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise ConfigError(f"{path}: JSON nested too deeply to be an MCP client config") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level")
    for keys in (("mcpServers",), ("servers",), ("mcp", "servers")):
        node: Any = data
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            return node
    raise ConfigError(
        f"{path}: no MCP servers found; expected an 'mcpServers' object (Claude Desktop, "
        "Cursor), 'servers' (VS Code mcp.json) or 'mcp.servers' (VS Code settings.json)"
    )


def convert_server(
    sid: str, entry: Any, warnings: list[str], *, base_dir: Path | None = None
) -> dict[str, Any]:
    """One client server entry as a ``[servers.<id>]`` table (raw, validated by the one
    server model; a relative command becomes absolute against ``base_dir``)."""
    server = parse_server(sid, entry, base_dir=base_dir)  # ConfigError names id and field
    ignored = foreign_keys(entry)
    if ignored:
        warnings.append(f"server {sid!r}: ignored keys {', '.join(ignored)}")
    given = normalise_entry(entry)
    if "type" not in entry and "transport" not in entry:
        given.pop("type", None)  # inferred: keep the table as the user wrote it
    table = {k: copy.deepcopy(v) for k, v in given.items() if k in _TRANSPORT_KEYS}
    if server.command is not None:
        table["command"] = server.command
    if server.cwd is not None:
        table["cwd"] = server.cwd
    if not server.enabled:
        table["enabled"] = False
    if any("${input:" in v for v in (*server.args, *server.env.values())):
        warnings.append(f"server {sid!r}: VS Code ${{input:...}} placeholders are kept verbatim")
    return table


def plan_import(source: Path, current_raw: Mapping[str, Any]) -> ImportPlan:
    """Compute the merge of ``source``'s servers into ``current_raw`` (nothing is written)."""
    plan = ImportPlan(source=source, before=copy.deepcopy(dict(current_raw)))
    merged = copy.deepcopy(dict(current_raw))
    servers: dict[str, Any] = dict(merged.get("servers", {}))
    for sid, entry in read_server_map(source).items():
        table = convert_server(sid, entry, plan.warnings, base_dir=source.parent)
        old = servers.get(sid)
        if old is None:
            servers[sid] = table
            plan.added.append(sid)
            continue
        new = {k: v for k, v in old.items() if k in _PEGBOARD_KEYS} | table
        if new == old:
            plan.unchanged.append(sid)
        else:
            servers[sid] = new
            plan.changed.append(sid)
    merged["servers"] = servers
    plan.merged = merged
    return plan
