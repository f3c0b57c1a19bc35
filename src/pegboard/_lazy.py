"""Package exports loaded on first use (PEP 562), so importing a package costs nothing until
one of its names is read: ``__getattr__ = lazy_exports(__name__, _EXPORTS, globals())``;
and :func:`import_burst`, for the start of a process that imports much at once."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
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


@contextmanager
def import_burst() -> Iterator[None]:
    """The cyclic garbage collector off while a burst of imports runs, then everything the
    process holds frozen (:func:`gc.freeze`) and the collector back as it was.

    Importing pydantic models and the MCP SDK allocates hundreds of thousands of objects that
    live as long as the process; with the collector on, each of its passes during the burst
    walks all of them again and finds almost nothing (``import mcp.types``: 0.86 s of CPU,
    0.72 s with the collector off). Frozen, later passes skip them too, including the ones at
    interpreter exit. The few cyclic leftovers of the burst (about 900 objects, 0.5 MB after
    the gateway's imports) stay allocated. A burst that imported nothing (``pegboard serve``
    run again inside one process, as tests do) freezes nothing. Nested bursts end with the
    outermost.
    """
    enabled = gc.isenabled()
    modules = len(sys.modules)
    gc.disable()
    try:
        yield
    finally:
        if len(sys.modules) != modules:
            gc.freeze()
        if enabled:
            gc.enable()


class LazyModule:
    """A stand-in for module ``name``, imported on the first attribute read:
    ``np = LazyModule("numpy")`` (under ``if not TYPE_CHECKING``) lets a module that uses numpy
    in some functions be imported, and run its other functions, without numpy."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(import_module(self._name), attribute)
