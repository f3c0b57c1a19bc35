import importlib

import pytest

MODULES = ["pegboard.core", "pegboard.core.schema", "pegboard.core.tokens"]


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_every_name_exists(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__)
    for attr in module.__all__:
        assert hasattr(module, attr), attr
