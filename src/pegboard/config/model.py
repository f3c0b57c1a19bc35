"""The TOML configuration model (pydantic: it is an edge).

Every table rejects unknown keys, so a typo is an error that names the key rather than a
setting silently ignored. ``[servers.<id>]`` tables use the keys of a Claude Desktop
``mcpServers`` entry (``command``/``args``/``env`` or ``url``/``headers``/``type``) plus a few
of pegboard's own, so a server block can be copied from either format.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pegboard.config.server import ServerConfig
from pegboard.core.scope import DEFAULT_MCP_MODE, AssistantSettings, DestructivePolicy, McpMode

DEFAULT_PROFILE = "default"


class _Section(BaseModel):
    # Empty lists and tables are written ``default=[]`` / ``default={}``: pydantic copies an
    # unhashable default for each instance (never shared), and ``default_factory=list`` costs
    # ~1 M instructions a field at import, pydantic reading ``list``'s signature from its text
    # (1.1% of a ``tools search``, bench/RESULTS.md session 17).
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ProfileConfig(_Section):
    """An assistant profile: which tools a client of ``pegboard serve`` gets."""

    web_search: bool = Field(default=False, description="Expose web_search (and web_fetch).")
    web_search_provider: str | None = Field(
        default=None,
        description="Name of a [web_search.<name>] provider (the first one if omitted).",
    )
    knowledge_bases: list[str] = Field(
        default=[], description="Knowledge-base ids kb_search may read."
    )
    mcp_mode: McpMode = Field(
        default=DEFAULT_MCP_MODE,
        description="auto: every enabled server; manual: only mcp_servers; disabled: none.",
    )
    mcp_servers: list[str] = Field(default=[], description="Server ids linked in manual mode.")
    disabled_tools: list[str] = Field(
        default=[],
        description="Tools to hide: wire names or '<server id>/<tool name>'.",
    )
    force_prompt_tools: list[str] = Field(
        default=[],
        description="Tools always shown inline and always asking for approval.",
    )
    destructive_tools: DestructivePolicy = Field(
        default="ask",
        description="ask: MCP tools annotated destructiveHint (and not readOnlyHint) ask for "
        "approval before each run; allow: they run without asking.",
    )
    context_window: int | None = Field(
        default=None,
        gt=0,
        description="Context window of this profile's model (overrides the top-level one).",
    )

    def to_settings(self) -> AssistantSettings:
        return AssistantSettings(
            enable_web_search=self.web_search,
            web_search_provider=self.web_search_provider,
            knowledge_base_ids=tuple(self.knowledge_bases),
            mcp_mode=self.mcp_mode,
            mcp_server_ids=tuple(self.mcp_servers),
            disabled_tools=frozenset(self.disabled_tools),
            force_prompt_tools=frozenset(self.force_prompt_tools),
            destructive_tools=self.destructive_tools,
        )


class WebSearchProviderConfig(_Section):
    """A web-search backend."""

    type: Literal["searxng", "brave", "tavily", "ddgs"] = Field(
        description="Provider kind (ddgs: key-less metasearch, the default when no provider "
        "is configured)."
    )
    url: str | None = Field(
        default=None,
        description="Base URL (required for searxng; brave and tavily default to their "
        "public APIs).",
    )
    api_key: str | None = Field(default=None, description="API key (prefer api_key_env).")
    api_key_env: str | None = Field(
        default=None, description="Environment variable holding the key."
    )
    timeout: float = Field(default=15.0, gt=0, description="Deadline of one search, s.")

    @model_validator(mode="after")
    def _searxng_needs_url(self) -> WebSearchProviderConfig:
        if self.type == "searxng" and not self.url:
            raise ValueError("a searxng provider needs 'url' (e.g. http://127.0.0.1:8888)")
        return self


class WebFetchConfig(_Section):
    """Limits of ``web_fetch``, whose URLs the model chooses."""

    allow_networks: list[str] = Field(
        default=[],
        description="CIDRs web_fetch may reach although they are loopback, private, "
        'link-local or otherwise non-public (e.g. ["127.0.0.1/32"]). Empty: public only.',
    )
    max_bytes: int = Field(
        default=5_000_000, gt=0, description="Cap on a response's decoded bytes."
    )
    timeout: float = Field(
        default=20.0,
        gt=0,
        description="Deadline of one fetch, redirects, body and conversion included, s.",
    )

    @field_validator("allow_networks")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        for item in value:
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(
                    f"{item!r} is not a network; write a CIDR such as 127.0.0.1/32 or fd00::/8"
                ) from None
        return value


class MetaConfig(_Section):
    """Options of the meta-tools that front deferred tools."""

    tool_exec: bool = Field(
        default=False,
        description="Offer tool_exec beside the meta-tools when tools are deferred: the model "
        "writes Python (run in the Monty sandbox; needs pip install 'pegboard[exec]') that "
        "calls this request's tools, gated ones refused. Off by default.",
    )
    defer: bool = Field(default=True, description="Defer large tool pools behind the meta-tools.")
    search: Literal["dense", "lexical"] = Field(
        default="dense",
        description="tool_search ranker: dense (BM25F fused with static embeddings: the "
        "built-in MiniLM table, plus WordLlama when the semantic extra is installed; vectors "
        "cached in the data directory) or lexical (BM25F + namespace summaries only). See "
        "bench/RESULTS.md.",
    )


class AuditConfig(_Section):
    """``[audit]``: the call log in the data directory (``audit.jsonl``)."""

    on_failure: Literal["warn", "refuse"] = Field(
        default="warn",
        description="When the audit log cannot be written: warn (log once, calls go on: a "
        "full disk must not stop the user's work) or refuse (no call runs until a record "
        "can be written; for setups where an unaudited call is worse than none).",
    )


class StoreConfig(_Section):
    """``[store]``: where the shared state lives (default: SQLite in the data directory)."""

    url: str | None = Field(
        default=None,
        description="A PostgreSQL database for a team gateway, e.g. "
        "postgresql://pegboard:PASSWORD@db.internal:5432/pegboard (PEGBOARD_STORE_URL "
        "overrides it): every replica started with it shares tools, trust, approvals and "
        "audit. Needs the postgres extra. Unset: the SQLite file of the data directory.",
    )
    replica_stale_after: float = Field(
        default=15.0,
        gt=0,
        le=3600,
        description="Seconds without a heartbeat after which `pegboard servers status` and "
        "the admin page mark a replica of the team store stale (each serving replica writes "
        "its view of its servers at once on a change, else every third of this).",
    )

    @field_validator("url")
    @classmethod
    def _postgres(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a postgresql:// URL (or leave it unset for SQLite)")
        return value


class GatewayConfig(_Section):
    """``pegboard serve`` options."""

    host: str = Field(default="127.0.0.1", description="Bind address of --http.")
    port: int = Field(
        default=8765, ge=0, le=65535, description="Port of --http (0 picks a free one)."
    )
    token: str | None = Field(
        default=None,
        description="Bearer token clients must send (required for a non-loopback bind; "
        "PEGBOARD_TOKEN overrides it).",
    )
    admin_url: str | None = Field(
        default=None,
        description="The admin UI's address as people's browsers reach it (behind a proxy or "
        "a balancer, e.g. https://pegboard.example.com/admin); clients that can open URLs are "
        "sent to an approval's page there. Default: /admin of --http's own address, or a "
        "running `pegboard ui` for a stdio gateway.",
    )


class AllowRule(_Section):
    """One ``[[auth.allow]]`` rule: these subjects may use these tools of these servers."""

    subjects: list[str] = Field(
        min_length=1,
        description='Who: a subject (the token\'s sub), "group:NAME", or "*" for everyone.',
    )
    servers: list[str] = Field(
        default_factory=lambda: ["*"],
        description='Server ids, or "*" for every server (built-in tools count as server '
        '"builtin").',
    )
    tools: list[str] = Field(
        default_factory=lambda: ["*"],
        description='Tool names of those servers (as the server names them), or "*".',
    )

    @field_validator("subjects", "servers", "tools")
    @classmethod
    def _no_blank(cls, values: list[str]) -> list[str]:
        for value in values:
            if not value.strip() or value != value.strip():
                raise ValueError(f"{value!r}: names may not be blank or padded with spaces")
            if value.startswith("group:") and not value[len("group:") :]:
                raise ValueError('"group:" needs a group name, e.g. "group:ops"')
        return values


class AuthConfig(_Section):
    """OAuth 2.1 resource server for ``pegboard serve --http`` (MCP authorization)."""

    issuer: str | None = Field(
        default=None,
        description="The authorization server (its metadata and JWKS are discovered from it), "
        "e.g. https://idp.example.com/realms/team.",
    )
    audience: str | None = Field(
        default=None,
        description="This gateway's resource URL, e.g. https://mcp.example.com/mcp: tokens "
        "must carry it in aud; published as the protected-resource metadata's resource.",
    )
    groups_claim: str = Field(
        default="groups", min_length=1, description="Token claim that lists the groups."
    )
    admins: list[str] = Field(
        default=[],
        description="Who may use the admin UI and decide others' approvals: subjects or "
        '"group:NAME".',
    )
    leeway: float = Field(
        default=30.0, ge=0, le=300, description="Clock skew allowed on exp / nbf, s."
    )
    allow: list[AllowRule] = Field(
        default=[],
        description="Access rules; with none every authenticated principal gets the profile, "
        "with any, access is denied unless a rule allows it.",
    )

    @field_validator("issuer", "audience")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("https://", "http://")):
            raise ValueError("must be an http(s) URL, e.g. https://idp.example.com")
        return value

    @model_validator(mode="after")
    def _both_or_neither(self) -> AuthConfig:
        if (self.issuer is None) != (self.audience is None):
            raise ValueError("set both issuer and audience (or neither)")
        return self

    @property
    def enabled(self) -> bool:
        return self.issuer is not None


class LimitsConfig(_Section):
    """Rate limits of the gateway, per principal (off by default)."""

    calls_per_minute: int | None = Field(
        default=None, gt=0, description="Tool calls per minute per principal (token bucket)."
    )
    per_tool: dict[str, int] = Field(
        default={},
        description="Tool calls per minute per principal for one tool (wire name).",
    )


class KnowledgeBaseConfig(_Section):
    """Settings of one knowledge base (``[kb.<name>]``), applied by every ``pegboard kb add``."""

    exclude: list[str] = Field(
        default=[],
        description="Globs of files to leave out, relative to the folder added ('_sources', "
        "'*.txt', 'drafts/*.md'; without a '/' they match any part of the path).",
    )


class ModelConfig(_Section):
    """A chat model endpoint (``pegboard chat``, tool-call repair). The API key is read from
    the environment variable named by ``api_key_env``; it never goes in this file."""

    kind: Literal["openai", "anthropic"] = Field(
        description="API: openai (Chat Completions: OpenAI, Ollama, vLLM, LM Studio, "
        "llama.cpp server) or anthropic (Messages)."
    )
    model: str = Field(min_length=1, description="Model name the endpoint knows, e.g. qwen3:8b.")
    base_url: str | None = Field(
        default=None,
        description="Endpoint, e.g. http://127.0.0.1:11434/v1 (the provider's own when unset).",
    )
    api_key_env: str | None = Field(
        default=None,
        description="Environment variable holding the API key (OPENAI_API_KEY or "
        "ANTHROPIC_API_KEY when unset; local servers need none).",
    )
    context_window: int | None = Field(
        default=None,
        gt=0,
        description="The model's context window in tokens: sizes deferral in pegboard chat "
        "only (pegboard serve and the integrations use the top-level or profile "
        "context_window, else 200000).",
    )
    max_tokens: int | None = Field(
        default=None,
        gt=0,
        description="Cap on tokens per answer (Anthropic requires one: 4096 when unset).",
    )
    timeout: float = Field(default=120.0, gt=0, description="Per-request timeout, s.")
    max_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Retries on 429/5xx and dropped connections (backoff, honours Retry-After).",
    )
    text_tool_calls: bool = Field(
        default=True,
        description="Run tool calls the model writes as text (a fenced or bare JSON object "
        "with the name of an offered tool and its arguments, or one in tool_call tags) when "
        "it makes no native call, as small local models do; false: such text is the answer.",
    )

    @field_validator("base_url")
    @classmethod
    def _base_url_is_http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https:// (e.g. http://127.0.0.1:11434/v1)")
        return value


class PegboardConfig(_Section):
    """The whole file. Every key is optional: an empty file is a valid config."""

    data_dir: str | None = Field(
        default=None,
        description="Catalog, knowledge bases and logs (PEGBOARD_DATA_DIR overrides it).",
    )
    context_window: int | None = Field(
        default=None,
        gt=0,
        description="Context window (tokens) of the client's model; deferral starts when the "
        "tools would take 10% of it. 200000 when unset: Claude Desktop, Claude Code, Cursor "
        "and VS Code mostly run 200k-token models. Set it lower for small local models.",
    )
    default_profile: str = Field(
        default=DEFAULT_PROFILE, description="Profile used when none is chosen."
    )
    servers: dict[str, ServerConfig] = Field(default={}, description="MCP servers.")
    profiles: dict[str, ProfileConfig] = Field(default={}, description="Assistant profiles.")
    web_search: dict[str, WebSearchProviderConfig] = Field(
        default={}, description="Web-search providers."
    )
    web_fetch: WebFetchConfig = Field(default_factory=lambda: WebFetchConfig())
    models: dict[str, ModelConfig] = Field(default={}, description="Chat model endpoints, by id.")
    default_model: str | None = Field(
        default=None, description="Model id used when none is chosen (the first one if unset)."
    )
    meta: MetaConfig = Field(default_factory=lambda: MetaConfig())
    gateway: GatewayConfig = Field(default_factory=lambda: GatewayConfig())
    audit: AuditConfig = Field(default_factory=lambda: AuditConfig())
    store: StoreConfig = Field(default_factory=lambda: StoreConfig())
    auth: AuthConfig = Field(default_factory=lambda: AuthConfig())
    limits: LimitsConfig = Field(default_factory=lambda: LimitsConfig())
    kb: dict[str, KnowledgeBaseConfig] = Field(
        default={}, description="Knowledge bases (`pegboard kb add`), by name."
    )

    @model_validator(mode="before")
    @classmethod
    def _server_ids(cls, data: Any) -> Any:
        """Each ``[servers.<id>]`` table gets its key as ``id`` (validated with the table)."""
        if not isinstance(data, dict) or not isinstance(data.get("servers"), dict):
            return data
        servers = {}
        for sid, table in data["servers"].items():
            if isinstance(table, dict):
                if "id" in table and table["id"] != sid:
                    raise ValueError(f"servers.{sid}: drop the 'id' key (the table name is the id)")
                table = {**table, "id": sid}
            servers[sid] = table
        return {**data, "servers": servers}

    @model_validator(mode="after")
    def _references_exist(self) -> PegboardConfig:
        for pid, profile in self.profiles.items():
            for sid in profile.mcp_servers:
                if sid not in self.servers:
                    raise ValueError(
                        f"profiles.{pid}.mcp_servers names unknown server {sid!r}; "
                        f"known: {sorted(self.servers) or 'none'}"
                    )
            provider = profile.web_search_provider
            if provider is not None and provider not in self.web_search:
                raise ValueError(
                    f"profiles.{pid}.web_search_provider names unknown provider {provider!r}; "
                    "add a [web_search.<name>] table"
                )
        if self.default_profile != DEFAULT_PROFILE and self.default_profile not in self.profiles:
            raise ValueError(f"default_profile {self.default_profile!r} has no [profiles.*] table")
        if self.default_model is not None and self.default_model not in self.models:
            raise ValueError(
                f"default_model {self.default_model!r} has no [models.{self.default_model}] "
                f"table; known models: {', '.join(sorted(self.models)) or 'none'}"
            )
        return self

    def model(self, name: str | None = None) -> tuple[str, ModelConfig]:
        """The named model (``default_model``, else the first one, when ``name`` is None)."""
        from pegboard.errors import ConfigError

        key = name or self.default_model or next(iter(self.models), None)
        if key is None:
            raise ConfigError(
                "no model is configured; add a [models.<id>] table with kind, base_url and "
                'model (e.g. kind = "openai", base_url = "http://127.0.0.1:11434/v1")'
            )
        if key not in self.models:
            known = ", ".join(sorted(self.models)) or "none"
            raise ConfigError(f"unknown model {key!r}; known models: {known}")
        return key, self.models[key]

    def profile(self, name: str | None = None) -> ProfileConfig:
        """The named profile; ``default`` exists implicitly (MCP mode auto)."""
        key = name or self.default_profile
        if key in self.profiles:
            return self.profiles[key]
        if key == DEFAULT_PROFILE:
            return ProfileConfig()
        from pegboard.errors import ConfigError

        known = sorted({DEFAULT_PROFILE, *self.profiles})
        raise ConfigError(f"unknown profile {key!r}; known profiles: {', '.join(known)}")
