"""Attack: tool_exec code returns a value JSON cannot carry (``10**5000``: Python refuses to
write an int of more than 4,300 digits; NaN; infinity; nesting too deep to encode), which
raised ``ValueError`` on the host instead of answering.

Held: any conversion failure of a run's value is that run's error result, and the tool's
output says so; the next run works.
"""

from __future__ import annotations

import pytest

from pegboard.sandbox import run_code
from pegboard.sandbox.tool import exec_output

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("10**5000", "Exceeds the limit (4300 digits) for integer string conversion"),
        (
            "[1, {'a': -(10**4400)}]",
            "Exceeds the limit (4300 digits) for integer string conversion",
        ),
        ("float('nan')", "NaN and infinity are not JSON numbers"),
        ("[float('inf')]", "NaN and infinity are not JSON numbers"),
        ("{'x': -float('inf')}", "NaN and infinity are not JSON numbers"),
    ],
)
async def test_a_value_json_cannot_carry_is_the_runs_error(code: str, why: str) -> None:
    result = await run_code(code, {})
    output = exec_output(result)
    after = await run_code("1 + 1", {})

    assert result.error == f"the return value cannot be sent as JSON: {why}"
    assert result.value is None
    assert output.is_error
    assert output.as_text() == f"tool_exec failed: the return value cannot be sent as JSON: {why}"
    assert after.value == 2


async def test_a_big_but_writable_integer_is_returned_exactly() -> None:
    result = await run_code("10**4000", {})
    assert result.error is None
    assert result.value == 10**4000
