"""Upstream resources, resource templates and prompts, passed through ``pegboard serve``.

Namespaced so two servers never collide: a resource URI ``U`` of server ``S`` is shown as
``pegboard://S/U`` (templates too: the client expands the upstream part, and a read strips the
prefix), a prompt ``P`` by the tools' wire-name scheme (``mcp__S__P``, or with a digest suffix
when a part is no plain segment: ids ``g`` and ``g__x`` never share a prompt name), resolved
through the cached listings, never parsed back. Lists come from the cache only (kept in the catalog
store across restarts); the allowed servers that declare the capability are asked in the
background (each bounded by its ``list_timeout``; a failing server is skipped with a warning
and keeps its last good entries listed), and clients are told when a list changed. Reads and
gets go to the owning server, approved and audited (:mod:`pegboard.gateway.content_guard`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote, unquote

import anyio
import mcp_types
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from pegboard.calls.session import CallSession
from pegboard.core.access import AccessView
from pegboard.core.events import ContentChanged
from pegboard.core.names import mcp_tool_name
from pegboard.core.principal import Principal
from pegboard.gateway.content_guard import Asking, ContentGuard
from pegboard.mcp.catalog import McpCatalog
from pegboard.mcp.store import StoredContent

logger = logging.getLogger("pegboard.gateway")

URI_PREFIX = "pegboard://"
AskingOf = Callable[[Any, Any], Asking | None]
"""(request context, params) -> how that request's client is asked in rounds, or None."""
Caller = tuple[Principal | None, AccessView | None]
CallerOf = Callable[[Any], Caller]
"""request context -> who sent it and what they may use (None: everything)."""
RESOURCE_NOT_FOUND = -32002  # the code the MCP spec gives an unknown resource


def wrap_uri(server_id: str, uri: str) -> str:
    return f"{URI_PREFIX}{quote(server_id, safe='')}/{uri}"


def unwrap_uri(uri: str) -> tuple[str, str] | None:
    """``(server id, upstream URI)`` of a namespaced URI, or None if it is not one."""
    if not uri.startswith(URI_PREFIX):
        return None
    server, sep, rest = uri[len(URI_PREFIX) :].partition("/")
    return (unquote(server), rest) if sep and server else None


def prompt_name(server_id: str, name: str) -> str:
    """The name a client sees for prompt ``name`` of ``server_id`` (collision-free)."""
    return mcp_tool_name(server_id, None, name)


_MODELS: dict[str, type[BaseModel]] = {
    "resources": mcp_types.Resource,
    "templates": mcp_types.ResourceTemplate,
    "prompts": mcp_types.Prompt,
}


class UpstreamContent:
    """Resources, templates and prompts of ``servers()`` (the profile's allowed ids).

    Lists are answered from the catalog's cache only (memory, else its store, so a restarted
    gateway lists them before any server answers); :meth:`run` refreshes the cache in the
    background at start, when an upstream says its content changed (:meth:`changed`) and
    when a listed server has nothing cached yet, then announces what changed.
    """

    def __init__(
        self,
        catalog: McpCatalog,
        servers: Callable[[], list[str]],
        *,
        session: CallSession | None = None,
    ) -> None:
        self._catalog = catalog
        self._servers = servers
        self._guard = ContentGuard(self._approves_content, session or CallSession())
        # (kind, server id) -> the cached listing and its SDK models
        self._last: dict[tuple[str, str], tuple[StoredContent, list[Any]]] = {}
        self._due = anyio.Event()

    def _approves_content(self, server_id: str) -> bool:
        return self._catalog.server(server_id).approve_content

    def changed(self) -> None:
        """An upstream's resources or prompts changed: refresh (a catalog listener)."""
        self._due.set()

    async def run(self, announce: Callable[[], None]) -> None:
        """Forever: refresh the cache when due (at start, and when an upstream says its
        content changed), and ``announce()`` when a list changed, or at once when another
        replica stored a listed server's new lists (nothing to ask: the cache reads them)."""

        def on_change(event: ContentChanged) -> None:
            if not event.stored:
                self.changed()
            elif event.server_id in self._servers():
                announce()

        unsubscribe = self._catalog.events.subscribe(ContentChanged, on_change)
        try:
            while True:
                if await self.refresh():
                    announce()
                await self._due.wait()
                self._due = anyio.Event()
        finally:
            unsubscribe()

    async def refresh(self) -> bool:
        """Ask each allowed server for its lists (concurrently); True if any list changed."""
        changed: list[bool] = []

        async def one(server_id: str) -> None:
            changed.append(await self._catalog.supervisor.refresh_content(server_id))

        async with anyio.create_task_group() as tg:
            for server_id in self._servers():
                tg.start_soon(one, server_id)
        return any(changed)

    def _cached(self, kind: str, server_id: str) -> list[Any] | None:
        """The last listing of ``kind`` as SDK models (None: never listed)."""
        stored = self._catalog.cache.content(server_id, kind)
        if stored is None:
            return None
        memo = self._last.get((kind, server_id))
        if memo is not None and memo[0] is stored:
            return memo[1]
        try:
            items = [_MODELS[kind].model_validate(i) for i in stored.items]
        except ValidationError:
            return None
        self._last[(kind, server_id)] = (stored, items)
        return items

    def _visible(self, view: AccessView | None) -> list[str]:
        """The allowed servers whose content the principals of ``view`` may see (those of
        which some rule gives them a tool)."""
        servers = self._servers()
        return servers if view is None else [s for s in servers if view.allows_server(s)]

    def _listed(self, kind: str, view: AccessView | None = None) -> list[tuple[str, Any]]:
        found: list[tuple[str, Any]] = []
        for server_id in self._visible(view):
            items = self._cached(kind, server_id)
            if items is None:
                self._due.set()  # never listed: ask it in the background
            found.extend((server_id, item) for item in items or [])
        return found

    async def list_resources(self, view: AccessView | None = None) -> list[mcp_types.Resource]:
        return [
            r.model_copy(update={"uri": wrap_uri(sid, str(r.uri))})
            for sid, r in self._listed("resources", view)
        ]

    async def list_resource_templates(
        self, view: AccessView | None = None
    ) -> list[mcp_types.ResourceTemplate]:
        return [
            t.model_copy(update={"uri_template": wrap_uri(sid, t.uri_template)})
            for sid, t in self._listed("templates", view)
        ]

    async def read_resource(
        self,
        uri: str,
        session: ServerSession | None = None,
        request_id: mcp_types.RequestId | None = None,
        asking: Asking | None = None,
        caller: Caller | None = None,
    ) -> mcp_types.ReadResourceResult | mcp_types.InputRequiredResult:
        """Read ``uri`` from its server, approved and audited (``session``: who asks;
        ``asking``: how a modern client is asked; ``caller``: its principal and what that
        principal may use: a resource of a server it may not see is not found)."""
        principal, view = caller or (None, None)
        owner = unwrap_uri(uri)
        if owner is None or owner[0] not in self._visible(view):
            # Unknown: refused, but audited like an unknown tool.
            return await self._guard.run(
                uri, None, {}, session, request_id, _not_found(uri), principal=principal
            )
        server_id, upstream = owner
        listed = next(  # the definition, read once for this request
            (
                r
                for sid, r in self._listed("resources")
                if sid == server_id and str(r.uri) == upstream
            ),
            None,
        )

        async def read() -> mcp_types.ReadResourceResult:
            result = await (await self._catalog.session(server_id)).read_resource(upstream)
            contents = [
                c.model_copy(update={"uri": wrap_uri(server_id, str(c.uri))})
                for c in result.contents
            ]
            return result.model_copy(update={"contents": contents})

        return await self._guard.run(
            uri,
            server_id,
            {},
            session,
            request_id,
            read,
            asking,
            definition=listed,
            principal=principal,
        )

    async def list_prompts(self, view: AccessView | None = None) -> list[mcp_types.Prompt]:
        return [
            p.model_copy(update={"name": prompt_name(sid, p.name)})
            for sid, p in self._listed("prompts", view)
        ]

    def _prompt_owner(
        self, name: str, view: AccessView | None = None
    ) -> tuple[str, str, Any] | None:
        """``(server id, upstream name, listed prompt or None)`` of a shown prompt name.

        From the cached listings; a get never waits for a listing, so a name not listed yet
        is read off when it is a plain ``mcp__S__P`` (which only one server and prompt can
        produce); a suffixed name must have been listed."""
        for sid, prompt in self._listed("prompts", view):
            if prompt_name(sid, prompt.name) == name:
                return sid, prompt.name, prompt
        parts = name.split("__")
        plain = len(parts) == 3 and parts[0] == "mcp" and parts[1] in self._visible(view)
        if plain and prompt_name(parts[1], parts[2]) == name:
            return parts[1], parts[2], None
        return None

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None,
        session: ServerSession | None = None,
        request_id: mcp_types.RequestId | None = None,
        asking: Asking | None = None,
        caller: Caller | None = None,
    ) -> mcp_types.GetPromptResult | mcp_types.InputRequiredResult:
        """Get prompt ``name`` from its server, approved and audited (``session``: who asks;
        ``asking``: how a modern client is asked; ``caller``: as for :meth:`read_resource`)."""
        principal, view = caller or (None, None)
        owner = self._prompt_owner(name, view)
        if owner is None:
            return await self._guard.run(
                name,
                None,
                arguments or {},
                session,
                request_id,
                _not_found(name),
                principal=principal,
            )
        server_id, upstream_name, listed = owner  # the definition, read once for this request

        async def get() -> mcp_types.GetPromptResult:
            upstream = await self._catalog.session(server_id)
            return await upstream.get_prompt(upstream_name, arguments)

        args = arguments or {}
        return await self._guard.run(
            name,
            server_id,
            args,
            session,
            request_id,
            get,
            asking,
            definition=listed,
            principal=principal,
        )

    def handlers(
        self, asking: AskingOf | None = None, caller: CallerOf | None = None
    ) -> dict[str, Any]:
        """The SDK server's handlers (``Server(**handlers)``) of these resources and prompts;
        ``asking`` tells how the client of a request is asked in rounds (None: pushed),
        ``caller`` who sent it and what they may see (None: everything)."""
        content = self
        of: AskingOf = asking or (lambda ctx, params: None)
        who: CallerOf = caller or (lambda ctx: (None, None))

        async def list_resources(ctx: Any, params: Any) -> mcp_types.ListResourcesResult:
            resources = await content.list_resources(who(ctx)[1])
            return mcp_types.ListResourcesResult(resources=resources)

        async def list_templates(ctx: Any, params: Any) -> mcp_types.ListResourceTemplatesResult:
            templates = await content.list_resource_templates(who(ctx)[1])
            return mcp_types.ListResourceTemplatesResult(resource_templates=templates)

        async def read_resource(
            ctx: Any, params: mcp_types.ReadResourceRequestParams
        ) -> mcp_types.ReadResourceResult | mcp_types.InputRequiredResult:
            uri = str(params.uri)
            return await content.read_resource(
                uri, ctx.session, ctx.request_id, of(ctx, params), who(ctx)
            )

        async def list_prompts(ctx: Any, params: Any) -> mcp_types.ListPromptsResult:
            return mcp_types.ListPromptsResult(prompts=await content.list_prompts(who(ctx)[1]))

        async def get_prompt(
            ctx: Any, params: mcp_types.GetPromptRequestParams
        ) -> mcp_types.GetPromptResult | mcp_types.InputRequiredResult:
            return await content.get_prompt(
                params.name,
                params.arguments,
                ctx.session,
                ctx.request_id,
                of(ctx, params),
                who(ctx),
            )

        return {
            "on_list_resources": list_resources,
            "on_list_resource_templates": list_templates,
            "on_read_resource": read_resource,
            "on_list_prompts": list_prompts,
            "on_get_prompt": get_prompt,
        }


def _not_found(shown: str) -> Callable[[], Awaitable[Any]]:
    """The body of a read or get of no allowed server: the MCP error naming it."""

    async def refuse() -> Any:
        if shown.startswith(URI_PREFIX):
            raise MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {shown}")
        raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"Prompt not found: {shown}")

    return refuse
