"""``kb_search`` and ``kb_list``: the profile's knowledge bases as tools (namespace ``kb``).

Both apply when the profile names at least one knowledge base. The scope is the profile's
``knowledge_bases``; when a request carries no scope (an empty list), the ids the model asks for
are trusted. One base that fails is reported beside the others' results, never instead of them.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from pegboard.config.model import PegboardConfig
from pegboard.core.entry import ToolEntry
from pegboard.core.output import TextPart, ToolOutput
from pegboard.core.scope import ToolApplyScope
from pegboard.core.tool import Tool, ToolContext
from pegboard.errors import KnowledgeBaseError

logger = logging.getLogger("pegboard.kb")
SAMPLE_SOURCES = 8
SAMPLE_CHARS = 80
READ_ONLY = {"readOnlyHint": True, "openWorldHint": False}


def kb_entries(config: PegboardConfig, data_dir: Path) -> list[ToolEntry]:
    """The ``pegboard.tools`` entry point: kb_search and kb_list over ``data_dir``'s store."""
    from pegboard.kb import kb_path

    db = kb_path(data_dir)
    return [
        ToolEntry("kb_search", "kb", _search_tool(db), defer="auto", applies=has_bases),
        ToolEntry("kb_list", "kb", _list_tool(db), defer="auto", applies=has_bases),
    ]


def has_bases(scope: ToolApplyScope) -> bool:
    """Whether the request's profile names any knowledge base."""
    return bool(scope.assistant.knowledge_base_ids)


def _scope_ids(ctx: ToolContext) -> tuple[str, ...]:
    return ctx.scope.assistant.knowledge_base_ids if ctx.scope is not None else ()


def _search_tool(db: Path) -> Tool:
    def kb_search(
        query: str,
        ctx: ToolContext,
        knowledge_base_ids: list[str] | None = None,
        top_k: Annotated[int, Field(ge=1, le=50)] = 5,
        chunks: bool = False,
    ) -> ToolOutput:
        """Search the user's knowledge bases (their notes and documents) by meaning: one result
        per document, best first, with the passage that matched; ask in plain words, the notes
        need not share them.

        Args:
            query: What to find, as a question or a few words.
            knowledge_base_ids: Only these bases (default: every base of this profile).
            top_k: How many results to return.
            chunks: Return passages instead of documents (a document may give several).
        """
        return search_bases(db, query, _scope_ids(ctx), knowledge_base_ids, top_k, chunks=chunks)

    return Tool.from_function(kb_search, annotations=READ_ONLY)


def search_bases(
    db: Path,
    query: str,
    scope: tuple[str, ...],
    requested: list[str] | None,
    top_k: int,
    *,
    chunks: bool = False,
) -> ToolOutput:
    """kb_search's body: scope filter, the bases searched as one collection, deduplicated."""
    from pegboard.kb import api

    warnings: list[str] = []
    if requested:
        names = [n for n in dict.fromkeys(requested) if not scope or n in scope]
        for dropped in (n for n in dict.fromkeys(requested) if scope and n not in scope):
            message = f"knowledge base {dropped!r} is not available to this profile; not searched"
            logger.warning("kb_search: %s", message)
            warnings.append(message)
    elif scope:
        names = list(scope)
    else:
        try:
            names = [b.name for b in api.list_bases(db)]
        except KnowledgeBaseError as exc:
            return _with_warnings([], [str(exc)], [])
    try:
        hits, failed = api.search_bases(db, names, query, top_k=top_k, chunks=chunks)
    except KnowledgeBaseError as exc:
        hits, failed = [], {name: str(exc) for name in names}
    for name, reason in failed.items():
        warnings.append(f"knowledge base {name!r} could not be searched: {reason}")
    results = [
        {
            "id": i,
            "knowledge_base": hit.base,
            "source": hit.source,
            "title": hit.title,
            "snippet": hit.snippet,
            "score": hit.score,
        }
        for i, hit in enumerate(hits, start=1)
    ]
    return _with_warnings(results, warnings, names)


def _with_warnings(
    results: list[dict[str, Any]], warnings: list[str], searched: list[str]
) -> ToolOutput:
    if results:
        text = json.dumps(results, ensure_ascii=False)
    else:
        where = f" in {', '.join(searched)}" if searched else ""
        text = (
            f"No passages found{where}. Call kb_list to see the knowledge bases and what they "
            "hold, then search again with other words or other knowledge_base_ids."
        )
    parts = (TextPart(text), *(TextPart(f"warning: {w}") for w in warnings))
    return ToolOutput(parts=parts, structured={"results": results, "warnings": warnings})


def _list_tool(db: Path) -> Tool:
    def kb_list(ctx: ToolContext, query: str | None = None) -> ToolOutput:
        """List the knowledge bases this profile can search, with a few sources of each.

        Args:
            query: Keep only bases whose name or sources contain this text.
        """
        return list_scope(db, _scope_ids(ctx), query)

    return Tool.from_function(kb_list, annotations=READ_ONLY)


def list_scope(db: Path, scope: tuple[str, ...], query: str | None) -> ToolOutput:
    """kb_list's body: every base in scope (all when the scope is empty), failures included."""
    from pegboard.kb.api import list_bases, sample_sources

    try:
        known = {b.name: b for b in list_bases(db)}
    except KnowledgeBaseError as exc:
        known, failed_store = {}, str(exc)
    else:
        failed_store = ""
    rows: list[dict[str, Any]] = []
    for name in scope or sorted(known):
        info = known.get(name)
        if info is None:
            error = (
                failed_store
                or f"no knowledge base named {name!r}; create it with `pegboard kb add`"
            )
            rows.append({"id": name, "error": error})
            continue
        try:
            sources = sample_sources(db, name, SAMPLE_SOURCES)
        except KnowledgeBaseError as exc:
            rows.append({"id": name, "error": str(exc)})
            continue
        rows.append(
            {
                "id": name,
                "documents": info.documents,
                "sample_sources": [_shorten(s) for s in sources],
            }
        )
    if query:
        needle = query.lower()
        rows = [
            r
            for r in rows
            if needle in r["id"].lower()
            or any(needle in s.lower() for s in r.get("sample_sources", ()))
        ]
    if rows:
        return ToolOutput(parts=(TextPart(json.dumps(rows, ensure_ascii=False)),), structured=rows)
    hint = (
        f"No knowledge base matches {query!r}; call kb_list without a query for all of them."
        if query
        else "No knowledge bases yet; the user can create one with `pegboard kb add NAME PATH`."
    )
    return ToolOutput(parts=(TextPart(hint),), structured=rows)


def _shorten(text: str) -> str:
    return text if len(text) <= SAMPLE_CHARS else text[: SAMPLE_CHARS - 1] + "…"
