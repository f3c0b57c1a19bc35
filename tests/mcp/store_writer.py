"""Writes catalog records in a loop, printing each committed generation (for crash tests).

python store_writer.py PATH crash        # one server, ever-growing generations, forever
python store_writer.py PATH many ID N    # N records server ids ID-0..ID-(N-1), then exit
"""

from __future__ import annotations

import sys

# The store modules alone: ``pegboard.mcp`` loads its submodules lazily, so neither the
# catalog nor the MCP SDK (~2 s on a loaded machine) is imported by a script started many times.
from pegboard.mcp.store import StoredServer
from pegboard.mcp.store_sqlite import SqliteCatalogStore


def main() -> None:
    path, mode = sys.argv[1], sys.argv[2]
    store = SqliteCatalogStore(path)
    assert store.persistent
    if mode == "crash":
        gen = 0
        while True:
            gen += 1
            tools = tuple({"name": f"t{i}", "gen": gen, "pad": "x" * 200} for i in range(2000))
            store.put(StoredServer("s", fingerprint="f", tools=tools, fetched_at=float(gen)))
            print(gen, flush=True)
    prefix, count = sys.argv[3], int(sys.argv[4])
    for i in range(count):
        store.put(StoredServer(f"{prefix}-{i}", fingerprint="f", tools=({"name": "t"},)))
    store.close()


if __name__ == "__main__":
    main()
