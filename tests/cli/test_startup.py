"""Start-up cost: commands that do not talk MCP never import the MCP SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import sdk_server, warm_cache, write

HEAVY = ("mcp", "mcp_types")

# Runs a command in the probe's process (its modules and state then looked at).
RUN_COMMAND = """
import json, sys
sys.argv = ["pegboard", *{args!r}]
from pegboard.cli import main
try:
    main()
except SystemExit:
    pass
"""
PROBE = (
    RUN_COMMAND
    + """
print(json.dumps([m for m in {heavy!r} if m in sys.modules]), file=sys.stderr)
"""
)


def _loaded_after(
    *args: str, heavy: tuple[str, ...] = HEAVY, env: dict[str, str] | None = None
) -> list[str]:
    code = PROBE.format(args=list(args), heavy=heavy)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    loaded: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return loaded


@pytest.fixture
def cached_server_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A config whose server's tools are in the on-disk cache (nothing to connect to)."""
    config_path = tmp_path / "config.toml"
    env = {
        **os.environ,
        "PEGBOARD_CONFIG": str(config_path),
        "PEGBOARD_DATA_DIR": str(tmp_path / "data"),
    }
    monkeypatch.setenv("PEGBOARD_DATA_DIR", env["PEGBOARD_DATA_DIR"])  # where warm_cache writes
    write(config_path, {"servers": {"demo": sdk_server()}})
    tool = {
        "name": "read_file",
        "description": "Read a file",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
        "annotations": {"readOnlyHint": True},
    }
    warm_cache(config_path, "demo", [tool])
    return env


@pytest.mark.parametrize(
    "args", [["--help"], ["tools", "--help"], ["serve", "--help"], ["chat", "--help"]]
)
def test_help_does_not_import_the_mcp_sdk(args: list[str]) -> None:
    assert _loaded_after(*args) == []


def test_import_pegboard_loads_neither_the_sdk_nor_the_catalog() -> None:
    # pegboard._lazy is the PEP 562 helper behind the package's exports (a few lines)
    code = "import sys, pegboard; print([m for m in sys.modules if m.startswith(PREFIXES)"
    code += " and m != 'pegboard._lazy'])"
    code = code.replace("PREFIXES", repr(("mcp", "pegboard.")))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_early_answers_of_serve_need_only_the_standard_library() -> None:
    code = (
        "import sys; from pegboard.gateway import early; "
        "print(sorted(m for m in sys.modules if m.startswith(('mcp', 'pydantic', 'anyio'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_tools_list_json_serves_the_cache_without_the_sdk_or_numpy(
    cached_server_env: dict[str, str],
) -> None:
    loaded = _loaded_after(
        "tools", "list", "--json", heavy=(*HEAVY, "numpy"), env=cached_server_env
    )
    assert loaded == []


# Modules a read command does not need: other commands' (the chat loop, the audit reader,
# the gateway), and the HTTP client web_fetch loads on its first fetch.
NOT_FOR_READS = (
    "pegboard.cli.chat_cmd",
    "pegboard.cli.audit_cmd",
    "pegboard.cli.serve_cmd",
    "pegboard.cli.kb_cmd",
    "pegboard.chat",
    "pegboard.gateway.server",
    "pegboard.gateway.early",  # the stdio serve's early answers: started for `serve` only
    "httpx2",
)


@pytest.mark.parametrize(
    "args", [["tools", "list", "--json"], ["tools", "search", "file"], ["servers", "status"]]
)
def test_read_commands_import_only_their_own_command_module(
    cached_server_env: dict[str, str], args: list[str]
) -> None:
    assert _loaded_after(*args, heavy=NOT_FOR_READS, env=cached_server_env) == []


def test_tools_search_serves_the_cache_without_the_sdk(
    cached_server_env: dict[str, str],
) -> None:
    assert _loaded_after("tools", "search", "file", env=cached_server_env) == []


def test_tools_list_json_still_lists_the_cached_tool(cached_server_env: dict[str, str]) -> None:
    code = "import sys; sys.argv = ['pegboard', 'tools', 'list', '--json']\n"
    code += "from pegboard.cli import main\nmain()"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cached_server_env
    )
    assert [t["name"] for t in json.loads(done.stdout)] == ["mcp__demo__read_file"]


# What a cache read never needs: the MCP SDK and its pydantic models, HTTP clients, JSON
# Schema validation (a call's), the tool_exec engine and the event loop it brings, the
# provider formats; numpy too, except for search's ranker.
HEAVY_FOR_READS = (
    *HEAVY,
    "httpx",
    "httpx2",
    "jsonschema",
    "asyncio",
    "pegboard.sandbox.engine",
    "pegboard.formats.anthropic",
    "pegboard.formats.openai",
)


@pytest.mark.parametrize(
    "args",
    [
        ["tools", "list"],
        ["tools", "list", "--json"],
        ["tools", "inspect", "mcp__demo__read_file"],
        ["tools", "inspect", "mcp__demo__read_file", "--json"],
        ["servers", "status"],
        ["servers", "status", "--json"],
        ["servers", "list"],
    ],
)
def test_cache_reads_load_no_heavy_module(
    cached_server_env: dict[str, str], args: list[str]
) -> None:
    heavy = (*HEAVY_FOR_READS, "numpy")
    assert _loaded_after(*args, heavy=heavy, env=cached_server_env) == []


def test_tools_search_loads_only_its_ranker(cached_server_env: dict[str, str]) -> None:
    loaded = _loaded_after("tools", "search", "file", heavy=HEAVY_FOR_READS, env=cached_server_env)
    assert loaded == []


def test_a_later_tools_search_ranks_the_stored_index_without_numpy(
    cached_server_env: dict[str, str],
) -> None:
    # The first search builds the index (numpy embeds the catalog) and stores it; the next
    # one reads the stored file and, for a small catalog, ranks it in plain Python.
    assert _loaded_after("tools", "search", "file", env=cached_server_env) == []
    heavy = (*HEAVY_FOR_READS, "numpy")
    assert _loaded_after("tools", "search", "file", heavy=heavy, env=cached_server_env) == []


# What a cache read does not import since the packages export lazily: knowledge-base
# ingestion, search and the store (the kb tools' entry point needs only the store's path,
# `pegboard.kb.kb_path`), and for `servers list` (the config alone) no runtime at all.
@pytest.mark.parametrize(
    "args",
    [
        ["tools", "list", "--json"],
        ["tools", "inspect", "mcp__demo__read_file"],
        ["servers", "status"],
    ],
)
def test_cache_reads_import_no_knowledge_base_code(
    cached_server_env: dict[str, str], args: list[str]
) -> None:
    heavy = ("pegboard.kb.ingestion", "pegboard.kb.api", "pegboard.kb.search", "pegboard.kb.store")
    assert _loaded_after(*args, heavy=heavy, env=cached_server_env) == []


# Deferral's meta-tools and the tool_exec sandbox: a read lists everything (nothing deferred),
# so it loads none of their modules (their import and ~20 dataclasses were ~3% of a read).
DEFERRAL_AND_SANDBOX = (
    "pegboard.deferral.apply",
    "pegboard.deferral.pool",
    "pegboard.deferral.prompt",
    "pegboard.deferral.tool_exec",
    "pegboard.deferral.tool_search",
    "pegboard.sandbox.limits",
    "pegboard.sandbox.tool",
)


@pytest.mark.parametrize(
    "args",
    [
        ["tools", "list", "--json"],
        ["tools", "search", "file"],
        ["tools", "inspect", "mcp__demo__read_file"],
        ["servers", "status"],
    ],
)
def test_cache_reads_import_neither_deferral_nor_the_sandbox(
    cached_server_env: dict[str, str], args: list[str]
) -> None:
    heavy = DEFERRAL_AND_SANDBOX
    assert _loaded_after(*args, heavy=heavy, env=cached_server_env) == []


def test_servers_list_reads_the_config_only(cached_server_env: dict[str, str]) -> None:
    heavy = ("pegboard.runtime", "pegboard.mcp.catalog", "pegboard.core.registry", "sqlite3")
    assert _loaded_after("servers", "list", heavy=heavy, env=cached_server_env) == []


def _probe(code: str, env: dict[str, str] | None = None) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_import_burst_runs_without_collections_then_freezes_and_restores() -> None:
    code = """
import gc, json
from pegboard._lazy import import_burst
with import_burst():
    inside = gc.isenabled()
    with import_burst():
        import pydantic.main
    after_nested = gc.isenabled()
imported = __import__("sys").modules["pydantic.main"].__dict__
frozen = id(imported) not in {id(o) for o in gc.get_objects()}
gc.disable()
with import_burst():
    import csv
frozen_after_nothing = gc.get_freeze_count()
young = [[] for _ in range(100)]  # tracked objects a freeze would take
with import_burst():
    import csv
print(json.dumps([inside, after_nested, gc.isenabled(), frozen,
                  gc.get_freeze_count() == frozen_after_nothing]))
"""
    # Off inside (a nested burst ends with the outermost), then what was imported is frozen
    # (no collection walks it again) and the collector is as it was: on, then left off. A
    # burst that imports nothing new freezes nothing.
    assert _probe(code) == [False, False, False, True, True]


def test_a_command_runs_with_the_collector_on() -> None:
    # The start-up burst ends before the command: a long-running one (serve, chat) collects
    # its garbage as usual; the imports it did are frozen.
    code = """
import gc, json, sys
import typer  # the command tree itself is imported by main's burst
seen = []
typer.Typer.__call__ = lambda app: seen.append([gc.isenabled(), gc.get_freeze_count() > 0])
sys.argv = ["pegboard", "tools", "list"]
from pegboard.cli import main
main()
print(json.dumps(seen))
"""
    assert _probe(code) == [[True, True]]


@pytest.mark.parametrize(
    "args",
    [
        ["tools", "list"],
        ["tools", "search", "file"],
        ["tools", "inspect", "mcp__demo__read_file"],
        ["servers", "status"],
        ["servers", "list"],
    ],
)
def test_a_cache_read_runs_no_garbage_collection(
    cached_server_env: dict[str, str], args: list[str]
) -> None:
    # A command that reads the caches and exits is one import burst from the config's load
    # on: what it imports and builds lives until the exit, so a collection would only walk it
    # (36-53 passes at 527 tools). Before the load, typer parses the command line.
    code = f"""
import gc, json, sys
import pegboard.cli._common as common
seen = []
load_config = common.load_config
def load(*args, **kwargs):
    seen.append("load")
    return load_config(*args, **kwargs)
common.load_config = load
sys.argv = ["pegboard", *{args!r}]
from pegboard.cli import main
gc.callbacks.append(lambda phase, info: phase == "start" and seen.append(info["generation"]))
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(seen[seen.index("load"):]))
"""
    assert _probe(code, cached_server_env) == ["load"]


def test_serve_imports_the_sdk_as_a_burst(cached_server_env: dict[str, str]) -> None:
    # serve imports the gateway and the MCP SDK after the command line is read: as a burst of
    # its own, so the SDK's objects are frozen by the time it serves, the collector on.
    code = """
import gc, json, sys
import pegboard.cli.serve_cmd as serve_cmd
def load(ctx, **kwargs):
    sdk = sys.modules["mcp_types"].__dict__
    frozen = id(sdk) not in {id(o) for o in gc.get_objects()}
    print(json.dumps([gc.isenabled(), frozen]))
    raise SystemExit(0)
serve_cmd.load = load
sys.argv = ["pegboard", "serve"]
from pegboard.cli import main
main()
"""
    assert _probe(code, cached_server_env) == [True, True]


@pytest.mark.parametrize(
    "args",
    [["tools", "list"], ["tools", "search", "file"], ["servers", "status"]],
)
def test_piped_tables_are_printed_without_richs_console(
    cached_server_env: dict[str, str], args: list[str]
) -> None:
    # stdout is a pipe here: no styles, so the table is laid out by render.plain_table
    # (`servers list`'s title holds the config's path, longer here than the 80 columns rich
    # would wrap it at: rich prints that one)
    heavy = ("rich.console", "rich.table", "rich.text")
    assert _loaded_after(*args, heavy=heavy, env=cached_server_env) == []


COMPILED_POISON_PATTERNS = """
from pegboard.mcp import poison
patterns = {{n: v for n, v in vars(poison).items() if isinstance(v, poison._Pattern)}}
compiled = sorted(n for n, v in patterns.items() if v._compiled)
from pegboard import errors
print(json.dumps([len(patterns), compiled, errors._reason_patterns.cache_info().currsize]))
"""


@pytest.mark.parametrize(
    "args", [["tools", "list"], ["tools", "list", "--json"], ["tools", "search", "file"]]
)
def test_cache_reads_compile_neither_the_poisoning_nor_the_failure_patterns(
    cached_server_env: dict[str, str], args: list[str]
) -> None:
    # The flags are not checked by a listing or a search: the 12 patterns of the checks are
    # compiled when a definition is first checked (`servers status`, `tools inspect`); the
    # 18 of a server's failure reason when one is first made public.
    code = (RUN_COMMAND + COMPILED_POISON_PATTERNS).format(args=args)
    assert _probe(code, cached_server_env) == [12, [], 0]


@pytest.mark.parametrize(
    "args", [["tools", "list"], ["tools", "list", "--json"], ["tools", "search", "file"]]
)
def test_listings_and_searches_import_no_server_status_record(
    cached_server_env: dict[str, str], args: list[str]
) -> None:
    # The status records (ServerStatus, ReplicaView) are `servers status`' and deferral's:
    # a listing reads the cached tools only.
    heavy = ("pegboard.mcp.status",)
    assert _loaded_after(*args, heavy=heavy, env=cached_server_env) == []
