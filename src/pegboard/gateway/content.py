"""Upstream resources, resource templates and prompts, passed through ``pegboard serve``.

Namespaced so two servers never collide: a resource URI ``U`` of server ``S`` is shown as
``pegboard://S/U`` (templates too: the client expands the upstream part, and a read strips the
prefix), a prompt ``P`` as ``mcp__S__P``. Lists are asked of the allowed, running servers that
declare the capability (each bounded by its ``list_timeout``; a failing server is skipped with
a warning) and the last good answer of each server is kept, so a server that stops answering
keeps its entries listed. Reads and gets go to the owning server.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import quote, unquote

import anyio
import mcp_types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from pegboard.errors import PegboardError
from pegboard.mcp.catalog import McpCatalog

logger = logging.getLogger("pegboard.gateway")

URI_PREFIX = "pegboard://"
RESOURCE_NOT_FOUND = -32002  # the code the MCP spec gives an unknown resource
T = TypeVar("T")


def wrap_uri(server_id: str, uri: str) -> str:
    return f"{URI_PREFIX}{quote(server_id, safe='')}/{uri}"


def unwrap_uri(uri: str) -> tuple[str, str] | None:
    """``(server id, upstream URI)`` of a namespaced URI, or None if it is not one."""
    if not uri.startswith(URI_PREFIX):
        return None
    server, sep, rest = uri[len(URI_PREFIX) :].partition("/")
    return (unquote(server), rest) if sep and server else None


def prompt_name(server_id: str, name: str) -> str:
    return f"mcp__{server_id}__{name}"


class UpstreamContent:
    """Resources, templates and prompts of ``servers()`` (the profile's allowed ids)."""

    def __init__(self, catalog: McpCatalog, servers: Callable[[], list[str]]) -> None:
        self._catalog = catalog
        self._servers = servers
        self._last: dict[tuple[str, str], list[Any]] = {}  # (kind, server id) -> last good
        self._prompts: dict[str, tuple[str, str]] = {}  # shown name -> (server id, name)

    async def _gather(
        self, kind: str, fetch: Callable[[ClientSession], Awaitable[list[T]]]
    ) -> list[tuple[str, T]]:
        found: list[tuple[str, T]] = []
        for server_id in self._servers():
            timeout = self._catalog.server(server_id).list_timeout
            try:
                with anyio.fail_after(timeout):
                    session = await self._catalog.session(server_id)
                    capabilities = (await session.initialize()).capabilities
                    offered = capabilities.prompts if kind == "prompts" else capabilities.resources
                    items = await fetch(session) if offered is not None else []
                self._last[(kind, server_id)] = items
            except (PegboardError, TimeoutError, MCPError) as exc:
                logger.warning("MCP server %s: listing %s failed: %s", server_id, kind, exc)
                items = self._last.get((kind, server_id), [])
            found.extend((server_id, item) for item in items)
        return found

    async def list_resources(self) -> list[mcp_types.Resource]:
        async def fetch(session: ClientSession) -> list[mcp_types.Resource]:
            return list((await session.list_resources()).resources)

        return [
            r.model_copy(update={"uri": wrap_uri(sid, str(r.uri))})
            for sid, r in await self._gather("resources", fetch)
        ]

    async def list_resource_templates(self) -> list[mcp_types.ResourceTemplate]:
        async def fetch(session: ClientSession) -> list[mcp_types.ResourceTemplate]:
            return list((await session.list_resource_templates()).resource_templates)

        return [
            t.model_copy(update={"uri_template": wrap_uri(sid, t.uri_template)})
            for sid, t in await self._gather("templates", fetch)
        ]

    async def read_resource(self, uri: str) -> mcp_types.ReadResourceResult:
        owner = unwrap_uri(uri)
        if owner is None or owner[0] not in self._servers():
            raise MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {uri}")
        server_id, upstream = owner
        result = await (await self._catalog.session(server_id)).read_resource(upstream)
        contents = [
            c.model_copy(update={"uri": wrap_uri(server_id, str(c.uri))}) for c in result.contents
        ]
        return result.model_copy(update={"contents": contents})

    async def list_prompts(self) -> list[mcp_types.Prompt]:
        async def fetch(session: ClientSession) -> list[mcp_types.Prompt]:
            return list((await session.list_prompts()).prompts)

        shown = []
        for sid, prompt in await self._gather("prompts", fetch):
            name = prompt_name(sid, prompt.name)
            self._prompts[name] = (sid, prompt.name)
            shown.append(prompt.model_copy(update={"name": name}))
        return shown

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None
    ) -> mcp_types.GetPromptResult:
        if name not in self._prompts:
            await self.list_prompts()
        owner = self._prompts.get(name)
        if owner is None or owner[0] not in self._servers():
            raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"Prompt not found: {name}")
        server_id, upstream = owner
        return await (await self._catalog.session(server_id)).get_prompt(upstream, arguments)

    def handlers(self) -> dict[str, Any]:
        """The SDK server's handlers (``Server(**handlers)``) of these resources and prompts."""
        content = self

        async def list_resources(ctx: Any, params: Any) -> mcp_types.ListResourcesResult:
            return mcp_types.ListResourcesResult(resources=await content.list_resources())

        async def list_templates(ctx: Any, params: Any) -> mcp_types.ListResourceTemplatesResult:
            templates = await content.list_resource_templates()
            return mcp_types.ListResourceTemplatesResult(resource_templates=templates)

        async def read_resource(
            ctx: Any, params: mcp_types.ReadResourceRequestParams
        ) -> mcp_types.ReadResourceResult:
            return await content.read_resource(str(params.uri))

        async def list_prompts(ctx: Any, params: Any) -> mcp_types.ListPromptsResult:
            return mcp_types.ListPromptsResult(prompts=await content.list_prompts())

        async def get_prompt(
            ctx: Any, params: mcp_types.GetPromptRequestParams
        ) -> mcp_types.GetPromptResult:
            return await content.get_prompt(params.name, params.arguments)

        return {
            "on_list_resources": list_resources,
            "on_list_resource_templates": list_templates,
            "on_read_resource": read_resource,
            "on_list_prompts": list_prompts,
            "on_get_prompt": get_prompt,
        }
