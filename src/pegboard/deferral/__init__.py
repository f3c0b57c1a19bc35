"""Deferral: which tools the model sees inline, and the meta-tools over the rest.

:func:`apply_defer_exposition` decides with :func:`should_defer` and builds, per request, a
:class:`DeferredPool` behind ``tool_search`` / ``tool_inspect`` / ``tool_invoke`` (and
``tool_exec`` when :class:`ExecSettings` switch it on); the ranking behind ``tool_search`` is
:mod:`pegboard.search`, which knows nothing of meta-tools.
"""

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
