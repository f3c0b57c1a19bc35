"""MCP server definitions, compatible with Claude Desktop's ``mcpServers`` JSON.

A stdio server has ``command`` (+ ``args``, ``env``, ``cwd``); a remote one has ``url`` (+
``headers``) and speaks streamable HTTP unless ``type``/``transport`` says ``sse``. pegboard adds
a display name, an enable switch, per-tool disable and force-prompt lists, and timeouts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pegboard.core.tool import canonical_json
from pegboard.errors import ConfigError

FIRST_CONNECT_TIMEOUT = 120.0

Transport = Literal["stdio", "http", "sse"]

_TRANSPORT_ALIASES: dict[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "sse": "sse",
}


class McpServerConfig(BaseModel):
    """One MCP server, as configured by the user."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    id: str = Field(min_length=1)
    name: str | None = None
    transport: Transport | None = Field(default=None, validation_alias="type")
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True
    disabled_tools: frozenset[str] = frozenset()
    force_prompt_tools: frozenset[str] = frozenset()
    connect_timeout: float = Field(default=10.0, gt=0)
    # A first start (no tools cached yet) may install the server (npx -y, uvx): 13-16 s seen.
    first_connect_timeout: float = Field(default=FIRST_CONNECT_TIMEOUT, gt=0)
    call_timeout: float = Field(default=60.0, gt=0)
    list_timeout: float = Field(default=15.0, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _infer_transport(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        if "disabled" in data and "enabled" not in data:  # Claude Code / Cline spelling
            data["enabled"] = not data.pop("disabled")
        raw = data.get("type", data.pop("transport", None))
        if raw is not None:
            key = str(raw).lower()
            if key not in _TRANSPORT_ALIASES:
                raise ValueError(f"unknown transport type {raw!r}; use stdio, http or sse")
            data["type"] = _TRANSPORT_ALIASES[key]
        elif data.get("command"):
            data["type"] = "stdio"
        elif data.get("url") or data.get("serverUrl"):
            data["type"] = "http"
        if "serverUrl" in data and "url" not in data:
            data["url"] = data.pop("serverUrl")
        return data

    @model_validator(mode="after")
    def _check_endpoint(self) -> McpServerConfig:
        if self.transport is None:
            raise ValueError("needs either 'command' (stdio server) or 'url' (remote server)")
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio server needs 'command'")
        if self.transport in ("http", "sse") and not self.url:
            raise ValueError(f"an {self.transport} server needs 'url'")
        return self

    @property
    def display_name(self) -> str:
        return self.name or self.id

    @property
    def fingerprint(self) -> str:
        """sha256 of the canonical launch definition; any change means a different server."""
        payload = {
            "transport": self.transport,
            "command": self.command,
            "args": list(self.args),
            "env": self.env,
            "cwd": self.cwd,
            "url": self.url,
            "headers": self.headers,
        }
        return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()

    def is_tool_disabled(self, tool_name: str) -> bool:
        return tool_name in self.disabled_tools

    def is_force_prompt(self, tool_name: str) -> bool:
        return tool_name in self.force_prompt_tools


def parse_mcp_servers(obj: Mapping[str, Any]) -> list[McpServerConfig]:
    """Server configs from a Claude Desktop / Cursor ``{"mcpServers": {...}}`` document.

    VS Code's ``{"servers": {...}}`` and a bare ``{id: {...}}`` mapping are accepted too.
    Raises :class:`ConfigError` naming the server and the field at fault.
    """
    if not isinstance(obj, Mapping):
        raise ConfigError(f"MCP server config must be a JSON object, got {type(obj).__name__}")
    servers = obj.get("mcpServers", obj.get("servers", obj))
    if not isinstance(servers, Mapping):
        raise ConfigError("'mcpServers' must map server ids to server definitions")
    configs = []
    for server_id, spec in servers.items():
        if not isinstance(spec, Mapping):
            raise ConfigError(
                f"MCP server {server_id!r}: the definition must be an object with "
                f"'command' or 'url', got {type(spec).__name__}"
            )
        try:
            configs.append(McpServerConfig.model_validate({"id": server_id, **spec}))
        except ValidationError as exc:
            raise ConfigError(_describe(str(server_id), exc)) from exc
    return configs


def _describe(server_id: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        field = f"field {where!r}: " if where else ""
        problems.append(f"{field}{err['msg']}")
    return f"MCP server {server_id!r}: " + "; ".join(problems)
