import pytest

from pegboard.core.registry import ToolRegistry
from pegboard.core.tool import ToolContext
from pegboard.deferral import apply_defer_exposition, inspect_tool
from pegboard.deferral.definitions import INSPECT_DESCRIPTION_EXEC, TOOL_INSPECT
from pegboard.deferral.tool_exec import ExecSettings
from pegboard.deferral.tool_inspect import make_tool_inspect
from pegboard.errors import ToolError, ToolNotAllowed, ToolNotFound
from tests.deferral.factories import entry, pool_of, tools_of

STUB = """\
/**
 * Search inside server s1.
 *
 * @param {Object} params - Parameters
 * @param {integer} [params.limit] (default: 10)
 * @param {string} params.query - What to look for (required)
 */
function mcp__s1__t(params) {}"""


def test_the_injected_tool_is_named_tool_inspect_and_describes_itself() -> None:
    tool = make_tool_inspect(pool_of(entry("x", defer="always")))
    assert TOOL_INSPECT == "tool_inspect"
    assert tool.description == (
        "Show the signature of one deferred tool (its parameters, types, required fields and "
        "allowed values) as a JSDoc stub."
    )
    assert tool.input_schema == {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "Exact tool name"}},
        "required": ["name"],
        "additionalProperties": False,
        "examples": [{"name": "mcp__github__create_issue"}],
    }


def test_the_stub_shows_the_signature() -> None:
    target = entry(
        "mcp__s1__t", namespace="mcp:s1", defer="always", description="Search inside server s1."
    )
    pool = pool_of(target)
    out = inspect_tool(pool, "mcp__s1__t")
    assert out.as_text() == STUB
    assert out.is_error is False


def test_a_tool_outside_the_allowed_set_is_refused() -> None:
    allowed = entry("a", defer="always")
    registry = ToolRegistry([allowed, entry("b", defer="always")])
    pool = apply_defer_exposition(tools_of(allowed), registry, None).pool
    assert pool is not None
    with pytest.raises(ToolNotAllowed, match=r"^Tool not available in this request: b$"):
        inspect_tool(pool, "b")


def test_an_unknown_tool_is_not_found_with_suggestions() -> None:
    pool = pool_of(entry("web_search", defer="always"), entry("web_fetch", defer="always"))
    with pytest.raises(
        ToolNotFound, match=r"^Tool not found: web_serch\. Did you mean: web_search"
    ):
        inspect_tool(pool, "web_serch")


def test_meta_tools_cannot_be_inspected_through_tool_inspect() -> None:
    pool = pool_of(entry("web_search", defer="always"))
    with pytest.raises(ToolError, match="tool_inspect cannot act on the meta-tool tool_invoke"):
        inspect_tool(pool, "tool_invoke")


@pytest.mark.anyio
async def test_the_tool_output_is_text() -> None:
    pool = pool_of(entry("web_search", defer="always", description="Search the web."))
    out = await make_tool_inspect(pool).run({"name": "web_search"}, ToolContext())
    assert out.as_text().startswith("/**\n * Search the web.")
    assert out.structured is None


PY_STUB = '''\
async def mcp__s1__t(*, query: str, limit: int = 10) -> Any:
    """Search inside server s1.

    query: What to look for
    """'''


def test_with_tool_exec_on_the_stub_is_the_python_function_code_calls() -> None:
    target = entry(
        "mcp__s1__t", namespace="mcp:s1", defer="always", description="Search inside server s1."
    )
    pool = pool_of(target, tool_exec=ExecSettings())
    out = inspect_tool(pool, "mcp__s1__t", lambda name: name)
    assert out.as_text() == PY_STUB


@pytest.mark.anyio
async def test_a_name_that_is_no_identifier_shows_its_code_alias_and_its_tool_invoke_name() -> None:
    target = entry("mcp__s1__get-env", namespace="mcp:s1", defer="always", description="Read.")
    registry = ToolRegistry([target])
    exposition = apply_defer_exposition(tools_of(target), registry, None, tool_exec=ExecSettings())
    inspect = exposition.tools["tool_inspect"]
    assert inspect.description == INSPECT_DESCRIPTION_EXEC
    out = await inspect.run({"name": "mcp__s1__get-env"}, ToolContext(call_id="c"))
    assert out.as_text().splitlines()[:2] == [
        "# tool_invoke name: mcp__s1__get-env",
        "async def mcp__s1__get_env_47ba205b(*, query: str, limit: int = 10) -> Any:",
    ]
