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
