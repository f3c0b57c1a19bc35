"""The floor of a stdio proxy: a standard-library JSON-RPC relay, line for line.

    python bench/relay.py COMMAND [ARG ...]

Spawns COMMAND and copies each line from our stdin to its stdin and from its stdout to ours,
parsing each as JSON on the way (what any proxy must do at least) and nothing else.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import IO


def pump(source: IO[bytes], sink: IO[bytes]) -> None:
    for line in source:
        json.loads(line)
        sink.write(line)
        sink.flush()
    sink.close()


def main() -> None:
    child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None
    assert child.stdout is not None
    up = threading.Thread(target=pump, args=(sys.stdin.buffer, child.stdin), daemon=True)
    up.start()
    pump(child.stdout, sys.stdout.buffer)
    child.wait()


if __name__ == "__main__":
    main()
