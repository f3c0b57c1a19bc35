"""Meta-tools over the deferred pool: ``tool_search``, ``tool_inspect``, ``tool_invoke``.

They are built per request by :func:`pegboard.exposition.apply_defer_exposition` around a
:class:`DeferredPool`; the search index behind ``tool_search`` is a :class:`SearchIndex`
(default: :func:`pegboard.meta.ranking.default_index`), kept in step with the registry by
:func:`registry_index`.
"""

from pegboard.meta.index import SearchHit, SearchIndex
from pegboard.meta.inspect import inspect_tool, make_tool_inspect
from pegboard.meta.invoke import invoke_tool, make_tool_invoke
from pegboard.meta.ledger import InspectLedger
from pegboard.meta.pool import DeferredPool
from pegboard.meta.search import make_tool_search, search_pool
from pegboard.meta.sync import SyncedIndex, registry_index

__all__ = [
    "DeferredPool",
    "InspectLedger",
    "SearchHit",
    "SearchIndex",
    "SyncedIndex",
    "inspect_tool",
    "invoke_tool",
    "make_tool_inspect",
    "make_tool_invoke",
    "make_tool_search",
    "registry_index",
    "search_pool",
]
