"""The engine's contract: every limit always set, helpful errors, lazy import of Monty."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from pegboard.errors import ConfigError, OptionalDependencyMissing
from pegboard.sandbox import ExecLimits, ExecResult, Sandbox, run_code
from pegboard.sandbox.limits import monty_limits, monty_os_policy


def test_every_monty_resource_limit_is_set_on_every_run() -> None:
    from pydantic_monty import ResourceLimits

    limits = monty_limits(ExecLimits())
    assert set(limits) == set(ResourceLimits.__annotations__)
    assert all(value is not None for value in limits.values())
    assert limits == {
        "max_feed_duration_secs": 5.0,
        "max_turn_duration_secs": 5.0,
        "max_memory": 64 * 1024 * 1024,
        "max_recursion_depth": 200,
        "max_suspensions": 864,
        "max_total_sleep_secs": 5.0,
        "gc_interval": 10_000,
    }
    assert monty_os_policy(ExecLimits(sleep_seconds=2)) == {
        "sleep": "system",
        "sleep_system_max": 2,
        "process_time": "zero",
    }


@pytest.mark.parametrize("value", [0, -1, float("inf"), float("nan"), None, True, "5"])
def test_a_limit_cannot_be_switched_off(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"^ExecLimits\.cpu_seconds must be a"):
        ExecLimits(cpu_seconds=value)


@pytest.mark.anyio
async def test_syntax_errors_and_exceptions_name_the_line_of_the_code() -> None:
    result = await run_code("x = 1\ndef f(:\n", {})
    assert (
        result.error == "line 2: SyntaxError: Expected a parameter or the end of the parameter list"
    )
    result = await run_code("x = 1\ny = (\n  x +\n  missing)", {})
    assert result == ExecResult(error="line 4: NameError: name 'missing' is not defined")


@pytest.mark.anyio
async def test_runs_do_not_share_state() -> None:
    first = await run_code("secret = 'left over'\nsecret", {})
    assert first.value == "left over"
    second = await run_code("secret", {})
    assert second.error == "line 1: NameError: name 'secret' is not defined"


@pytest.mark.anyio
async def test_a_missing_exec_extra_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_monty", None)
    with pytest.raises(OptionalDependencyMissing, match=r"pip install 'pegboard\[exec\]'"):
        await run_code("1", {}, sandbox=Sandbox())


def test_importing_pegboard_and_the_sandbox_does_not_load_monty() -> None:
    code = (
        "import sys, pegboard, pegboard.sandbox, pegboard.sandbox.tool\n"
        "print('pydantic_monty' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "False\n"


@pytest.mark.anyio
async def test_more_concurrent_runs_than_workers_all_complete() -> None:
    import anyio

    sandbox = Sandbox(max_workers=2)
    results: dict[int, ExecResult] = {}

    async def one(i: int) -> None:
        async def double(x: int) -> int:
            await anyio.sleep(0.05)
            return 2 * x

        results[i] = await run_code(f"await double(x={i})", {"double": double}, sandbox=sandbox)

    try:
        async with anyio.create_task_group() as tg:
            for i in range(5):
                tg.start_soon(one, i)
    finally:
        await sandbox.aclose()
    assert {i: (r.value, r.error) for i, r in results.items()} == {
        i: (2 * i, None) for i in range(5)
    }


@pytest.mark.anyio
async def test_a_cpu_limit_above_the_worker_timeout_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError) as caught:
        await run_code("1", {}, ExecLimits(cpu_seconds=30), sandbox=Sandbox(worker_timeout=10))
    assert str(caught.value) == (
        "ExecLimits.cpu_seconds (30) must be below the sandbox's worker_timeout (10), or every "
        "long run kills its worker; lower it or pass Sandbox(worker_timeout=...)."
    )


@pytest.mark.anyio
async def test_tool_failures_reach_the_code_as_catchable_python_exceptions() -> None:
    from pegboard.errors import (
        ApprovalDenied,
        ApprovalRequired,
        InvalidToolArguments,
        ToolExecutionError,
        ToolNotAllowed,
    )

    failures: dict[str, BaseException] = {
        "required": ApprovalRequired("needs a yes", tool_name="required"),
        "denied": ApprovalDenied("the user said no", tool_name="denied"),
        "hidden": ToolNotAllowed("hidden"),
        "invalid": InvalidToolArguments("invalid", ["a: expected integer"]),
        "failed": ToolExecutionError("disk full", tool_name="failed"),
        "crashed": ValueError("bad value"),
    }

    def raiser(exc: BaseException) -> Any:
        async def tool(**kwargs: Any) -> Any:
            raise exc

        return tool

    code = (
        "seen = []\n"
        "for f in (required, denied, hidden, invalid, failed, crashed):\n"
        "    try:\n"
        "        await f()\n"
        "    except Exception as e:\n"
        "        seen.append(type(e).__name__ + ': ' + str(e))\n"
        "seen"
    )
    result = await run_code(code, {name: raiser(exc) for name, exc in failures.items()})
    assert result.value == [
        "PermissionError: needs a yes",
        "PermissionError: the user said no",
        "PermissionError: Tool not available in this request: hidden",
        'TypeError: Invalid params for "invalid": a: expected integer',
        "RuntimeError: disk full",
        "RuntimeError: crashed failed: ValueError: bad value",
    ]
    assert [(c.name, c.ok) for c in result.calls] == [(name, False) for name in failures]


@pytest.mark.anyio
async def test_gathered_calls_run_at_most_max_parallel_calls_at_once() -> None:
    import anyio

    running = 0
    peak = 0

    async def fetch(i: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.01)
        running -= 1
        return i

    code = "sum(await gather(*[fetch(i=i) for i in range(20)]))"
    result = await run_code(code, {"fetch": fetch}, ExecLimits(max_parallel_calls=3))
    assert result.value == sum(range(20))
    assert peak == 3
