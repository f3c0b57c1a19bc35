"""The ``pegboard`` command line.

:func:`main` starts the stdio serve's early answers (:mod:`pegboard.gateway.early`; a command
line without ``serve`` does not import it) before it imports the command tree, so a client's
handshake does not wait for the imports. The imports
run as one :func:`~pegboard._lazy.import_burst` (no garbage collection during them), and the
process's objects are frozen again at the end, so the exit's collections walk none of them.
"""

from __future__ import annotations

import gc
import sys
from typing import TYPE_CHECKING, Any


def main() -> None:
    from pegboard._lazy import import_burst

    with import_burst():
        if "serve" in sys.argv[1:]:  # no stdio serve without it: other commands skip the module
            from pegboard.gateway import early

            early.start(sys.argv[1:])
        from pegboard.cli.app import app
    try:
        app()
    except Exception as exc:
        # A config problem found only when a command first opens its stores (an unreachable
        # team store): one line and exit 2, like every other config error.
        from pegboard.errors import ConfigError

        if not isinstance(exc, ConfigError):
            raise
        from pegboard.cli._common import EXIT_USAGE
        from pegboard.cli.render import print_error

        print_error(str(exc))
        sys.exit(EXIT_USAGE)
    finally:
        gc.freeze()


def __getattr__(name: str) -> Any:
    if name == "app":
        from pegboard.cli.app import app

        return app
    raise AttributeError(f"module 'pegboard.cli' has no attribute {name!r}")


if TYPE_CHECKING:
    from pegboard.cli.app import app

__all__ = ["app", "main"]
