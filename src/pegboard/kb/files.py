"""Finding and reading the files to ingest: regular files under the paths given, nothing else.

Every file is opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` on the open
descriptor, so a symlink swapped in after the walk, a FIFO (which would block a plain open), a
device or a socket is refused before a byte is read, and the size cap applies to what is open
(a sparse 10 GB file is refused by its size, never read). A symlink is followed only when its
target stays under the root that was given (security.md section 5).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pegboard.errors import FileTooLarge, PathNotAllowed
from pegboard.kb.excludes import excluded

SUFFIXES = frozenset({".md", ".markdown", ".txt", ".text", ".html", ".htm", ".xhtml", ".pdf"})
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_FILES = 100_000
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A file to ingest (``path`` as found) and the resolved root it must stay under."""

    path: Path
    root: Path


@dataclass(frozen=True, slots=True)
class Skipped:
    """A path that was not ingested, and why: ``reason`` is one line naming the path."""

    path: str
    reason: str


def discover(
    paths: Iterable[str | os.PathLike[str]],
    *,
    max_files: int = MAX_FILES,
    exclude: Sequence[str] = (),
) -> tuple[list[Candidate], list[Skipped]]:
    """The readable-looking files under ``paths`` (directories walked recursively, sorted),
    less those the ``exclude`` patterns name (:mod:`pegboard.kb.excludes`).

    Unknown suffixes are skipped only inside directories: a file named explicitly is tried.
    """
    found: list[Candidate] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for raw in paths:
        for item in _expand(raw, skipped, exclude):
            key = os.path.realpath(item.path)
            if key in seen:
                continue
            seen.add(key)
            if len(found) >= max_files:
                skipped.append(
                    Skipped(str(item.path), f"{item.path}: over the limit of {max_files} files")
                )
                continue
            found.append(item)
    return found, skipped


def _expand(
    raw: str | os.PathLike[str], skipped: list[Skipped], exclude: Sequence[str]
) -> Iterator[Candidate]:
    text = os.fspath(raw)
    if "\0" in text:
        skipped.append(Skipped(repr(text), f"{text!r}: the path contains a NUL byte"))
        return
    path = Path(text).expanduser().absolute()
    try:
        is_dir = path.is_dir()
        root = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        skipped.append(Skipped(text, f"{text}: {_os_reason(exc, 'cannot be resolved')}"))
        return
    if not is_dir:
        if not excluded(path.name, exclude):
            yield Candidate(path, root)
        return
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False, onerror=None):
        here = Path(dirpath).relative_to(path).as_posix()
        prefix = "" if here == "." else here + "/"
        dirnames[:] = sorted(n for n in dirnames if not excluded(prefix + n, exclude))
        for name in list(dirnames):
            sub = Path(dirpath, name)
            if sub.is_symlink() and not _inside(sub, root):
                skipped.append(
                    Skipped(str(sub), f"{sub}: a symlink leading outside {root}; not read")
                )
        for name in sorted(filenames):
            file = Path(dirpath, name)
            if file.suffix.lower() in SUFFIXES and not excluded(prefix + name, exclude):
                yield Candidate(file, root)


def _inside(path: Path, root: Path) -> bool:
    real = os.path.realpath(path)
    return os.path.commonpath([real, root]) == str(root)


def read_regular(candidate: Candidate, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of one regular file under its root, or PathNotAllowed / FileTooLarge."""
    path = candidate.path
    real = Path(os.path.realpath(path))
    if not _inside(real, candidate.root):
        raise PathNotAllowed(f"{path}: a symlink leading outside {candidate.root}; not read")
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        raise PathNotAllowed(f"{path}: {_os_reason(exc, 'cannot be opened')}") from exc
    with os.fdopen(fd, "rb", buffering=0) as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise PathNotAllowed(f"{path}: {_kind(info.st_mode)}, not a regular file; not read")
        if info.st_size > max_bytes:
            sparse = " (a sparse file)" if info.st_blocks * 512 < info.st_size // 2 else ""
            raise FileTooLarge(
                f"{path}: {info.st_size:,} bytes{sparse}, over the {max_bytes:,}-byte limit"
            )
        data = _read_capped(handle, max_bytes)
    if len(data) > max_bytes:  # it grew after fstat
        raise FileTooLarge(f"{path}: grew past the {max_bytes:,}-byte limit while being read")
    return data


def _read_capped(handle: IO[bytes], max_bytes: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while total <= max_bytes:
        block = handle.read(min(1 << 20, max_bytes + 1 - total))
        if not block:
            break
        parts.append(block)
        total += len(block)
    return b"".join(parts)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a special file"


def _os_reason(exc: BaseException, fallback: str) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        if exc.errno == getattr(os, "ELOOP", None):
            return "a symlink (loop, or swapped in after the check); not read"
        return exc.strerror.lower()
    return fallback
