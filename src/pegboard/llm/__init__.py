"""Model clients (OpenAI-compatible and Anthropic) and tool-call repair.

The provider SDKs come with the ``llm`` extra (``pip install 'pegboard[llm]'``) and load only
when a client is built.
"""

from pegboard.llm.factory import create_client
from pegboard.llm.repair import Repairer, RepairStats, create_repair
from pegboard.llm.types import (
    ChatResponse,
    Completed,
    Message,
    ModelClient,
    StreamEvent,
    TextDelta,
    ToolCallStarted,
    Usage,
)

__all__ = [
    "ChatResponse",
    "Completed",
    "Message",
    "ModelClient",
    "RepairStats",
    "Repairer",
    "StreamEvent",
    "TextDelta",
    "ToolCallStarted",
    "Usage",
    "create_client",
    "create_repair",
]
