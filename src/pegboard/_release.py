"""What a distribution's metadata header says: its installed release, for the heads of the
data directory's derived files (a file written by another release is ignored), and its
name, for the order of the ``pegboard.tools`` plugins."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.metadata import Distribution


@cache
def release(package: str) -> str:
    """``importlib.metadata.version(package)``, or ``"source"`` when ``package`` is not
    installed (run from a source tree); read by :func:`header_field`."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution(package)
    except PackageNotFoundError:
        return "source"
    return header_field(dist, "Version") or dist.version


def header_field(dist: Distribution, field: str) -> str | None:
    """The ``field`` of the metadata's header (``dist.metadata[field]`` for a one-line field).

    Read from the header alone: ``dist.metadata`` parses the whole file with the email
    parser, and pegboard's carries the README (85 kB, ~3 ms a read, on every CLI start).
    None when the header has no such line (the caller falls back on ``dist.metadata``).
    """
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    key = f"{field}:"
    for line in text.partition("\n\n")[0].splitlines():
        if line.startswith(key):
            return line.removeprefix(key).strip()
    return None
