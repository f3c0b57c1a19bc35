"""Package exports loaded on first use (PEP 562), so importing a package costs nothing until
one of its names is read: ``__getattr__ = lazy_exports(__name__, _EXPORTS, globals())``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps each public name to the
    module holding it (a submodule's name, or a dotted module path); a name read once is kept
    in ``namespace`` (the package's globals)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module if "." in module else f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
