"""print inside the sandbox never reaches the process's stdout (fd 1 carries a stdio MCP
stream in `pegboard serve`), also when the code floods it or the worker dies."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import anyio, json, sys
from pegboard.sandbox import ExecLimits, run_code

async def main():
    results = []
    for code in ("print('hello from the sandbox')\\n1",
                 "while True:\\n    print('flood' * 100)",
                 "import sys\\nsys.stdout.write('direct')\\n2",
                 "'a' * 100_000_000"):
        r = await run_code(code, {}, ExecLimits(cpu_seconds=1))
        results.append([r.printed[:40], r.error])
    sys.stderr.write(json.dumps(results))

anyio.run(main)
"""


def test_sandbox_output_never_reaches_file_descriptor_1() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert done.stdout == b""
    tail = done.stderr.decode().splitlines()[-1]
    assert tail.startswith('[["hello from the sandbox\\n", null], ["floodflood')
    assert '"printed output exceeded the limit of 65536 bytes"]' in tail
    assert "no attribute 'write'" in tail
    assert tail.endswith('MemoryError: memory limit exceeded: 100042969 bytes > 67108864 bytes"]]')
