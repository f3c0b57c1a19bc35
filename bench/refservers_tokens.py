"""What ``pegboard serve`` lists at 8k / 32k / 200k windows on the reference MCP servers.

    .venv/bin/python bench/refservers_tokens.py [--before-src DIR] [--windows 8000,32000,200000]

The five reference servers that ``.ci/run`` installs into ``.refservers/`` (mcp-server-time,
mcp-server-git, server-everything, server-memory, server-filesystem), with git's
``git_reset`` force-prompted, are refreshed once into a temporary data directory; then, per
window, ``pegboard serve --context-window N`` is started over stdio and asked for
``tools/list``. Each row: the listed tools, how many of them are MCP tools annotated
``destructiveHint``, the force-prompted ones, the meta-tools, and the tokens of the listed
definitions (o200k over name + description + schemas + annotations, pegboard's counter) and
of the server's ``instructions``. ``--before-src DIR`` runs an older checkout's gateway
(``PYTHONPATH=DIR``) on the same cache in the same run, for before/after. Prints Markdown.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import tomli_w
from mcp import Client, StdioServerParameters, stdio_client

from pegboard.core.definition import ToolDefinition
from pegboard.core.tokens import default_token_counter

ROOT = Path(__file__).resolve().parents[1]
REFSERVERS = ROOT / ".refservers"
PY_BIN = REFSERVERS / "py" / "bin"
NPM_BIN = REFSERVERS / "npm" / "node_modules" / ".bin"
PEGBOARD = str(Path(sys.executable).parent / "pegboard")
META = {"tool_search", "tool_inspect", "tool_invoke", "tool_exec"}
FORCED = "mcp__git__git_reset"


def write_config(tmp: Path) -> None:
    repo, files = tmp / "repo", tmp / "files"
    files.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    config = {
        "servers": {
            "time": {"command": str(PY_BIN / "mcp-server-time")},
            "git": {
                "command": str(PY_BIN / "mcp-server-git"),
                "args": ["--repository", str(repo)],
                "force_prompt_tools": ["git_reset"],
            },
            "everything": {"command": str(NPM_BIN / "mcp-server-everything")},
            "memory": {
                "command": str(NPM_BIN / "mcp-server-memory"),
                "env": {"MEMORY_FILE_PATH": str(tmp / "memory.jsonl")},
            },
            "filesystem": {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(files)]},
        }
    }
    (tmp / "config.toml").write_text(tomli_w.dumps(config), encoding="utf-8")


def env_for(tmp: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    return (
        env
        | {
            "PEGBOARD_DATA_DIR": str(tmp / "data"),
            "PEGBOARD_CONFIG": str(tmp / "config.toml"),
        }
        | extra
    )


async def listing(tmp: Path, window: int, extra: dict[str, str]) -> dict[str, Any]:
    params = StdioServerParameters(
        command=PEGBOARD,
        args=["serve", "--context-window", str(window)],
        env=env_for(tmp, extra),
    )
    counter = default_token_counter()
    # The ready snapshot is keyed by the command line and config, not by the code: another
    # checkout's snapshot would answer tools/list for this one.
    shutil.rmtree(tmp / "data" / "ready", ignore_errors=True)
    with anyio.fail_after(120):
        async with Client(stdio_client(params), mode="legacy") as client:
            tools = (await client.list_tools()).tools
            instructions = client.instructions or ""
    tokens = 0
    destructive = 0
    for tool in tools:
        annotations = (
            tool.annotations.model_dump(by_alias=True, exclude_none=True)
            if tool.annotations
            else None
        )
        definition = ToolDefinition(
            name=tool.name,
            description=tool.description or "",
            input_schema=tool.input_schema,
            output_schema=tool.output_schema,
            annotations=annotations,
        )
        tokens += counter.count_tool(definition)
        if (annotations or {}).get("destructiveHint") and not (annotations or {}).get(
            "readOnlyHint"
        ):
            destructive += 1
    names = [t.name for t in tools]
    return {
        "tools": len(tools),
        "destructive": destructive,
        "forced": int(FORCED in names),
        "meta": sum(1 for n in names if n in META),
        "tokens": tokens,
        "instructions": counter.count_text(instructions),
    }


async def main(ns: argparse.Namespace) -> None:
    missing = [
        p.name for p in (PY_BIN / "mcp-server-git", NPM_BIN / "mcp-server-memory") if not p.exists()
    ]
    if missing:
        sys.exit(
            f"{', '.join(missing)} not installed: run the reference-server installs of .ci/run"
        )
    windows = [int(w) for w in ns.windows.split(",")]
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        write_config(tmp)
        refresh = await anyio.run_process(
            [PEGBOARD, "servers", "refresh"], env=env_for(tmp, {}), check=False
        )
        if refresh.returncode != 0:
            sys.exit(f"servers refresh failed:\n{refresh.stdout.decode()}{refresh.stderr.decode()}")
        codes = {"after (this checkout)": {}}
        if ns.before_src:
            codes = {"before (--before-src)": {"PYTHONPATH": ns.before_src}, **codes}
        rows = []
        for window in windows:
            for label, extra in codes.items():
                rows.append((window, label, await listing(tmp, window, extra)))
    print("tools/list of pegboard serve on the reference servers (o200k tokens)\n")
    print(
        "| window | code | tools listed | destructive inline | force-prompt inline "
        "| meta-tools | tools/list tokens | % of window | instructions tokens |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for window, label, r in rows:
        share = 100 * r["tokens"] / window
        print(
            f"| {window:,} | {label} | {r['tools']} | {r['destructive']} | {r['forced']} "
            f"| {r['meta']} | {r['tokens']:,} | {share:.1f}% | {r['instructions']:,} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before-src", help="src/ of an older checkout, for before/after rows")
    parser.add_argument("--windows", default="8000,32000,200000")
    anyio.run(main, parser.parse_args())
