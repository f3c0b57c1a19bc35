"""No class in src/ grows past 25 methods (dunders aside): split it along its seams first."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "pegboard"
MAX_METHODS = 25


def _methods(node: ast.ClassDef) -> list[str]:
    return [
        item.name
        for item in node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
        and not (item.name.startswith("__") and item.name.endswith("__"))
    ]


def class_sizes(root: Path) -> dict[str, int]:
    """``module:Class`` -> its method count, for every class (nested ones too) under root."""
    sizes: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                sizes[f"{path.relative_to(root)}:{node.name}"] = len(_methods(node))
    return sizes


def test_the_walk_counts_methods_and_properties_but_not_dunders(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "class A:\n"
        "    def __init__(self): ...\n"
        "    def a(self): ...\n"
        "    async def b(self): ...\n"
        "    @property\n"
        "    def c(self): ...\n"
        "    x = 1\n"
        "    class Inner:\n"
        "        def d(self): ...\n"
    )
    assert class_sizes(tmp_path) == {"m.py:A": 3, "m.py:Inner": 1}


def test_no_class_in_src_has_more_than_25_methods() -> None:
    sizes = class_sizes(SRC)
    assert sizes  # the walk found the package
    too_big = {name: n for name, n in sizes.items() if n > MAX_METHODS}
    assert too_big == {}
