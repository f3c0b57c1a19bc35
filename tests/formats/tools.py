"""Entries shared by the adapter tests: a plain tool and a strict one, built from functions."""

from pegboard.core.entry import ToolEntry
from pegboard.core.output import ImagePart, TextPart, ToolOutput
from pegboard.core.tool import Tool

PNG_1PX = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
    "awAAAABJRU5ErkJggg=="
)


def search(query: str, limit: int = 3) -> list[str]:
    """Search the web.

    Args:
        query: What to look for.
        limit: How many results.
    """
    return [f"{query} {i}" for i in range(limit)]


def plot(title: str, points: list[float] | None = None) -> ToolOutput:
    """Plot points as a PNG."""
    return ToolOutput(
        parts=(TextPart(f"{title}: {len(points or [])} points"), ImagePart(PNG_1PX, "image/png"))
    )


def search_entry() -> ToolEntry:
    return ToolEntry("web_search", "web", Tool.from_function(search))


def strict_plot_entry() -> ToolEntry:
    return ToolEntry("mcp__charts__plot", "mcp:charts", Tool.from_function(plot, strict=True))
