"""``tool_exec``'s engine: model-written Python in the Monty sandbox, over given tools.

The engine knows nothing of meta-tools: :func:`run_code` takes tools as plain async callables.
:func:`make_tool_exec` (in :mod:`pegboard.sandbox.tool`) builds the ``tool_exec`` tool on top.
Monty itself is imported only when a run starts (``pip install 'pegboard[exec]'``).
"""

from typing import TYPE_CHECKING

from pegboard._lazy import lazy_exports

# public name -> submodule, loaded on first use (PEP 562): listing the meta-tools reads
# pegboard.sandbox.tool's definitions without starting the engine's imports.
_EXPORTS = {
    "ExecLimits": "limits",
    "ExecResult": "result",
    "Sandbox": "engine",
    "ToolCallRecord": "result",
    "default_sandbox": "engine",
    "run_code": "engine",
}


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:
    from pegboard.sandbox.engine import Sandbox, default_sandbox, run_code
    from pegboard.sandbox.limits import ExecLimits
    from pegboard.sandbox.result import ExecResult, ToolCallRecord

__all__ = [
    "ExecLimits",
    "ExecResult",
    "Sandbox",
    "ToolCallRecord",
    "default_sandbox",
    "run_code",
]
