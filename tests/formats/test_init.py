import importlib

import pytest

import pegboard.formats

MODULES = [
    "pegboard.formats",
    "pegboard.formats.anthropic",
    "pegboard.formats.mcp",
    "pegboard.formats.openai",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_every_name_exists(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__)
    for attr in module.__all__:
        assert hasattr(module, attr), attr


def test_the_package_re_exports_every_provider_function() -> None:
    exported = set(pegboard.formats.__all__)
    for name in MODULES[1:4]:
        assert set(importlib.import_module(name).__all__) <= exported, name
