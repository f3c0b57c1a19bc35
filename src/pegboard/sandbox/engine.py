"""Run model-written Python in Monty, with only the given tools visible and every limit set.

Monty (``pydantic-monty``) interprets a Python subset in worker subprocesses: no files,
environment, network or imports beyond its own small standard library, and a crashed or
killed worker is replaced by the pool. A :class:`Sandbox` owns one pool (spawning a worker
costs ~20 ms, a checkout of a warm one well under 1 ms); each run checks out a fresh session,
so nothing a run defines is seen by the next.
"""

from __future__ import annotations

import asyncio
import atexit
import gc
import importlib.util
import time
import weakref
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

import anyio

from pegboard.core.names import python_aliases
from pegboard.errors import ConfigError, OptionalDependencyMissing
from pegboard.sandbox.bridge import RunState, SandboxTool
from pegboard.sandbox.limits import ExecLimits, monty_limits, monty_os_policy
from pegboard.sandbox.result import ExecResult, json_size

if TYPE_CHECKING:
    from pydantic_monty import AsyncMonty

# Bound before the code, on its own line, so a traceback's line N is line N - 1 of the feed.
_PRELUDE = "from asyncio import gather\n"
_PRELUDE_LINES = 1


class Sandbox:
    """A pool of Monty workers shared by runs. Use one per process (:func:`default_sandbox`).

    ``worker_timeout`` is the pool's last resort: a worker silent that long within one turn
    (frozen, or stuck where Monty's own clock cannot see) is killed; keep it above
    ``ExecLimits.cpu_seconds``.
    """

    def __init__(self, *, max_workers: int = 2, worker_timeout: float = 10.0) -> None:
        self.max_workers = max_workers
        self.worker_timeout = worker_timeout
        self._pool: AsyncMonty | None = None
        self._lock = anyio.Lock()

    async def _started(self) -> AsyncMonty:
        async with self._lock:
            if self._pool is None:
                pool = _monty().AsyncMonty(
                    min_processes=1,
                    max_processes=self.max_workers,
                    request_timeout=self.worker_timeout,
                )
                await pool.__aenter__()
                self._pool = pool
                _register_for_exit(self)
            return self._pool

    async def start(self) -> None:
        """Spawn the first worker now (~20 ms) instead of on the first run; optional."""
        await self._started()

    async def aclose(self) -> None:
        """Stop the workers; a later run starts a new pool."""
        async with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.__aexit__(None, None, None)

    async def run(
        self, code: str, tools: Mapping[str, SandboxTool], limits: ExecLimits
    ) -> ExecResult:
        """Run ``code`` with ``tools`` (wire name -> async callable taking keyword arguments).

        Never raises for what the code does: its exceptions, a limit, a crashed or hung worker
        all come back as ``ExecResult.error``. The host deadline (``limits.wall_seconds``)
        covers the checkout, the interpreter and the time spent inside tools.
        """
        monty = _monty()
        if limits.cpu_seconds >= self.worker_timeout:
            raise ConfigError(
                f"ExecLimits.cpu_seconds ({limits.cpu_seconds:g}) must be below the sandbox's "
                f"worker_timeout ({self.worker_timeout:g}), or every long run kills its worker; "
                "lower it or pass Sandbox(worker_timeout=...)."
            )
        aliases = python_aliases(tools)
        scope = anyio.CancelScope(deadline=anyio.current_time() + limits.wall_seconds)
        state = RunState(limits=limits, scope=scope, loop=asyncio.get_running_loop())
        lookup = {
            aliases[name]: state.host_function(name, aliases[name], fn)
            for name, fn in tools.items()
        }
        value: Any = None
        error: str | None = None
        with scope:
            try:
                pool = await self._started()
                async with pool.checkout(
                    script_name="tool_exec.py",
                    limits=monty_limits(limits),  # type: ignore[arg-type]
                    os_policy=monty_os_policy(limits),  # type: ignore[arg-type]
                ) as session:
                    value = await session.feed_run(
                        _PRELUDE + code, external_lookup=lookup, print_callback=state.on_print
                    )
            except monty.MontyCrashedError as exc:
                error = f"the sandbox worker died and was replaced ({exc}); the run was stopped"
            except monty.MontyError as exc:
                error = _describe(exc)
            except BaseException:
                # Cancelled from outside: the tool calls Monty started as tasks of its own
                # would outlive the run.
                state.stop_calls()
                raise
        await state.finish()
        # A host-side stop wins even when the code finished before the cancel landed.
        if state.stop_reason is not None:
            error = state.stop_reason
        elif scope.cancelled_caught:
            error = f"wall time limit of {limits.wall_seconds:g} s exceeded"
        elif error is None:
            size = json_size(value)
            if size > limits.max_output_bytes:
                error = (
                    f"the return value is {size} bytes, over the limit of "
                    f"{limits.max_output_bytes}; return a smaller summary"
                )
        return ExecResult(
            value=None if error else value,
            printed="".join(state.printed),
            calls=tuple(state.calls),
            images=tuple(state.images.images),
            error=error,
        )


def require_monty() -> None:
    """Raise :class:`OptionalDependencyMissing` now if Monty is not installed (without
    importing it), so a config that turns tool_exec on fails at start, not at the first run."""
    try:
        found = importlib.util.find_spec("pydantic_monty") is not None
    except (ImportError, ValueError, AttributeError):  # blocked in sys.modules, or broken
        found = False
    if not found:
        raise OptionalDependencyMissing("tool_exec (the Monty sandbox)", "exec")


def _monty() -> ModuleType:
    """pydantic_monty, imported on first use (it is the optional ``exec`` extra)."""
    try:
        import pydantic_monty
    except ImportError as exc:
        raise OptionalDependencyMissing("tool_exec (the Monty sandbox)", "exec") from exc
    return pydantic_monty


def _describe(exc: Exception) -> str:
    """``line N: Type: message`` for the code's own failure (line numbers of the code)."""
    display = getattr(exc, "display", None)
    text = display("type-msg") if callable(display) else str(exc)
    frames = getattr(exc, "traceback", None)
    if callable(frames):
        stack = frames()
        if stack:
            line = stack[-1].line - _PRELUDE_LINES
            return f"line {line}: {text}"
    return str(text)


_live: weakref.WeakSet[Sandbox] = weakref.WeakSet()
_exit_hook_installed = False


def _register_for_exit(sandbox: Sandbox) -> None:
    global _exit_hook_installed
    _live.add(sandbox)
    if not _exit_hook_installed:
        atexit.register(_release_pools)
        _exit_hook_installed = True


def _release_pools() -> None:
    """Drop every pool before the interpreter finalises.

    pydantic-monty 1.3-1.4 aborts the process (SIGABRT, exit 134) in about one exit of five
    when a pool's threads are still alive during finalisation, closed or not; releasing the
    pools here, collected while Python is whole, ends them first (0 aborts in our runs).
    """
    for sandbox in list(_live):
        sandbox._pool = None
    gc.collect()
    time.sleep(0.05)


_default: Sandbox | None = None


def default_sandbox() -> Sandbox:
    """The process-wide sandbox (its pool starts on the first run)."""
    global _default
    if _default is None:
        _default = Sandbox()
    return _default


async def run_code(
    code: str,
    tools: Mapping[str, SandboxTool],
    limits: ExecLimits | None = None,
    *,
    sandbox: Sandbox | None = None,
) -> ExecResult:
    """Run ``code`` in the (default) sandbox; see :meth:`Sandbox.run`."""
    return await (sandbox or default_sandbox()).run(code, tools, limits or ExecLimits())
