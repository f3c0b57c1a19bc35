"""Tool names the provider APIs accept: ``^[a-zA-Z0-9_-]{1,64}$`` for OpenAI and Anthropic.

Wire names built by :mod:`pegboard.core.names` always qualify; a user-registered name might
not, and a request carrying it would be refused by the API with a less helpful message.
"""

from __future__ import annotations

import re

from pegboard.errors import ConfigError

PROVIDER_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def checked_name(name: str, provider: str) -> str:
    """``name`` itself, or :class:`ConfigError` saying why ``provider`` would refuse it."""
    if PROVIDER_NAME_RE.match(name):
        return name
    raise ConfigError(
        f"Tool name {name!r} is not accepted by {provider}: use 1-64 characters from "
        "letters, digits, '_' and '-'. Register the tool under such a name."
    )
