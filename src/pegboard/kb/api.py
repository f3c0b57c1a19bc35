"""The operations on the store that the CLI and the kb tools share, each on its own connection.

Every function opens the store file, does one thing and closes it, so callers in worker
threads never share a connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pegboard.errors import KnowledgeBaseError
from pegboard.kb import store
from pegboard.kb.embedding import load_embedder
from pegboard.kb.search import Hit, Mode, search


def search_base(
    db_path: Path,
    base: str,
    query: str,
    *,
    top_k: int = 5,
    mode: Mode = "fused",
    chunks: bool = False,
) -> list[Hit]:
    """The best ``top_k`` documents of ``base`` for ``query`` (chunks when ``chunks``)."""
    hits, failed = search_bases(db_path, [base], query, top_k=top_k, mode=mode, chunks=chunks)
    if failed:
        raise KnowledgeBaseError(failed[base])
    return hits


def search_bases(
    db_path: Path,
    bases: Sequence[str],
    query: str,
    *,
    top_k: int = 5,
    mode: Mode = "fused",
    chunks: bool = False,
) -> tuple[list[Hit], dict[str, str]]:
    """The best ``top_k`` documents (or chunks) of ``bases`` searched as one collection, and
    the bases that could not be searched, each with the reason (the others are still searched).
    """
    if not query.strip():
        raise KnowledgeBaseError("the query is empty; ask in a few words what to find")
    failed: dict[str, str] = {}
    with store.connect(db_path) as conn:
        usable: list[str] = []
        for base in dict.fromkeys(bases):
            try:
                model, _ = store.base_model(conn, base)
                load_embedder(model)
            except KnowledgeBaseError as exc:
                failed[base] = str(exc)
                continue
            usable.append(base)
        if not usable:
            return [], failed
        hits = search(conn, db_path, usable, query, top_k=top_k, mode=mode, chunks=chunks)
    return hits, failed


def list_bases(db_path: Path) -> list[store.BaseInfo]:
    """Every base in the store (none when the store file does not exist yet)."""
    if not db_path.is_file():
        return []
    with store.connect(db_path) as conn:
        return store.list_bases(conn)


def sample_sources(db_path: Path, base: str, limit: int) -> list[str]:
    """Up to ``limit`` sources of ``base``, sorted (raises when the base does not exist)."""
    with store.connect(db_path) as conn:
        store.base_model(conn, base)
        return store.sample_sources(conn, base, limit)


def remove(db_path: Path, base: str, path: str | None = None) -> int:
    """Remove ``base``, or only its documents at or under ``path``; returns documents removed."""
    with store.connect(db_path) as conn:
        return store.remove(conn, base, path)
