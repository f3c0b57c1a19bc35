"""What one provider API's format owns: its tool list, call parsing, results, strictness."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, TypeAlias

from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.formats.calls import ToolCall

Api: TypeAlias = Literal["openai_chat", "openai_responses", "anthropic"]


class ProviderFormat(Protocol):
    """One chat API's side of a request: tools out, calls in, results out."""

    @property
    def api(self) -> Api: ...

    def tools(
        self, shown: Sequence[ToolEntry], deferred: Sequence[ToolEntry]
    ) -> list[dict[str, Any]]:
        """The request's ``tools`` (``deferred`` only matters with native deferred loading)."""
        ...

    def parse_calls(self, message: Any) -> list[ToolCall]:
        """The tool calls of a response message (or of its list of calls / blocks)."""
        ...

    def arguments(self, entry: ToolEntry, call: ToolCall) -> dict[str, Any]:
        """The arguments to validate: strict-mode artefacts (nulls for optionals) undone."""
        ...

    def results(
        self, calls: Sequence[ToolCall], outputs: Sequence[ToolOutput]
    ) -> list[dict[str, Any]]:
        """What to append to the conversation for these calls' outputs."""
        ...
