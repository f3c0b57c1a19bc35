"""Knowledge bases: local files searched by meaning, kept in one SQLite file per data directory.

``ingest`` adds files (Markdown, text, HTML, PDF) to a named base; ``search_base`` finds the
chunks that answer a question, fusing FTS5 BM25 with static-embedding vectors. Nothing here
imports numpy or a model until a search or an ingestion needs it.
"""

from __future__ import annotations

from pegboard.kb.api import list_bases, remove, sample_sources, search_base
from pegboard.kb.ingest import IngestReport, check_base_name, ingest
from pegboard.kb.search import Hit
from pegboard.kb.store import BaseInfo, kb_path

__all__ = [
    "BaseInfo",
    "Hit",
    "IngestReport",
    "check_base_name",
    "ingest",
    "kb_path",
    "list_bases",
    "remove",
    "sample_sources",
    "search_base",
]
