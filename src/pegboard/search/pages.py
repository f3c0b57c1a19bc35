"""The memory-mapped files a search reads, unmapped from the process once it has ranked.

A search reads every vector of the stored index (10 MB of the file at 5,000 tools), a few of
its postings, a few rows of the embedding tables and slots of the vocabulary tables; the pages
it touched stayed in the process's RSS between searches (with the kernel's fault-around, 64 KiB
per touched page). :func:`release` drops them (``MADV_DONTNEED``): the files stay in the page
cache (shared, clean), so the next search maps back what it reads without reading the disk, one
page fault per 64 KiB. Without ``madvise`` (Windows) the pages stay.
"""

from __future__ import annotations

import contextlib
import mmap
import threading
import weakref
from typing import Any

_kept: weakref.WeakSet[mmap.mmap] = weakref.WeakSet()
_lock = threading.Lock()


def keep(mapping: Any) -> None:
    """Release ``mapping``'s pages after each search, if it is an ``mmap`` (a mapping gone with
    the arrays that viewed it is forgotten)."""
    if isinstance(mapping, mmap.mmap):
        with _lock:
            _kept.add(mapping)


def release() -> None:
    """Unmap the pages of every kept mapping from this process."""
    if not hasattr(mmap, "MADV_DONTNEED"):
        return
    with _lock:
        mappings = list(_kept)
    for mapping in mappings:
        with contextlib.suppress(OSError, ValueError):  # ValueError: a closed mapping
            mapping.madvise(mmap.MADV_DONTNEED)
