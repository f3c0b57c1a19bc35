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
