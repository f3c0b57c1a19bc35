"""Wire names: what the model emits in a tool call.

* built-ins: ``web_search``, ``web_fetch``, ``kb_search``, ``kb_list``;
* meta-tools: ``tool_search``, ``tool_inspect``, ``tool_invoke``, ``tool_exec``;
* MCP tools: ``mcp__<server>__<tool>``.

An MCP segment is kept verbatim when it is already legal in OpenAI's and Anthropic's tool names
(``^[a-zA-Z0-9_-]{1,64}$``): ``[A-Za-z0-9-]+`` parts joined by single underscores, e.g. ``github`` /
``create_issue`` / ``get-weather``, as Claude Code does. Anything else (dots, spaces, CJK, emoji,
double underscores, names too long for 64 characters) is camelCased and the whole name gets a
``__<16 hex>`` suffix from sha256(server id, NUL, tool name). Verbatim names contain ``__`` exactly
twice and suffixed ones exactly three times, so the two forms never meet, and suffixed names differ
by hash. The server segment comes from the server *id*, so renaming a server never changes a name.
Nothing parses a wire name back: the registry keeps a map to (server id, tool name).

Before hyphens were kept, a hyphenated segment was camelCased and suffixed like the rest;
:func:`legacy_mcp_tool_name` gives that older name, and the registry resolves it to the
current one, so approvals, config lists and clients' cached lists that use it keep working.
"""

from __future__ import annotations

import builtins
import hashlib
import keyword
import re
from collections.abc import Iterable

BUILTIN_TOOL_NAMES = frozenset({"web_search", "web_fetch", "kb_search", "kb_list"})
TOOL_INVOKE = "tool_invoke"
META_TOOL_NAMES = frozenset({"tool_search", "tool_inspect", TOOL_INVOKE, "tool_exec"})
RESERVED_TOOL_NAMES = BUILTIN_TOOL_NAMES | META_TOOL_NAMES

MAX_WIRE_NAME_LENGTH = 64
SUFFIX_HEX_LENGTH = 16
WIRE_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

_VERBATIM_SEGMENT = re.compile(r"^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$")
_LEGACY_VERBATIM_SEGMENT = re.compile(r"^[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*$")
_WORD = re.compile(r"[A-Za-z0-9]+")
_PREFIX = "mcp__"
_SEP = "__"


def to_camel_case(text: str) -> str:
    """ASCII camelCase: separators and non-ASCII are dropped, the next word is capitalised."""
    words: list[str] = _WORD.findall(text)
    if not words:
        return ""
    first, rest = words[0], words[1:]
    return first[0].lower() + first[1:] + "".join(w[0].upper() + w[1:] for w in rest)


def identity_digest(server_id: str, tool_name: str) -> str:
    # "id NUL name" is unambiguous unless a part holds NUL itself ("\0" + "" vs "" + "\0");
    # such pairs (which config and listing validation refuse anyway) get a length-prefixed
    # input, so every name already issued keeps its digest.
    if "\0" in server_id or "\0" in tool_name:
        raw = f"{len(server_id)}:{server_id}\0{tool_name}".encode()
    else:
        raw = f"{server_id}\0{tool_name}".encode()
    return hashlib.sha256(raw).hexdigest()[:SUFFIX_HEX_LENGTH]


def mcp_tool_name(server_id: str, server_name: str | None, tool_name: str) -> str:
    """The wire name of an MCP tool: identifier-safe, <= 64 characters, deterministic.

    ``server_name`` is the display name; it is accepted for symmetry with the catalog but does
    not enter the name, so that renaming a server keeps every wire name (and approval) stable.
    """
    del server_name
    return _wire_name(server_id, tool_name, _VERBATIM_SEGMENT)


def legacy_mcp_tool_name(server_id: str, tool_name: str) -> str:
    """The wire name pegboard gave this tool before hyphens were kept (often the same)."""
    return _wire_name(server_id, tool_name, _LEGACY_VERBATIM_SEGMENT)


def _wire_name(server_id: str, tool_name: str, verbatim: re.Pattern[str]) -> str:
    if verbatim.match(server_id) and verbatim.match(tool_name):
        plain = f"{_PREFIX}{server_id}{_SEP}{tool_name}"
        if len(plain) <= MAX_WIRE_NAME_LENGTH:
            return plain
    suffix = _SEP + identity_digest(server_id, tool_name)
    server_slug = to_camel_case(server_id) or "server"
    tool_slug = to_camel_case(tool_name) or "tool"
    budget = MAX_WIRE_NAME_LENGTH - len(_PREFIX) - len(_SEP) - len(suffix)
    server_slug = server_slug[: max(8, budget - len(tool_slug))][:20]
    tool_slug = tool_slug[: budget - len(server_slug)]
    return f"{_PREFIX}{server_slug}{_SEP}{tool_slug}{suffix}"


MAX_MCP_TOOL_NAME_LENGTH = 128  # MCP: names are 1-128 characters
# Characters a person cannot see (controls, zero-width, bidi overrides, tags, soft hyphen):
# a name holding one would read as another tool's name in a list, an approval or a log.
_NAME_INVISIBLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069"
    "\ufeff\U000e0000-\U000e007f]"
)


def mcp_tool_name_problem(name: object) -> str | None:
    """Why pegboard refuses ``name`` as an MCP tool name, or None.

    Refused: empty, over 128 characters, and names that would mislead a person: invisible
    characters (named by code point) or a space at either end. Any other name is served,
    spaces and all: :func:`mcp_tool_name` gives it a legal wire name with the stable hash
    suffix, and calls reach the server under the name it listed.
    """
    if not isinstance(name, str) or not name:
        return "the tool name is empty"
    if len(name) > MAX_MCP_TOOL_NAME_LENGTH:
        return f"the tool name is {len(name)} characters long (MCP allows 1-128)"
    if (found := _NAME_INVISIBLE.search(name)) is not None:
        return f"the tool name contains an invisible character (U+{ord(found.group()):04X})"
    if name != name.strip(" "):
        return "the tool name begins or ends with a space"
    return None


def escape_tool_name(name: str) -> str:
    """``name`` quoted, its invisible characters shown as ``\\uXXXX`` (for people to read)."""
    shown = _NAME_INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", name)
    return f"'{shown}'"


def is_valid_wire_name(name: str) -> bool:
    return bool(WIRE_NAME_RE.match(name))


MCP_NAMESPACE_PREFIX = "mcp:"


def mcp_namespace(server: str) -> str:
    """The namespace (``mcp:<server id>``) or label (``mcp:<display name>``) of a server."""
    return f"{MCP_NAMESPACE_PREFIX}{server}"


def strip_mcp_namespace(namespace: str) -> str:
    """``mcp:github`` -> ``github``; anything else unchanged."""
    return namespace.removeprefix(MCP_NAMESPACE_PREFIX)


def is_mcp_namespace(namespace: str) -> bool:
    return namespace.startswith(MCP_NAMESPACE_PREFIX)


# Names a tool must not take inside tool_exec: Python's builtins (a tool named ``len`` would
# never be reached, the builtin wins) and the helpers the sandbox binds itself.
SANDBOX_RESERVED_NAMES = frozenset(dir(builtins)) | {"gather", "asyncio"}
_NON_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]+")


def python_aliases(names: Iterable[str]) -> dict[str, str]:
    """Wire name -> the Python identifier that calls it inside ``tool_exec``.

    A name that is already an identifier, not a keyword and not a builtin is kept; any other
    gets its illegal characters replaced by ``_`` and a suffix from sha256(wire name),
    lengthened until it collides with no other name of the set. The alias depends only on
    the wire name and the names around it, so the same request always gets the same aliases.
    """
    ordered = sorted(set(names))
    kept = {n for n in ordered if _is_plain_identifier(n)}
    taken = set(kept)
    aliases: dict[str, str] = {n: n for n in kept}
    for name in ordered:
        if name in kept:
            continue
        base = _NON_IDENTIFIER.sub("_", name).strip("_") or "tool"
        if base[0].isdigit():
            base = f"t_{base}"
        digest = hashlib.sha256(name.encode()).hexdigest()
        width = 8
        alias = f"{base}_{digest[:width]}"
        while alias in taken:
            width += 4  # past 64 hex digits only a crafted name can collide: count on
            alias = f"{base}_{digest[:width]}" if width <= 64 else f"{base}_{digest}_{width}"
        taken.add(alias)
        aliases[name] = alias
    return aliases


def _is_plain_identifier(name: str) -> bool:
    return (
        name.isidentifier()
        and name.isascii()
        and not keyword.iskeyword(name)
        and name not in SANDBOX_RESERVED_NAMES
    )
