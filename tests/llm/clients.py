"""Helpers for model-client tests: a client of either kind pointed at a scripted server."""

from __future__ import annotations

from typing import Any, Literal

from pegboard.config import ModelConfig
from pegboard.core.entry import ToolEntry
from pegboard.core.tool import Tool
from pegboard.llm import ModelClient, create_client
from tests.model_server import ScriptedModel

Kind = Literal["openai", "anthropic"]
KINDS: tuple[Kind, ...] = ("openai", "anthropic")

ADD = ToolEntry(
    name="add",
    namespace="math",
    tool=Tool(
        description="Add two integers.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    ),
)


def client_for(
    kind: Kind, server: ScriptedModel, *, environ: dict[str, str] | None = None, **options: Any
) -> ModelClient:
    config = ModelConfig(kind=kind, model="m1", base_url=server.url, **options)
    return create_client(config, name="test", environ=environ or {})
