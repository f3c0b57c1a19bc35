"""The one scenario every integration runs: search, invoke a deferred tool, call a gated one.

A registry of three deferred tools (behind the meta-tools) and one approval-gated tool (never
deferred); scripted model turns in the OpenAI wire format; a log of what actually ran.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pegboard.calls.audit import CallRecord
from pegboard.core.entry import ToolEntry
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ToolApplyScope
from pegboard.core.tool import Tool, ToolContext
from tests.model_server import Call, Turn

FINAL = "Sent the Oslo forecast to ops."
QUERY = {"query": "weather forecast for a city"}
INVOKE = {"name": "weather_lookup", "params": {"city": "Oslo"}}
EMAIL = {"to": "ops@example.com", "body": "Oslo: sunny, 21 C"}


@dataclass
class World:
    """The scenario's registry and what ran, in order."""

    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    records: list[CallRecord] = field(default_factory=list)

    def registry(self) -> ToolRegistry:
        def runner(name: str, answer: Callable[[dict[str, Any]], str]) -> Any:
            def execute(args: dict[str, Any], ctx: ToolContext) -> str:
                self.ran.append((name, dict(args)))
                return answer(args)

            return execute

        city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        deferred = [
            ("weather_lookup", "Current weather forecast for a city.", city),
            ("stock_quote", "Latest stock price for a ticker symbol.", _one("symbol")),
            ("translate_text", "Translate text into another language.", _one("text")),
        ]
        entries = [
            ToolEntry(
                name=name,
                namespace="demo",
                tool=Tool(description=desc, input_schema=schema, execute=runner(name, _sunny)),
                defer="always",
            )
            for name, desc, schema in deferred
        ]
        email_schema = {
            "type": "object",
            "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
            "required": ["to", "body"],
        }
        entries.append(
            ToolEntry(
                name="send_email",
                namespace="demo",
                tool=Tool(
                    description="Send an email.",
                    input_schema=email_schema,
                    execute=runner("send_email", lambda a: f"sent to {a['to']}"),
                    needs_approval=True,
                ),
            )
        )
        return ToolRegistry(entries)

    def audit(self, record: CallRecord) -> None:
        self.records.append(record)

    def audit_trail(self) -> list[tuple[str, str, str, str]]:
        """The records without the route, times and call ids (which differ by framework)."""
        return [(r.tool, r.arguments_sha256, r.approval, r.outcome) for r in self.records]


SCOPE = ToolApplyScope()

EXPECTED_RAN = [
    ("weather_lookup", {"city": "Oslo"}),
    ("send_email", EMAIL),
]


def _one(prop: str) -> dict[str, Any]:
    return {"type": "object", "properties": {prop: {"type": "string"}}, "required": [prop]}


def _sunny(args: dict[str, Any]) -> str:
    return f"{args['city']}: sunny, 21 C"


def turns() -> list[Turn]:
    """The model's side: search, invoke the found tool, email the result, answer."""
    return [
        Turn(tool_calls=[Call("tool_search", QUERY, id="call_search")]),
        Turn(tool_calls=[Call("tool_invoke", INVOKE, id="call_invoke")]),
        Turn(tool_calls=[Call("send_email", EMAIL, id="call_email")]),
        Turn(text=FINAL),
    ]
