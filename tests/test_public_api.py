import pytest

import pegboard


def test_all_is_sorted_and_importable() -> None:
    assert pegboard.__all__ == sorted(pegboard.__all__)
    for name in pegboard.__all__:
        assert hasattr(pegboard, name), name


def test_core_nouns_import_from_package_root() -> None:
    from pegboard import Tool, ToolApplyScope, ToolEntry, ToolRegistry

    assert {Tool.__name__, ToolApplyScope.__name__, ToolEntry.__name__, ToolRegistry.__name__} == {
        "Tool",
        "ToolApplyScope",
        "ToolEntry",
        "ToolRegistry",
    }


def test_importing_pegboard_loads_neither_the_mcp_sdk_numpy_nor_the_tokenizer() -> None:
    import json
    import subprocess
    import sys

    heavy = ["mcp", "mcp_types", "numpy", "bpe_openai", "openai", "anthropic", "wordllama"]
    code = (
        "import json, sys, pegboard; "
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert json.loads(out.stdout) == []


def test_the_error_tree_is_exported_under_one_root() -> None:
    errors = [getattr(pegboard, n) for n in pegboard.__all__ if n.endswith(("Error", "Denied"))]
    errors += [pegboard.ToolNotFound, pegboard.ToolNotAllowed, pegboard.ApprovalRequired]
    errors += [pegboard.ServerInactive, pegboard.ServerUnavailable, pegboard.CatalogError]
    errors += [pegboard.OptionalDependencyMissing, pegboard.InvalidToolArguments]

    assert all(issubclass(e, pegboard.PegboardError) for e in errors)


def test_every_error_class_is_exported_and_the_tree_has_one_root() -> None:
    import inspect

    import pegboard.errors

    defined = {
        name
        for name, value in vars(pegboard.errors).items()
        if inspect.isclass(value) and issubclass(value, Exception)
    }
    assert defined <= set(pegboard.__all__)
    assert issubclass(pegboard.McpToolError, pegboard.ToolExecutionError)
    assert issubclass(pegboard.ConfigError, pegboard.UserError)


def test_dead_names_are_gone() -> None:
    for name in ("Assistant", "default_registry"):
        assert name not in pegboard.__all__
    assert not hasattr(pegboard.ToolApplyScope(), "has_file_attachments")


def test_a_tool_made_from_a_function_carries_its_name_and_namespace() -> None:
    from pegboard import Tool, ToolEntry, ToolRegistry, UserError

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    registry = ToolRegistry([Tool.from_function(add, namespace="math")])
    entry = registry.get_by_name("add")
    assert entry is not None
    assert (entry.name, entry.namespace) == ("add", "math")
    renamed = ToolEntry.of(Tool.from_function(add, name="plus", namespace="math"))
    assert (renamed.name, renamed.definition.name) == ("plus", "plus")
    with pytest.raises(UserError) as caught:
        ToolRegistry([Tool.from_function(add)])
    assert str(caught.value) == (
        "tool 'add' has no namespace: give it one (Tool.from_function(fn, "
        'namespace="math")) or register a ToolEntry(name, namespace, tool)'
    )
