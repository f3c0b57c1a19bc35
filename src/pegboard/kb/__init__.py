"""Knowledge bases: local files searched by meaning, kept in one SQLite file per data directory.

``ingest`` adds files (Markdown, text, HTML, PDF) to a named base; ``search_bases`` finds the
documents (or chunks) that answer a question, fusing FTS5 BM25 with embedding vectors. Nothing here
imports numpy or a model until a search or an ingestion needs it.
"""

from pathlib import Path
from typing import TYPE_CHECKING

from pegboard._lazy import lazy_exports

# The store's file in a data directory: here, not in ``store``, so that the kb tools' entry
# point (run by every command that builds a runtime) names it without importing the store.
KB_FILENAME = "kb.sqlite3"


def kb_path(data_dir: Path) -> Path:
    """The store file of a data directory."""
    return data_dir / KB_FILENAME


# public name -> submodule, loaded on first use (PEP 562): importing one submodule does not
# import its siblings.
_EXPORTS = {
    "BaseInfo": "store",
    "Hit": "search",
    "IngestReport": "ingestion",
    "check_base_name": "ingestion",
    "ingest": "ingestion",
    "list_bases": "api",
    "remove": "api",
    "sample_sources": "api",
    "search_base": "api",
    "search_bases": "api",
}

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from pegboard.kb.api import list_bases, remove, sample_sources, search_base, search_bases
    from pegboard.kb.ingestion import IngestReport, check_base_name, ingest
    from pegboard.kb.search import Hit
    from pegboard.kb.store import BaseInfo

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
    "search_bases",
]
