"""Deferral: which tools the model sees inline, and the meta-tools over the rest.

:func:`apply_defer_exposition` decides with :func:`should_defer` and builds, per request, a
:class:`DeferredPool` behind ``tool_search`` / ``tool_inspect`` / ``tool_invoke`` (and
``tool_exec`` when :class:`ExecSettings` switch it on); the ranking behind ``tool_search`` is
:mod:`pegboard.search`, which knows nothing of meta-tools.
"""

from typing import TYPE_CHECKING

from pegboard._lazy import lazy_exports

# public name -> submodule, loaded on first use (PEP 562): importing one submodule does not
# import its siblings.
_EXPORTS = {
    "DEFAULT_CONTEXT_WINDOW": "defer",
    "DEFER_THRESHOLD_PCT": "defer",
    "DeferDecision": "defer",
    "DeferredPool": "pool",
    "ExecSettings": "tool_exec",
    "Exposition": "apply",
    "MIN_AUTO_DEFER_COUNT": "defer",
    "PROMPT_SECTION_BUDGET_TOKENS": "prompt",
    "apply_defer_exposition": "apply",
    "defer_threshold": "defer",
    "inspect_tool": "tool_inspect",
    "invoke_tool": "tool_invoke",
    "make_tool_inspect": "tool_inspect",
    "make_tool_invoke": "tool_invoke",
    "make_tool_search": "tool_search",
    "meta_tools_overhead_tokens": "defer",
    "render_deferred_section": "prompt",
    "search_pool": "tool_search",
    "should_defer": "defer",
}

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from pegboard.deferral.apply import Exposition, apply_defer_exposition
    from pegboard.deferral.defer import (
        DEFAULT_CONTEXT_WINDOW,
        DEFER_THRESHOLD_PCT,
        MIN_AUTO_DEFER_COUNT,
        DeferDecision,
        defer_threshold,
        meta_tools_overhead_tokens,
        should_defer,
    )
    from pegboard.deferral.pool import DeferredPool
    from pegboard.deferral.prompt import (
        PROMPT_SECTION_BUDGET_TOKENS,
        render_deferred_section,
    )
    from pegboard.deferral.tool_exec import ExecSettings
    from pegboard.deferral.tool_inspect import inspect_tool, make_tool_inspect
    from pegboard.deferral.tool_invoke import invoke_tool, make_tool_invoke
    from pegboard.deferral.tool_search import make_tool_search, search_pool

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "DEFER_THRESHOLD_PCT",
    "MIN_AUTO_DEFER_COUNT",
    "PROMPT_SECTION_BUDGET_TOKENS",
    "DeferDecision",
    "DeferredPool",
    "ExecSettings",
    "Exposition",
    "apply_defer_exposition",
    "defer_threshold",
    "inspect_tool",
    "invoke_tool",
    "make_tool_inspect",
    "make_tool_invoke",
    "make_tool_search",
    "meta_tools_overhead_tokens",
    "render_deferred_section",
    "search_pool",
    "should_defer",
]
