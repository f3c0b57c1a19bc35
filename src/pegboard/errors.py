"""Errors raised by pegboard.

One root, :class:`PegboardError`, so ``except PegboardError`` catches everything pegboard raises
on purpose. Every message says what is wrong and, where there is one, how to fix it. Three
kinds: misuse (:class:`UserError`: the message says the fix), signals
(:class:`ApprovalRequired`: a human must decide) and failures (the rest).

::

    PegboardError
    ├── UserError                    pegboard was used wrongly; the message says the fix
    │   └── ConfigError              a config file, server definition or option is invalid
    ├── SchemaError                  a JSON Schema is itself malformed
    ├── ToolError                    something went wrong around one tool
    │   ├── ToolNotFound             no tool of that name is registered (suggestions attached)
    │   ├── ToolNotAllowed           the tool exists but is not available in this request
    │   ├── InvalidToolArguments     arguments do not validate against the tool's schema
    │   ├── ApprovalRequired         a human must approve this call first (a signal, not a bug)
    │   ├── ApprovalDenied           a human (or the policy) refused the call
    │   ├── RateLimited              the principal called too often ([limits]); retry after N s
    │   ├── AuditUnavailable         [audit] on_failure = "refuse" and the audit cannot be written
    │   └── ToolExecutionError       the tool ran and failed; its message is model-readable
    │       ├── UrlRefused           web_fetch refused a URL (scheme, userinfo, address, redirect)
    │       └── McpToolError         an MCP tool answered isError (``output`` keeps every part)
    ├── McpError                     MCP server or catalog problems
    │   ├── ServerUnavailable        the server is not active, failed to start or crashed
    │   │   └── ServerInactive       the server is disabled or not configured (no call made)
    │   └── CatalogError             the persistent catalog could not be read or written
    ├── ApprovalNotPending           no pending approval of that id (unknown, decided, expired)
    ├── StoreError                   the team store (PostgreSQL) could not be read or written
    ├── ModelError                   a model endpoint refused or botched a request
    │   └── ModelUnavailable         the model endpoint is unreachable or timed out
    ├── SearchModelError             a tool-search model's files are missing or unreadable
    ├── NotStarted                   tools of MCP servers used outside ``async with`` (misuse)
    ├── KnowledgeBaseError           a knowledge base cannot be read, written or found
    │   ├── PathNotAllowed           a path to ingest is not a regular file under the given root
    │   └── FileTooLarge             a file (or what it decompresses to) exceeds a size cap
    └── OptionalDependencyMissing    an extra is not installed (ImportError too)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Any


class PegboardError(Exception):
    """Root of every error pegboard raises on purpose."""


class UserError(PegboardError):
    """pegboard was used wrongly (an option, an order of calls); the message says the fix."""


class ConfigError(UserError):
    """A configuration file, server definition or option is invalid."""


class SchemaError(PegboardError):
    """A JSON Schema is malformed (not an arguments mismatch: see InvalidToolArguments)."""


class ToolError(PegboardError):
    """An error about one tool. ``tool_name`` is the wire name involved."""

    def __init__(self, message: str, *, tool_name: str | None = None) -> None:
        super().__init__(message)
        self.tool_name = tool_name


class ToolNotFound(ToolError):
    """No tool of that name is registered."""

    def __init__(self, tool_name: str, suggestions: Sequence[str] = ()) -> None:
        self.suggestions = tuple(suggestions)
        hint = f" Did you mean: {', '.join(self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"Tool not found: {tool_name}.{hint}", tool_name=tool_name)


class ToolNotAllowed(ToolError):
    """The tool exists but is not available in this request."""

    def __init__(self, tool_name: str) -> None:
        super().__init__(f"Tool not available in this request: {tool_name}", tool_name=tool_name)


class RateLimited(ToolError):
    """The principal called too often (``[limits]``); the message says when to retry."""

    def __init__(self, message: str, *, tool_name: str | None = None, retry_after: int = 1):
        super().__init__(message, tool_name=tool_name)
        self.retry_after = retry_after


class InvalidToolArguments(ToolError):
    """Arguments do not validate against the tool's input schema."""

    def __init__(self, tool_name: str | None, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        target = f' for "{tool_name}"' if tool_name else ""
        super().__init__(
            f"Invalid params{target}: " + "; ".join(self.problems), tool_name=tool_name
        )


class ApprovalRequired(ToolError):
    """The call needs a human's approval before it may run."""


class ApprovalDenied(ToolError):
    """The call was refused by the approval handler or the policy."""


class AuditUnavailable(ToolError):
    """The call was not run: its audit record cannot be written (``on_failure = "refuse"``)."""


class ToolExecutionError(ToolError):
    """The tool ran and failed. The message is what the model should read."""


class UrlRefused(ToolExecutionError):
    """``web_fetch`` refused a URL before connecting; the message names the reason and the fix."""


class McpToolError(ToolExecutionError):
    """An MCP tool answered with ``isError``; ``output`` (a
    :class:`~pegboard.core.output.ToolOutput`) keeps every part it sent."""

    def __init__(self, message: str, *, tool_name: str, output: Any) -> None:
        super().__init__(message, tool_name=tool_name)
        self.output = output


class ApprovalNotPending(PegboardError):
    """A pending approval cannot be decided: unknown id, already decided, or expired."""


class StoreError(PegboardError):
    """The team store (``[store] url``) could not be read or written (grants, approvals)."""


# -- a server's failure reason as a fixed phrase (stderr and server text never reach the model)
_NAME = r"'[\w.-]{1,128}'"


@cache
def _reason_patterns() -> tuple[
    re.Pattern[str], tuple[re.Pattern[str], ...], tuple[tuple[re.Pattern[str], str], ...]
]:
    """(failed, own, fixed): compiled on the first reason made public, not at import (every
    command imports this module; the 18 patterns were ~0.5% of a cache read)."""
    # pegboard's own failure phrases; a match is returned as matched (the patterns admit only
    # safe characters), so a server's stderr or error text cannot ride along.
    own = tuple(
        re.compile(p)
        for p in (
            r"server process exited with code -?\d+",
            r"server process exited",
            rf"(?:initialize|tools/list|tool {_NAME}) (?:did not answer within|timed out after) "
            r"\d+(?:\.\d+)? ?s",
            r"timed out after \d+(?:\.\d+)? ?s",
            # with the setting to raise (a server id is [\w.-]: config keys of safe characters)
            r"no answer to initialize within \d+(?:\.\d+)?s"
            r"(?: \(raise (?:first_)?connect_timeout in \[servers\.[\w.-]{1,64}\]\))?",
            r"retrying in \d+s after \d+ failures",
            r"server sent a message larger than \d+ bytes",
            r"tools/list ran over \d+ pages",
            r"server closed its stdin",
            r"the refresh was cancelled",
            r"launch definition changed[\w ;:`.-]*",
            r"not active",
        )
    )
    failed = re.compile(rf"^((?:tools/list|initialize|tool {_NAME}) failed): (.*)$", re.S)
    fixed = (
        (
            re.compile(r"no such file|ENOENT", re.I),
            "failed to start: command not found (No such file or directory)",
        ),
        (re.compile(r"permission denied|EACCES", re.I), "failed to start: permission denied"),
        (
            re.compile(r"refused|connect(ion)? attempts failed|ConnectError", re.I),
            "connection refused",
        ),
        (re.compile(r"connection closed", re.I), "connection closed"),
        (re.compile(r"timed out|timeout", re.I), "timed out"),
    )
    return failed, own, fixed


UNKNOWN_REASON = "failed (see `pegboard servers logs`)"


def public_reason(reason: str) -> str:
    """A fixed phrase for a server failure reason (``server process exited with code 3``).

    Only pegboard's own wording survives; anything a server wrote (stderr, an error message)
    is dropped or replaced by a fixed phrase, so the result is safe inside a prompt.
    """
    failed, own, fixed = _reason_patterns()
    text = reason.split(" (stderr:", 1)[0].strip()
    if match := failed.match(text):
        return f"{match.group(1)}: {public_reason(match.group(2))}"
    for pattern in own:
        if match := pattern.search(text):
            return match.group(0)
    for pattern, phrase in fixed:
        if pattern.search(text):
            return phrase
    return UNKNOWN_REASON


class McpError(PegboardError):
    """An MCP server or catalog problem."""


class ServerUnavailable(McpError):
    """The MCP server is not active, failed to start, timed out or crashed."""

    def __init__(self, server_id: str, reason: str) -> None:
        self.server_id = server_id
        # A fixed phrase: this message reaches the model, so no stderr or server-sent text.
        self.reason = public_reason(reason)
        super().__init__(f"MCP server {server_id} is not available: {self.reason}")


class ServerInactive(ServerUnavailable):
    """The MCP server is disabled or not configured, so nothing was sent to it."""

    def __init__(self, server_id: str) -> None:
        self.server_id = server_id
        self.reason = "not active"
        McpError.__init__(
            self,
            f"MCP server {server_id} is not active or no longer registered. "
            "Enable it in the pegboard config (or run `pegboard servers list`) and retry.",
        )


class CatalogError(McpError):
    """The persistent tool catalog could not be read or written."""


class ModelError(PegboardError):
    """A model endpoint answered with an error or with something that is not a usable answer.

    ``endpoint`` is the base URL asked; messages never contain the API key.
    """

    def __init__(self, message: str, *, endpoint: str = "") -> None:
        super().__init__(message)
        self.endpoint = endpoint


class ModelUnavailable(ModelError):
    """The model endpoint could not be reached (refused, unknown host, timed out)."""


class SearchModelError(PegboardError):
    """A tool-search embedding model's files are missing or unreadable (reinstall its extra)."""


class KnowledgeBaseError(PegboardError):
    """A knowledge base cannot be read, written or found; the message names the base and fix."""


class PathNotAllowed(KnowledgeBaseError):
    """A path given to ingest is refused: not a regular file, or a link leading outside."""


class FileTooLarge(KnowledgeBaseError):
    """A file, or the text or data it expands to, is larger than ingestion allows."""


class NotStarted(PegboardError):
    """An integration's MCP tool was called while its servers were not running (the tools
    were used outside their ``async with``). Raised to the application, never to the model."""


class OptionalDependencyMissing(PegboardError, ImportError):
    """An optional extra is not installed; the message names the pip command."""

    def __init__(self, feature: str, extra: str) -> None:
        super().__init__(
            f"{feature} needs an optional dependency. "
            f"Install it with: pip install 'pegboard[{extra}]'"
        )
