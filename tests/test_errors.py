import inspect
import re

import pytest

from pegboard import errors
from pegboard.errors import (
    InvalidToolArguments,
    OptionalDependencyMissing,
    PegboardError,
    ServerInactive,
    ServerUnavailable,
    ToolError,
    ToolNotAllowed,
    ToolNotFound,
)


def drawn_tree() -> dict[str, str]:
    """{class name: parent name} from the tree drawn in the module docstring."""
    tree = (errors.__doc__ or "").split("::", 1)[1]
    parents: dict[str, str] = {}
    by_depth: dict[int, str] = {}
    for line in tree.splitlines():
        match = re.search(r"[A-Z]\w+", line)
        if not match:
            continue
        depth = (match.start() - 4) // 4  # each level of the drawing is 4 columns wide
        by_depth[depth] = match.group()
        if depth:
            parents[match.group()] = by_depth[depth - 1]
    return parents


def test_the_docstring_tree_matches_the_class_hierarchy() -> None:
    classes = {
        name: cls
        for name, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, PegboardError) and cls is not PegboardError
    }
    assert drawn_tree() == {name: cls.__mro__[1].__name__ for name, cls in classes.items()}


def test_every_error_is_caught_by_the_root() -> None:
    for cls in (ToolNotFound, ServerUnavailable, OptionalDependencyMissing):
        assert issubclass(cls, PegboardError)
    assert issubclass(OptionalDependencyMissing, ImportError)


def test_messages_say_what_is_wrong_and_how_to_fix_it() -> None:
    assert str(ToolNotFound("web_serch", ["web_search"])) == (
        "Tool not found: web_serch. Did you mean: web_search?"
    )
    assert str(ToolNotFound("x")) == "Tool not found: x."
    assert str(ToolNotAllowed("kb_list")) == "Tool not available in this request: kb_list"
    assert str(
        InvalidToolArguments("t", ["a: required property missing", "b: expected integer"])
    ) == ('Invalid params for "t": a: required property missing; b: expected integer')
    assert str(ServerUnavailable("gh", "timed out after 10 s")) == (
        "MCP server gh is not available: timed out after 10 s"
    )
    assert str(ServerInactive("gh")).startswith(
        "MCP server gh is not active or no longer registered."
    )
    assert str(OptionalDependencyMissing("PDF extraction", "pdf")) == (
        "PDF extraction needs an optional dependency. Install it with: pip install 'pegboard[pdf]'"
    )


def test_tool_errors_carry_the_tool_name_and_problems() -> None:
    error = InvalidToolArguments("web_search", ["limit: expected integer"])
    assert isinstance(error, ToolError)
    assert error.tool_name == "web_search"
    assert error.problems == ("limit: expected integer",)
    with pytest.raises(PegboardError):
        raise error
