"""Hostile code against the sandbox: one probe per test. Each asserts the side effect did not
happen and that the next run on the same sandbox still works."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from pegboard.sandbox import ExecLimits, ExecResult, Sandbox, run_code
from tests.sandbox.workers import monty_workers

pytestmark = pytest.mark.anyio

QUICK = ExecLimits(cpu_seconds=0.5, wall_seconds=10)


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, **kwargs: Any) -> Any:
        self.calls += 1
        return kwargs


async def assert_next_run_works(sandbox: Sandbox | None = None) -> None:
    result = await run_code("x = 20\nx * 2 + 2", {}, QUICK, sandbox=sandbox)
    assert result == ExecResult(value=42)


async def test_an_infinite_loop_is_stopped_by_the_cpu_limit_and_runs_nothing_after() -> None:
    after = Counter()
    result = await run_code("while True:\n    pass\nawait after()", {"after": after}, QUICK)
    assert result.error is not None
    assert result.error.startswith("TimeoutError: feed time limit exceeded")
    assert after.calls == 0
    await assert_next_run_works()


@pytest.mark.parametrize(
    "code",
    [
        "x = 'a' * 10**10",
        "x = 2 ** (10**9)",
        "x = []\nwhile True:\n    x.append('a' * 10000)",
    ],
)
async def test_a_memory_bomb_hits_the_memory_limit(code: str) -> None:
    after = Counter()
    result = await run_code(f"{code}\nawait after()", {"after": after}, QUICK)
    assert result.error is not None
    assert "MemoryError" in result.error
    assert after.calls == 0
    await assert_next_run_works()


async def test_deep_recursion_raises_recursion_error() -> None:
    result = await run_code("def f(n):\n    return f(n + 1)\nf(0)", {}, QUICK)
    assert result.error == "line 2: RecursionError: maximum recursion depth exceeded"
    await assert_next_run_works()


@pytest.mark.parametrize("module", ["subprocess", "socket", "ctypes", "importlib", "builtins"])
async def test_dangerous_modules_cannot_be_imported(module: str) -> None:
    result = await run_code(f"import {module}", {}, QUICK)
    assert result.error == f"line 1: ModuleNotFoundError: No module named '{module}'"
    await assert_next_run_works()


@pytest.mark.parametrize(
    "code",
    ["import os\nos.system('touch /tmp/x')", "import os\nos.popen('id')", "import os\nos.fork()"],
)
async def test_the_os_module_runs_no_process(code: str) -> None:
    result = await run_code(code, {}, QUICK)
    assert result.error is not None
    assert "AttributeError" in result.error
    await assert_next_run_works()


async def test_a_file_cannot_be_created(tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    code = (
        f"open({str(canary)!r}, 'w').write('pwned')\n"
        f"import pathlib\npathlib.Path({str(canary)!r}).write_text('pwned')"
    )
    result = await run_code(code, {}, QUICK)
    assert result.error == f"line 1: PermissionError: Permission denied: '{canary}'"
    assert not canary.exists()
    await assert_next_run_works()


async def test_a_file_cannot_be_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    for code in (f"open({str(secret)!r}).read()", "import os\nos.listdir('/')"):
        result = await run_code(f"print('start')\n{code}", {}, QUICK)
        assert result.error is not None
        assert "PermissionError" in result.error
        assert "TOP-SECRET-CONTENT" not in repr(result)
    await assert_next_run_works()


async def test_the_environment_is_not_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PEGBOARD_TEST_SECRET", "sk-very-secret-value")
    for code in (
        "import os\nos.environ['PEGBOARD_TEST_SECRET']",
        "import os\nos.getenv('PEGBOARD_TEST_SECRET')",
        "import os\nprint(os.environ)",
    ):
        result = await run_code(code, {}, QUICK)
        assert result.error is not None
        assert "is not supported in this environment" in result.error
        assert "sk-very-secret-value" not in repr(result)
    await assert_next_run_works()


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("().__class__.__mro__", "AttributeError: 'tuple' object has no attribute '__class__'"),
        ("object.__subclasses__()", "AttributeError: type object 'object' has no attribute"),
        ("def f():\n    pass\nf.__globals__", "AttributeError: 'function' object has no"),
        ("import sys\nsys._getframe()", "AttributeError: module 'sys' has no attribute"),
        ("getattr(print, '__self__')", "AttributeError"),
        ("__import__('os')", "NameError: name '__import__' is not defined"),
        ("(lambda: 0).__code__", "AttributeError"),
        ("type(1).__bases__", "AttributeError"),
    ],
)
async def test_introspection_escapes_find_nothing(code: str, error: str) -> None:
    result = await run_code(code, {}, QUICK)
    assert result.error is not None
    assert error in result.error
    await assert_next_run_works()


async def test_a_print_flood_is_cut_at_the_output_limit() -> None:
    limits = ExecLimits(cpu_seconds=5, wall_seconds=10, max_output_bytes=1000)
    result = await run_code("while True:\n    print('x' * 99)", {}, limits)
    assert result.error == "printed output exceeded the limit of 1000 bytes"
    assert result.printed == ("x" * 99 + "\n") * 10
    await assert_next_run_works()


async def test_ten_thousand_tool_calls_stop_at_the_call_limit() -> None:
    tool = Counter()
    code = (
        "n = 0\n"
        "for i in range(10000):\n"
        "    try:\n"
        "        await t(i=i)\n"
        "    except BaseException:\n"
        "        n += 1\n"
        "n"
    )
    result = await run_code(code, {"t": tool}, ExecLimits(max_tool_calls=50))
    assert result.error == "tool-call limit of 50 calls exceeded"
    assert tool.calls == 50
    assert len(result.calls) == 50
    await assert_next_run_works()


async def test_a_huge_return_value_is_refused() -> None:
    result = await run_code("['x' * 1000] * 1000", {}, QUICK)
    assert result.value is None
    assert result.error == (
        "the return value is 1004000 bytes, over the limit of 65536; return a smaller summary"
    )
    too_big = await run_code("'a' * 100_000_000", {}, QUICK)
    assert too_big.error is not None
    assert "MemoryError" in too_big.error
    await assert_next_run_works()


async def test_a_slow_tool_is_cut_by_the_host_deadline_and_cancelled() -> None:
    finished: list[int] = []
    cancelled: list[int] = []

    async def slow(i: int) -> int:
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            cancelled.append(i)
            raise
        finished.append(i)
        return i

    limits = ExecLimits(wall_seconds=0.5)
    result = await run_code("await gather(slow(i=1), slow(i=2), slow(i=3))", {"slow": slow}, limits)
    assert result.error == "wall time limit of 0.5 s exceeded"
    assert finished == []
    assert sorted(cancelled) == [1, 2, 3]
    await assert_next_run_works()


async def test_a_killed_worker_becomes_an_error_and_the_pool_recovers() -> None:
    sandbox = Sandbox()
    try:
        killed: list[int] = []

        async def kill() -> str:
            killed.extend(monty_workers())
            for pid in killed:
                os.kill(pid, signal.SIGKILL)
            return "killed"

        result = await run_code("await kill()\n1", {"kill": kill}, QUICK, sandbox=sandbox)
        assert result.error is not None
        assert result.error.startswith("the sandbox worker died and was replaced")
        assert "SIGKILL" in result.error
        assert killed
        await assert_next_run_works(sandbox)
    finally:
        await sandbox.aclose()


async def test_a_frozen_worker_is_killed_and_the_pool_recovers() -> None:
    sandbox = Sandbox(worker_timeout=1.0)
    try:
        frozen: list[int] = []

        async def freeze() -> str:
            frozen.extend(monty_workers())
            for pid in frozen:
                os.kill(pid, signal.SIGSTOP)
            return "frozen"

        limits = ExecLimits(cpu_seconds=0.5, wall_seconds=20)
        result = await run_code("await freeze()\n1", {"freeze": freeze}, limits, sandbox=sandbox)
        assert result.error is not None
        assert result.error.startswith("the sandbox worker died and was replaced")
        assert "request timeout" in result.error
        assert frozen
        await assert_next_run_works(sandbox)
    finally:
        for pid in monty_workers():
            os.kill(pid, signal.SIGCONT)
        await sandbox.aclose()


async def test_catching_the_timeout_does_not_extend_the_run() -> None:
    code = (
        "n = 0\n"
        "while True:\n"
        "    try:\n"
        "        while True:\n"
        "            pass\n"
        "    except BaseException:\n"
        "        n += 1\n"
    )
    result = await run_code(code, {}, QUICK)
    assert result.error is not None
    assert result.error.startswith("TimeoutError: feed time limit exceeded")
    await assert_next_run_works()


async def test_sleeping_is_capped_per_sleep_and_in_total() -> None:
    limits = ExecLimits(cpu_seconds=0.5, wall_seconds=10, sleep_seconds=0.2)
    one = await run_code("import time\ntime.sleep(3600)\n'woke'", {}, limits)
    assert one == ExecResult(value="woke")  # the hour became 0.2 s
    many = await run_code("import time\nfor i in range(100):\n    time.sleep(0.1)", {}, limits)
    assert many.error == "line 3: TimeoutError: sleep limit exceeded: 300ms > 200ms"
    await assert_next_run_works()


async def test_a_tool_result_the_sandbox_cannot_hold_is_an_error_in_the_code() -> None:
    class Opaque:
        pass

    async def opaque() -> Opaque:
        return Opaque()

    result = await run_code("await opaque()", {"opaque": opaque}, QUICK)
    assert result.error is not None
    assert result.error.startswith("line 1: TypeError: Cannot convert")
    await assert_next_run_works()


async def test_the_call_limit_holds_even_when_the_code_catches_and_finishes_at_once() -> None:
    tool = Counter()
    code = "try:\n    await t()\n    await t()\nexcept BaseException:\n    pass\n'done'"
    result = await run_code(code, {"t": tool}, ExecLimits(max_tool_calls=1))
    assert result.error == "tool-call limit of 1 calls exceeded"
    assert result.value is None
    assert tool.calls == 1
    await assert_next_run_works()


@pytest.mark.parametrize(
    "code", ["raise SystemExit(1)", "raise KeyboardInterrupt", "import sys\nsys.exit(3)"]
)
async def test_exit_attempts_end_only_the_run(code: str) -> None:
    result = await run_code(code, {}, QUICK)
    assert result.error is not None
    assert result.value is None
    await assert_next_run_works()
