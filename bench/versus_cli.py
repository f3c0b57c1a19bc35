"""The ``cli`` section of ``bench/versus.py``: the cache-read commands beside ``python -c
"import mcp.types"``, whole processes, per-process CPU, wall time and peak RSS (``wait4``).

The catalog: the SDK test server with generated tools up to 527 (LiveMCPBench's size), listed
once by ``pegboard servers refresh``; nothing is started by the timed commands. Rows alternate
run by run (the code before, with ``--before-src``, beside each command), medians.

With ``--cli-instructions`` (:func:`cli_instructions`), each row also runs once under
``valgrind --tool=callgrind`` (``PYTHONHASHSEED=0``): instructions executed, a figure the
load of a shared machine does not move (CPU seconds there swing by 20% between runs).
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import tomli_w

from versus_stdio import PEGBOARD, SDK_SERVER

TOOLS = 519  # + the SDK test server's own 8 = 527
COMMANDS = {
    "tools list --json": ["tools", "list", "--json"],
    "tools list": ["tools", "list"],
    "tools search weather": ["tools", "search", "weather"],
    "tools inspect": ["tools", "inspect", "mcp__up__echo"],
    "servers status": ["servers", "status"],
    "servers list": ["servers", "list"],
}
IMPORT_MCP_TYPES = 'python -c "import mcp.types"'
TIME = "/usr/bin/time"  # GNU time (Debian package ``time``)


def prepare(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    args = [str(SDK_SERVER), "stdio", "--tools", str(TOOLS)]
    config = {"servers": {"up": {"command": sys.executable, "args": args, "list_timeout": 60}}}
    (home / "config.toml").write_text(tomli_w.dumps(config))
    env = dict(os.environ, PEGBOARD_CONFIG=str(home / "config.toml"))
    env["PEGBOARD_DATA_DIR"] = str(home / "data")
    # The models' vocabulary tables of this home's own: the user cache keeps 4 of each model
    # (search.vocab.KEEP_TABLES), and several checkouts run beside each other on one machine
    # rewrite each other's, which a run then counts (150 M instructions of a search).
    env["PEGBOARD_CACHE_DIR"] = str(home / "cache")
    subprocess.run([PEGBOARD, "servers", "refresh"], env=env, capture_output=True, check=True)
    return env


def _once(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(CPU s, wall s, peak RSS MB) of one run. The command runs under GNU time, whose peak RSS
    is the command's own (a process forked from this one would report this one's peak RSS as
    its own); the CPU is ``wait4``'s of the time process, which holds the command it waited
    for, to the microsecond (GNU time prints 10 ms steps, as wide as the gaps looked for here;
    time's own share is ~1 ms, alike in every row)."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [TIME, "-f", "%M", *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert child.stderr is not None
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    child.stderr.close()
    wall = time.perf_counter() - started
    if child.returncode != 0:
        raise RuntimeError(f"{argv} exited with {child.returncode}: {stderr[-300:]!r}")
    rss_kb = stderr.decode().split()[-1]
    return usage.ru_utime + usage.ru_stime, wall, int(rss_kb) / 1024


def _rows(
    env: dict[str, str], before_src: str | None
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """label -> (argv, environment) of every row, ``import mcp.types`` first."""
    rows: dict[str, tuple[list[str], dict[str, str]]] = {
        IMPORT_MCP_TYPES: ([sys.executable, "-c", "import mcp.types"], env)
    }
    for label, args in COMMANDS.items():
        if before_src:
            rows[f"{label} (code before)"] = ([PEGBOARD, *args], env | {"PYTHONPATH": before_src})
        rows[label] = ([PEGBOARD, *args], env)
    return rows


def cli_instructions(home: Path, before_src: str | None) -> dict[str, float]:
    """label -> millions of instructions of one run under callgrind (two rows at a time; the
    catalog of :func:`prepare`, its search index built by a first run of each tree)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--cli-instructions needs valgrind: apt-get install valgrind")
    rows = _rows(prepare(home), before_src)
    for argv, env in rows.values():  # each tree's derived files written before the counts
        subprocess.run(argv, env=env, capture_output=True, check=False)

    def count(row: tuple[list[str], dict[str, str]]) -> float:
        argv, env = row
        done = subprocess.run(
            [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
            env=env | {"PYTHONHASHSEED": "0"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        found = re.search(r"Collected : (\d+)", done.stderr)
        if done.returncode != 0 or found is None:
            raise RuntimeError(f"{argv} under callgrind: {done.stderr[-300:]!r}")
        return int(found.group(1)) / 1e6

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(rows, pool.map(count, rows.values()), strict=True))


def print_instructions(found: dict[str, float]) -> None:
    print("\nCLI cache reads, 527 cached tools: instructions of one run (callgrind)\n")
    print("| command | M instructions | x of import mcp.types | x of the code before |")
    print("| --- | ---: | ---: | ---: |")
    base = found[IMPORT_MCP_TYPES]
    for label, value in found.items():
        before = found.get(f"{label} (code before)")
        vs = f"x{value / before:.3f}" if before else ""
        print(f"| {label} | {value:.1f} | x{value / base:.2f} | {vs} |")


def cli_reads(home: Path, before_src: str | None, repeats: int) -> dict[str, list[float]]:
    """label -> [median CPU s, median wall s, peak RSS MB, min CPU s, max CPU s]."""
    if not Path(TIME).exists():
        raise SystemExit(f"the cli section needs GNU time at {TIME}: apt-get install time")
    rows = _rows(prepare(home), before_src)
    runs: dict[str, list[tuple[float, float, float]]] = {label: [] for label in rows}
    for _ in range(repeats):
        for label, (argv, row_env) in rows.items():
            runs[label].append(_once(argv, row_env))
    return {
        label: [
            statistics.median(r[0] for r in found),
            statistics.median(r[1] for r in found),
            max(r[2] for r in found),
            min(r[0] for r in found),
            max(r[0] for r in found),
        ]
        for label, found in runs.items()
    }


def print_cli(found: dict[str, list[float]], repeats: int) -> None:
    print(f"\nCLI cache reads, 527 cached tools ({repeats} runs each, medians)\n")
    print(
        "| command | CPU s | CPU min-max | x of import mcp.types (CPU) | wall s | x (wall) "
        "| peak RSS MB |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    cpu0, wall0, *_ = found[IMPORT_MCP_TYPES]
    for label, (cpu, wall, rss, low, high) in found.items():
        print(
            f"| {label} | {cpu:.3f} | {low:.3f}-{high:.3f} | x{cpu / cpu0:.3f} | {wall:.3f} "
            f"| x{wall / wall0:.2f} | {rss:.0f} |"
        )
