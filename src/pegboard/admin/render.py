"""The templates' environment: autoescaped HTML, and the filters the pages use."""

from __future__ import annotations

import json
import time
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from pegboard.core.redact import shown


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("pegboard.admin", "templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["ago"] = ago
    env.filters["when"] = when
    env.filters["shown"] = shown
    env.filters["pretty"] = pretty
    return env


def ago(stamp: float | None, now: float | None = None) -> str:
    """``42 s ago``, ``3 min ago``, ``5 h ago``, ``2 d ago``; ``-`` for no time."""
    if not isinstance(stamp, int | float):
        return "-"
    seconds = max(0.0, (now or time.time()) - stamp)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return f"{int(seconds)} s ago"


def when(stamp: float | None) -> str:
    if not isinstance(stamp, int | float):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(stamp))


def pretty(value: Any) -> str:
    """Indented JSON with invisible and control characters shown escaped (``\\u200b``)."""
    return shown(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str))
