"""Deferred exposition: which tools the model sees inline, and the meta-tools for the rest."""

from pegboard.exposition.apply import Exposition, apply_defer_exposition
from pegboard.exposition.defer import (
    DEFER_THRESHOLD_PCT,
    FALLBACK_CONTEXT_WINDOW,
    MIN_AUTO_DEFER_COUNT,
    DeferDecision,
    defer_threshold,
    meta_tools_overhead_tokens,
    should_defer,
)
from pegboard.exposition.prompt import (
    PROMPT_SECTION_BUDGET_TOKENS,
    NamespaceStatus,
    render_deferred_section,
)

__all__ = [
    "DEFER_THRESHOLD_PCT",
    "FALLBACK_CONTEXT_WINDOW",
    "MIN_AUTO_DEFER_COUNT",
    "PROMPT_SECTION_BUDGET_TOKENS",
    "DeferDecision",
    "Exposition",
    "NamespaceStatus",
    "apply_defer_exposition",
    "defer_threshold",
    "meta_tools_overhead_tokens",
    "render_deferred_section",
    "should_defer",
]
