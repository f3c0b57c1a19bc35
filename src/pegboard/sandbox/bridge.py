"""The host side of one run: tools as sandbox functions, the call counter, print capture.

Each tool becomes an async host function the sandbox calls by its Python alias with keyword
arguments. Every call is counted, timed and logged; failures reach the code as ordinary,
catchable Python exceptions (:func:`sandbox_exception`). Whatever must stop the run outright
(too many tool calls, too much printed text) cancels the run's scope from the host, where
the code cannot catch it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from pegboard.core.output import ToolOutput
from pegboard.core.wording import plural
from pegboard.errors import (
    ApprovalDenied,
    ApprovalRequired,
    InvalidToolArguments,
    PegboardError,
    ToolNotAllowed,
)
from pegboard.sandbox.limits import ExecLimits
from pegboard.sandbox.result import ImageSink, ToolCallRecord

SandboxTool = Callable[..., Awaitable[Any]]

# How long the end of a run waits for cancelled tool calls to unwind (a tool that shields
# itself from cancellation is not waited for longer).
_DRAIN_SECONDS = 5.0


def sandbox_exception(name: str, exc: BaseException) -> Exception:
    """The Python exception the code sees when the tool ``name`` fails.

    Approval needed or refused, or a tool outside the request -> ``PermissionError``;
    arguments that do not validate -> ``TypeError``; anything else -> ``RuntimeError``.
    """
    if isinstance(exc, ApprovalRequired | ApprovalDenied | ToolNotAllowed):
        return PermissionError(str(exc))
    if isinstance(exc, InvalidToolArguments):
        return TypeError(str(exc))
    if isinstance(exc, PegboardError):
        return RuntimeError(str(exc))
    return RuntimeError(f"{name} failed: {type(exc).__name__}: {exc}")


@dataclass(slots=True)
class RunState:
    """Everything one run shares between its tool calls, its prints and its end."""

    limits: ExecLimits
    scope: anyio.CancelScope
    loop: asyncio.AbstractEventLoop
    calls: list[ToolCallRecord] = field(default_factory=list)
    images: ImageSink = field(default_factory=ImageSink)
    printed: list[str] = field(default_factory=list)
    printed_bytes: int = 0
    started_calls: int = 0
    stop_reason: str | None = None
    # Monty runs gathered tool coroutines as tasks of its own, which outlive a cancelled run;
    # each call's scope is kept here so the end of the run cancels whatever is still running.
    call_scopes: set[anyio.CancelScope] = field(default_factory=set)
    drained: anyio.Event = field(default_factory=anyio.Event)
    # A semaphore, not a CapacityLimiter: Monty may run two calls in one task.
    parallel: anyio.Semaphore = field(init=False)
    finished: bool = False

    def __post_init__(self) -> None:
        self.parallel = anyio.Semaphore(self.limits.max_parallel_calls)

    def stop(self, reason: str) -> None:
        """End the run now (host side, uncatchable by the code); the first reason wins."""
        if self.stop_reason is None:
            self.stop_reason = reason
        self.scope.cancel()

    def on_print(self, stream: str, text: str) -> None:
        """Print sink. Monty calls it from its own thread, hence the thread-safe stop."""
        del stream
        if self.stop_reason is not None:
            return
        size = len(text.encode("utf-8"))
        room = self.limits.max_output_bytes - self.printed_bytes
        if size > room:
            self.printed.append(text.encode("utf-8")[: max(room, 0)].decode("utf-8", "ignore"))
            self.printed_bytes = self.limits.max_output_bytes
            reason = f"printed output exceeded the limit of {self.limits.max_output_bytes} bytes"
            self.loop.call_soon_threadsafe(self.stop, reason)
            return
        self.printed.append(text)
        self.printed_bytes += size

    def stop_calls(self) -> bool:
        """End the run for its tool calls: cancel those still running (without waiting, so a
        run cancelled from outside can do it on its way out); True if any was running."""
        self.finished = True
        for scope in tuple(self.call_scopes):
            scope.cancel()
        return bool(self.call_scopes)

    async def finish(self) -> None:
        """Cancel the tool calls still running and wait (bounded) until they have stopped."""
        if self.stop_calls():
            with anyio.move_on_after(_DRAIN_SECONDS):
                await self.drained.wait()

    def host_function(self, name: str, alias: str, tool: SandboxTool) -> SandboxTool:
        """The sandbox-side face of ``tool`` (wire name ``name``, called as ``alias``)."""

        async def call(*args: Any, **kwargs: Any) -> Any:
            if args:
                raise TypeError(
                    f"{alias}() takes keyword arguments only: {alias}(name=value, ...); "
                    f"got {plural(len(args), 'positional argument')}"
                )
            if self.finished:
                raise RuntimeError("the run has ended")
            self.started_calls += 1
            if self.started_calls > self.limits.max_tool_calls:
                self.stop(f"tool-call limit of {self.limits.max_tool_calls} calls exceeded")
                raise RuntimeError("tool-call limit exceeded")
            return await self._call(name, tool, kwargs)

        call.__name__ = alias
        return call

    async def _call(self, name: str, tool: SandboxTool, kwargs: dict[str, Any]) -> Any:
        started = time.perf_counter()
        with anyio.CancelScope() as scope:
            self.call_scopes.add(scope)
            try:
                async with self.parallel:
                    result = await tool(**kwargs)
                value = self.images.lift(result) if isinstance(result, ToolOutput) else result
                if isinstance(result, ToolOutput) and result.is_error:
                    raise RuntimeError(f"{name} returned an error: {value}")
            except Exception as exc:
                error = sandbox_exception(name, exc)
                self._log(name, kwargs, started, f"{type(error).__name__}: {error}")
                raise error from None
            finally:
                self.call_scopes.discard(scope)
                if self.finished and not self.call_scopes:
                    self.drained.set()
        if scope.cancelled_caught:
            self._log(name, kwargs, started, "cancelled: the run ended")
            raise RuntimeError("the run has ended")
        self._log(name, kwargs, started, None)
        return value

    def _log(self, name: str, kwargs: Mapping[str, Any], started: float, error: str | None) -> None:
        seconds = time.perf_counter() - started
        self.calls.append(ToolCallRecord(name, dict(kwargs), error is None, seconds, error))
