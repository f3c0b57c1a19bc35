"""The ``pegboard`` command line."""

from __future__ import annotations

from pegboard.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
