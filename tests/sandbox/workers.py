"""Find this process's Monty worker subprocesses (to kill or freeze them from a tool)."""

from __future__ import annotations

import os
from pathlib import Path


def monty_workers() -> list[int]:
    """Pids of the live ``monty`` children of this process."""
    pids: list[int] = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        children = (task / "children").read_text().split()
        for pid in children:
            try:
                name = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if name.startswith("monty"):
                pids.append(int(pid))
    return pids
