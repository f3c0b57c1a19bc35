"""Find this process's Monty worker subprocesses (to kill or freeze them from a tool)."""

from __future__ import annotations

import os
from pathlib import Path


def monty_workers() -> list[int]:
    """Pids of the live ``monty`` children of this process (read from /proc/*/stat)."""
    me = os.getpid()
    pids: list[int] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces, so split after the last ")".
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == me and comm.startswith("monty"):
            pids.append(int(proc.name))
    return pids
