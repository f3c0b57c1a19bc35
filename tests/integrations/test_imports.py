from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

FRAMEWORKS = ("pydantic_ai", "agents", "langchain_core", "langchain_openai", "openai")


def test_importing_pegboard_and_the_bridge_loads_no_framework() -> None:
    code = (
        "import sys\n"
        "import pegboard, pegboard.cli.app, pegboard.integrations, pegboard.integrations.bridge\n"
        f"print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout == "[]\n"


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("openai_agents", "agents", "agents"),
        ("langchain", "langchain_core.tools", "langchain"),
    ],
)
def test_an_integration_without_its_extra_names_the_install_that_fixes_it(
    monkeypatch: pytest.MonkeyPatch, module: str, framework: str, extra: str
) -> None:
    monkeypatch.delitem(sys.modules, f"pegboard.integrations.{module}", raising=False)
    monkeypatch.setitem(sys.modules, framework, None)  # as if it were not installed

    with pytest.raises(ImportError) as raised:
        importlib.import_module(f"pegboard.integrations.{module}")

    assert str(raised.value) == (
        f"pegboard.integrations.{module} needs an optional dependency. "
        f"Install it with: pip install 'pegboard[{extra}]'"
    )


def test_interrupts_without_langgraph_name_the_install_that_fixes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pegboard.integrations.langchain import pegboard_langchain_tools
    from tests.integrations.scenario import SCOPE, World

    monkeypatch.setitem(sys.modules, "langgraph.types", None)

    with pytest.raises(ImportError) as raised:
        pegboard_langchain_tools(registry=World().registry(), scope=SCOPE, interrupt=True)

    assert str(raised.value) == (
        "pegboard_langchain_tools(interrupt=True) needs LangGraph: pip install langgraph"
    )
