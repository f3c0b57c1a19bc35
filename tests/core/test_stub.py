from typing import Any, Literal

from pydantic import BaseModel

from pegboard import Tool, ToolDefinition
from pegboard.core.stub import render_stub


def stub_of(*args: Any, **kwargs: Any) -> str:
    return render_stub(ToolDefinition(*args, **kwargs))


NESTED: dict[str, Any] = {
    "type": "object",
    "$defs": {
        "Unit": {"type": "string", "enum": ["day", "week"]},
        "Range": {
            "type": "object",
            "description": "Date range\nignored second line",
            "properties": {
                "start": {"type": "string", "description": "ISO date"},
                "unit": {"$ref": "#/$defs/Unit"},
            },
            "required": ["start"],
        },
    },
    "properties": {
        "query": {"type": "string", "description": "What to look for\nMore detail."},
        "limit": {"type": "integer", "description": "Max results", "default": 10},
        "range": {"anyOf": [{"$ref": "#/$defs/Range"}, {"type": "null"}]},
        "tags": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"key": {"type": "string"}, "weight": {"type": "number"}},
                "required": ["key"],
            },
        },
        "labels": {"type": "object", "additionalProperties": {"type": "integer"}},
        "mode": {"const": "fast"},
        "anything": {},
        "ids": {"type": ["string", "integer"]},
    },
    "required": ["query", "range"],
}

NESTED_GOLDEN = """\
/**
 * Search the web.
 * Returns ranked results.
 *
 * @param {Object} params - Parameters
 * @param {*} [params.anything]
 * @param {string|integer} [params.ids]
 * @param {Object<string, integer>} [params.labels]
 * @param {integer} [params.limit] - Max results (default: 10)
 * @param {"fast"} [params.mode]
 * @param {string} params.query - What to look for (required)
 * @param {Object|null} params.range - Date range (required)
 * @param {string} params.range.start - ISO date (required)
 * @param {"day"|"week"} [params.range.unit]
 * @param {Array<Object>} [params.tags]
 * @param {string} params.tags[].key (required)
 * @param {number} [params.tags[].weight]
 * @returns {Object} - Search results
 * @returns {integer} [returns.total]
 * @returns {Array<string>} returns.urls - Result URLs
 */
function web_search(params) {}"""


def test_nested_schema_stub_matches_golden_text() -> None:
    output = {
        "type": "object",
        "description": "Search results",
        "properties": {
            "urls": {"type": "array", "items": {"type": "string"}, "description": "Result URLs"},
            "total": {"type": "integer"},
        },
        "required": ["urls"],
    }
    stub = stub_of(
        "web_search", "Search the web.\nReturns ranked results.", NESTED, output_schema=output
    )
    assert stub == NESTED_GOLDEN


def test_stub_without_description_or_properties_is_minimal() -> None:
    assert stub_of("tool_x", "", {"type": "object"}) == (
        "/**\n * @param {Object} params - Parameters\n */\nfunction tool_x(params) {}"
    )


def test_nesting_stops_at_depth_five() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for name in "fedcba":
        schema = {"type": "object", "properties": {name: schema}, "required": [name]}
    lines = stub_of("deep", "Deep.", schema).splitlines()
    params = [line for line in lines if "@param" in line][1:]
    assert params == [
        " * @param {Object} params.a (required)",
        " * @param {Object} params.a.b (required)",
        " * @param {Object} params.a.b.c (required)",
        " * @param {Object} params.a.b.c.d (required)",
        " * @param {Object} params.a.b.c.d.e (required)",
    ]


def test_recursive_refs_terminate() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"child": {"$ref": "#/$defs/Node"}, "v": {"type": "integer"}},
            }
        },
        "properties": {"root": {"$ref": "#/$defs/Node"}},
    }
    params = [line for line in stub_of("t", "T.", schema).splitlines() if "params." in line]
    assert params[:3] == [
        " * @param {Object} [params.root]",
        " * @param {Object} [params.root.child]",
        " * @param {Object} [params.root.child.child]",
    ]
    assert params[-1] == " * @param {integer} [params.root.v]"
    assert len(params) == 9


def test_comment_terminator_in_descriptions_is_escaped() -> None:
    schema = {"type": "object", "properties": {"p": {"type": "string", "description": "a */ b"}}}
    stub = stub_of("t", "Ends */ early", schema)
    assert " * Ends *\\/ early" in stub
    assert " * @param {string} [params.p] - a *\\/ b" in stub
    assert stub.count("*/") == 1


def test_stub_of_a_function_tool_shows_pydantic_types_and_return() -> None:
    class Filter(BaseModel):
        since: str
        kinds: list[Literal["pdf", "html"]] = []

    def find(query: str, filter: Filter | None = None, limit: int = 5) -> list[str]:
        """Find documents.

        Args:
            query: Words to match.
            limit: How many.
        """
        return []

    tool = Tool.from_function(find)
    assert stub_of("find", tool.description, tool.input_schema, tool.output_schema) == (
        "/**\n"
        " * Find documents.\n"
        " *\n"
        " * @param {Object} params - Parameters\n"
        " * @param {Object|null} [params.filter] (default: null)\n"
        ' * @param {Array<"pdf"|"html">} [params.filter.kinds] (default: [])\n'
        " * @param {string} params.filter.since (required)\n"
        " * @param {integer} [params.limit] - How many. (default: 5)\n"
        " * @param {string} params.query - Words to match. (required)\n"
        " * @returns {Array<string>}\n"
        " */\n"
        "function find(params) {}"
    )


def test_long_enums_and_summaries_are_bounded() -> None:
    schema = {
        "type": "object",
        "properties": {
            "id": {"enum": [f"v{i}" for i in range(103)], "description": "x" * 400 + "\nmore"},
        },
    }
    [line] = [line for line in stub_of("t", "T.", schema).splitlines() if "params.id" in line]
    values = "|".join(f'"v{i}"' for i in range(100))
    assert line == f" * @param {{{values}|...(3 more)}} [params.id] - {'x' * 299}…"
