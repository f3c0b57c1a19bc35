"""Off switches in the environment (``PEGBOARD_NO_FAST_CALLS``, ``PEGBOARD_NO_UVLOOP``): the
one rule for reading them."""

from __future__ import annotations

import os

ON_VALUES = ("1", "true", "yes")


def switched_off(name: str) -> bool:
    """Whether the environment variable ``name`` is set to 1, true or yes."""
    return os.environ.get(name, "") in ON_VALUES
