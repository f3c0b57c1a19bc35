"""The one MCP server model: a ``[servers.<id>]`` table, an ``mcpServers`` entry, the catalog's
definition. All server validation lives here (no MCP SDK import, so the CLI stays fast).

Keys follow Claude Desktop's ``mcpServers`` (``command``/``args``/``env``/``cwd`` or
``url``/``headers``/``type``) plus pegboard's own (``name``, ``enabled``, tool lists, timeouts).
Spellings of other clients are folded in by :func:`normalise_entry`, the one alias table.

Safety rules enforced on every load and import: ids are 1-64 printable characters without
``/``; a relative ``command`` or ``cwd`` (``./x``, ``bin/x``) is resolved against the folder of
the config file that names it, or refused when there is none (running pegboard inside an
untrusted checkout must never run that checkout's ``./x``); ``enabled``/``disabled`` are real
booleans (``disabled = "yes"`` is refused, not read as enabled); ``url`` is http(s).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from pegboard.core.redact import redact_url
from pegboard.core.tool import canonical_json
from pegboard.errors import ConfigError

Transport = Literal["stdio", "http", "sse"]

TRANSPORT_ALIASES: dict[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "sse": "sse",
}
MAX_ID_LENGTH = 64
MAX_NAME_LENGTH = 128
_BAD_ID_CHARS = re.compile(r"[/\\\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def check_server_id(server_id: object) -> str:
    """``server_id`` if usable as a server id, else ValueError saying what to use."""
    if not isinstance(server_id, str) or not server_id.strip():
        raise ValueError("a server id must not be blank; name the server, e.g. 'github'")
    if server_id != server_id.strip() or len(server_id) > MAX_ID_LENGTH:
        raise ValueError(
            f"server id must be 1-{MAX_ID_LENGTH} characters without surrounding spaces"
        )
    if _BAD_ID_CHARS.search(server_id):
        raise ValueError("server id must not contain '/', '\\' or control characters")
    return server_id


def normalise_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Another client's spelling of a server entry in pegboard's keys (the one alias table)."""
    data = dict(entry)
    if "serverUrl" in data:  # Windsurf
        data.setdefault("url", data.pop("serverUrl"))
    if "transport" in data:
        data.setdefault("type", data.pop("transport"))
    if "disabled" in data:  # Claude Code / Cline
        disabled = data.pop("disabled")
        if not isinstance(disabled, bool):
            raise ValueError("'disabled' must be true or false")
        data.setdefault("enabled", not disabled)
    raw = data.get("type")
    if raw is not None:
        key = str(raw).lower()
        if key not in TRANSPORT_ALIASES:
            raise ValueError(f"unknown transport type {str(raw)[:20]!r}; use stdio, http or sse")
        data["type"] = TRANSPORT_ALIASES[key]
    elif data.get("command"):
        data["type"] = "stdio"
    elif data.get("url"):
        data["type"] = "http"
    return data


def _resolve_path(value: str, what: str, base_dir: Path | None) -> str:
    path = Path(value).expanduser()
    if path.is_absolute():
        return str(path)
    if base_dir is None:
        raise ValueError(
            f"relative {what} {value!r} has no config file to be relative to; "
            "give an absolute path (or, for a command, a bare name found on PATH)"
        )
    return str((base_dir / path).resolve())


class ServerConfig(BaseModel):
    """One MCP server: a stdio command or a remote URL (see the module docstring)."""

    # Dumped as a ``[servers.<id>]`` table: ``type`` rather than ``transport``, no ``id``.
    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, serialize_by_alias=True
    )

    id: str = Field(
        exclude=True, description="The server id (the key of its [servers.<id>] table)."
    )
    command: str | None = Field(default=None, description="Executable of a stdio server.")
    args: tuple[str, ...] = Field(default=(), description="Arguments of the stdio command.")
    env: dict[str, str] = Field(
        default={},
        description="Environment of the stdio child (only these variables are added).",
    )
    cwd: str | None = Field(default=None, description="Working directory of the stdio child.")
    url: str | None = Field(default=None, description="Endpoint of a remote (HTTP or SSE) server.")
    headers: dict[str, str] = Field(default={}, description="HTTP headers to send.")
    transport: Transport | None = Field(
        default=None,
        validation_alias=AliasChoices("type", "transport"),
        serialization_alias="type",
        description="Transport: stdio, http (also streamable-http) or sse; inferred from "
        "command/url when omitted.",
    )
    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_NAME_LENGTH,
        description="Display name (defaults to the id).",
    )
    enabled: StrictBool = Field(default=True, description="A disabled server is never started.")
    disabled_tools: frozenset[str] = Field(
        default=frozenset(), description="Tool names of this server never exposed."
    )
    force_prompt_tools: frozenset[str] = Field(
        default=frozenset(), description="Tool names always inline and asking for approval."
    )
    # One switch, not per-resource globs: resources and prompts have no stable names to gate
    # one by one (templates expand to any URI), and a server's content is trusted or not.
    approve_content: StrictBool = Field(
        default=False,
        description="Reading a resource or getting a prompt of this server asks for approval.",
    )
    connect_timeout: float = Field(default=10.0, gt=0, description="Start-up timeout, s.")
    # A first start (no tools cached yet) may install the server first: npx -y, uvx (13-16 s).
    first_connect_timeout: float = Field(
        default=120.0,
        gt=0,
        description="Start-up timeout while no tools are cached yet (npx -y, uvx install), s.",
    )
    protocol: Literal["auto", "modern"] = Field(
        default="auto",
        description="MCP era with this server: auto (initialize; server/discover when the "
        "server refuses the handshake) or modern (server/discover only: 2026-07-28, list "
        "changes through subscriptions/listen).",
    )
    list_timeout: float = Field(default=15.0, gt=0, description="tools/list timeout, s.")
    call_timeout: float = Field(default=60.0, gt=0, description="Per-call timeout, s.")

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = normalise_entry(data)
        base = (info.context or {}).get("base_dir")
        base_dir = Path(base) if base is not None else None
        command = data.get("command")
        if isinstance(command, str) and command and ("/" in command or "\\" in command):
            data["command"] = _resolve_path(command, "command", base_dir)
        cwd = data.get("cwd")
        if isinstance(cwd, str) and cwd:
            data["cwd"] = _resolve_path(cwd, "cwd", base_dir)
        return data

    @field_validator("id", mode="before")
    @classmethod
    def _check_id(cls, value: Any) -> str:
        return check_server_id(value)

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s]", value, re.I):
            raise ValueError(f"url {redact_url(value)[:80]!r} must start with http:// or https://")
        return value

    @model_validator(mode="after")
    def _check_endpoint(self) -> ServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of 'command' (stdio server) or 'url' (remote)")
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio server needs 'command'")
        if self.transport in ("http", "sse") and not self.url:
            raise ValueError(f"an {self.transport} server needs 'url'")
        if self.command is not None and not self.command.strip():
            raise ValueError("'command' must not be blank")
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
        if self.protocol != "auto":  # another session; absent when default (older caches)
            payload["protocol"] = self.protocol
        return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()

    @property
    def secrets(self) -> tuple[str, ...]:
        """Configured values to mask in anything shown (env and header values)."""
        return (*self.env.values(), *self.headers.values())

    def gates(self) -> tuple[frozenset[str], frozenset[str], bool]:
        """(disabled tools, force-prompt tools, approve content): what an edit changes live."""
        return self.disabled_tools, self.force_prompt_tools, self.approve_content

    def is_tool_disabled(self, tool_name: str) -> bool:
        return tool_name in self.disabled_tools

    def is_force_prompt(self, tool_name: str) -> bool:
        return tool_name in self.force_prompt_tools


_PEGBOARD_KEYS = frozenset(ServerConfig.model_fields) | {"type", "transport", "disabled"}
_PEGBOARD_KEYS |= {"serverUrl"}


def foreign_keys(entry: Mapping[str, Any]) -> list[str]:
    """Keys of another client's entry that pegboard does not read (``autoApprove``...)."""
    return sorted(str(k) for k in entry if k not in _PEGBOARD_KEYS or k == "id")


def parse_mcp_servers(
    obj: Mapping[str, Any], *, base_dir: Path | None = None
) -> list[ServerConfig]:
    """Server configs from a Claude Desktop / Cursor ``{"mcpServers": {...}}`` document.

    VS Code's ``{"servers": {...}}`` and a bare ``{id: {...}}`` mapping are accepted too; keys
    pegboard does not read are dropped. Relative commands resolve against ``base_dir``.
    Raises :class:`ConfigError` naming the server and the field at fault (never the value).
    """
    if not isinstance(obj, Mapping):
        raise ConfigError(f"MCP server config must be a JSON object, got {type(obj).__name__}")
    servers = obj.get("mcpServers", obj.get("servers", obj))
    if not isinstance(servers, Mapping):
        raise ConfigError("'mcpServers' must map server ids to server definitions")
    return [parse_server(sid, spec, base_dir=base_dir) for sid, spec in servers.items()]


def parse_server(server_id: Any, spec: Any, *, base_dir: Path | None = None) -> ServerConfig:
    """One ``mcpServers`` entry as a :class:`ServerConfig`; ConfigError on any problem."""
    label = repr(server_id)[:70]
    if not isinstance(spec, Mapping):
        raise ConfigError(
            f"MCP server {label}: the definition must be an object with "
            f"'command' or 'url', got {type(spec).__name__}"
        )
    data = {k: v for k, v in spec.items() if k not in foreign_keys(spec)}
    try:
        return ServerConfig.model_validate(
            {**data, "id": server_id}, context={"base_dir": base_dir}
        )
    except ValidationError as exc:
        raise ConfigError(f"MCP server {label}: {describe_errors(exc)}") from exc
    except ValueError as exc:  # normalise_entry outside pydantic's wrapping
        raise ConfigError(f"MCP server {label}: {exc}") from exc


def describe_errors(exc: ValidationError) -> str:
    """The problems of ``exc`` on one line, never echoing the input (it may be a secret)."""
    problems = []
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        problems.append(f"field {where!r}: {message}" if where else message)
    return "; ".join(problems)
