"""The ready snapshot's ``search`` section, and the audit of what the ready path answered
from it (:mod:`pegboard.gateway.early_search`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from pegboard.calls.approval import arguments_fingerprint
from pegboard.calls.audit import CallRecord, emit_record
from pegboard.core.output import TextPart, ToolOutput
from pegboard.deferral.search_text import grouped_text, rows
from pegboard.gateway.early_search import answer_line
from pegboard.mcp.results import output_to_call_result

if TYPE_CHECKING:
    from pegboard.gateway.server import Gateway

TOOL_SEARCH = "tool_search"


def search_section(gateway: Gateway) -> dict[str, Any] | None:
    """What the next start needs to answer a plain first search as this server would, or
    None when it could answer differently (see :mod:`pegboard.gateway.early_search`)."""
    from pegboard.deferral.tool_search import found_lines
    from pegboard.gateway.server import call_response

    surface: Any = gateway.surface
    exposition = getattr(surface, "exposition", None)
    pool = exposition.pool if exposition is not None else None
    entry = surface.tools.get(TOOL_SEARCH) if pool is not None else None
    if pool is None or entry is None or entry.tool.needs_approval or not pool.deferred:
        return None
    if _audit_may_refuse(surface.session.audit):
        return None
    planned = getattr(pool.index, "plan", None)
    plan = planned() if callable(planned) else None
    if plan is None:
        return None
    tools = found_lines(pool)
    sample = tools[:2]
    text = grouped_text(sample)
    output = ToolOutput(parts=(TextPart(text),), structured={"tools": rows(sample)})
    result = output_to_call_result(output)
    versions = [
        v
        for v in HANDSHAKE_PROTOCOL_VERSIONS
        if call_response(0, v, result) == answer_line(0, text, sample)
    ]
    if not versions:
        return None
    return {"versions": versions, "plan": plan, "tools": [list(t) for t in tools]}


def _audit_may_refuse(audit: Any) -> bool:
    """Whether the audit sink checks before each call (``on_failure = "refuse"``): a call it
    would have refused must not be answered before that check can run."""
    check = getattr(audit, "check", None)
    if check is None:
        return False
    owner = getattr(check, "__self__", None)
    return getattr(owner, "on_failure", "refuse") != "warn"


async def audit_early_searches(
    gateway: Gateway,
    searched: Sequence[tuple[int | str, Any, float, float]],
    client: str | None,
) -> None:
    """One record per ``tool_search`` the ready path answered, as the call path writes it."""
    surface: Any = gateway.surface  # a RegistrySurface (its call session)
    session = surface.session
    for request_id, arguments, arrived, duration in searched:
        record = CallRecord(
            time=arrived,
            via="gateway",
            tool=TOOL_SEARCH,
            call_id=f"mcp-{request_id}",
            session_id=session.session_id,
            arguments_sha256=arguments_fingerprint(arguments),
            approval="not_required",
            outcome="ok",
            duration=duration,
            principal=session.principal.subject,
            client=client,
        )
        await emit_record(session.audit, record)
