"""The installed release of a distribution, for the heads of the data directory's derived
files (a file written by another release is ignored)."""

from __future__ import annotations

from functools import cache


@cache
def release(package: str) -> str:
    """``importlib.metadata.version(package)``, or ``"source"`` when ``package`` is not
    installed (run from a source tree).

    Read from the metadata's header alone: ``version()`` parses the whole file with the email
    parser, and pegboard's carries the README (85 kB, ~3 ms a read, on every CLI start).
    """
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution(package)
    except PackageNotFoundError:
        return "source"
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    for line in text.partition("\n\n")[0].splitlines():
        if line.startswith("Version:"):
            return line.removeprefix("Version:").strip()
    return dist.version
