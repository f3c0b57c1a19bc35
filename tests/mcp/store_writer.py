"""Writes catalog records in a loop, printing each committed generation (for crash tests).

python store_writer.py PATH crash        # one server, ever-growing generations, forever
python store_writer.py PATH many ID N    # N records server ids ID-0..ID-(N-1), then exit
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

# Load store.py alone: importing the pegboard.mcp package pulls in the MCP SDK (~2 s on a
# loaded machine), which would dominate a test that starts this script many times.
_STORE = Path(__file__).parents[2] / "src" / "pegboard" / "mcp" / "store.py"
_spec = importlib.util.spec_from_file_location("pegboard_mcp_store", _STORE)
assert _spec is not None
assert _spec.loader is not None
store_module = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = store_module  # dataclasses look their module up here
_spec.loader.exec_module(store_module)
SqliteCatalogStore = store_module.SqliteCatalogStore
StoredServer = store_module.StoredServer


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
