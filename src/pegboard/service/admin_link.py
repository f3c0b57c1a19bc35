"""Where a person's browser reaches the admin UI, so an MCP client can be sent to the page of
one pending approval (``<admin>/approvals/<id>``, a URL-mode elicitation).

In order: ``[gateway] admin_url`` (what browsers reach behind a proxy or a balancer); the
``/admin`` of ``pegboard serve --http``'s own address (a loopback or named bind; a wildcard
bind such as ``0.0.0.0`` names no address a browser could use, so it needs ``admin_url``);
for a stdio gateway, a ``pegboard ui`` running on the same data directory, which says where
it listens in :data:`UI_FILE` while it runs. Without any of them clients are asked by form
only, as before.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

UI_FILE = "ui.json"  # in the data directory, while a `pegboard ui` runs
WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def approval_page(base: str, approval_id: str) -> str:
    """The page of one pending approval under the admin UI at ``base``."""
    return f"{base.rstrip('/')}/approvals/{approval_id}"


def served_admin(host: str, port: int) -> str | None:
    """The ``/admin`` of an HTTP gateway bound to ``host``:``port`` (None for a wildcard)."""
    if host in WILDCARDS:
        return None
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/admin"


@contextlib.contextmanager
def announced_ui(data_dir: Path, base: str) -> Iterator[None]:
    """While the block runs, stdio gateways on ``data_dir`` link approvals to ``base``."""
    path = data_dir / UI_FILE
    data_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"url": base, "pid": os.getpid()}), encoding="utf-8")
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            if running_ui(data_dir) == base:
                path.unlink()


def running_ui(data_dir: Path) -> str | None:
    """The admin address of the ``pegboard ui`` running on ``data_dir`` (None: none runs)."""
    try:
        found = json.loads((data_dir / UI_FILE).read_text(encoding="utf-8"))
        url, pid = str(found["url"]), int(found["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if sys.platform == "win32":  # os.kill(pid, 0) would send CTRL_C_EVENT there
        return url
    try:
        os.kill(pid, 0)  # signal 0: only whether that process still exists
    except ProcessLookupError:
        return None
    except PermissionError:  # another user's process of that id: not our ui
        return None
    return url


def approval_pages(
    configured: str | None, served: str | None, data_dir: Path | None
) -> Callable[[str], str | None] | None:
    """The gateway's ``pages.approval_page``: the page of an approval id, or None when no admin UI
    is known now (see the module docstring for the order)."""
    base = configured or served
    if base is not None:
        fixed = base
        return lambda approval_id: approval_page(fixed, approval_id)
    if data_dir is None:
        return None
    directory = data_dir

    def page(approval_id: str) -> str | None:
        ui = running_ui(directory)
        return approval_page(ui, approval_id) if ui is not None else None

    return page
