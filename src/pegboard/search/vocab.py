"""A tokenizer's vocabulary (piece -> id) as one flat table, kept in the vector cache directory.

A dict of 30,000 pieces holds a str object per piece and an int object per id: 4.0-5.6 MB of
heap for each of the two shipped vocabularies (MiniLM's word pieces, WordLlama's LLaMA-2
pieces) in every ``pegboard serve`` at rest (bench/RESULTS.md, issue 29 item 5), and reading
WordLlama's from its ``tokenizer.json`` parses 61,249 merges too at each start.
:class:`Vocabulary` is an open-addressing table (linear probing, at most half full) keyed by
``zlib.crc32`` of the piece's UTF-8 bytes, in one buffer of ``uint32`` columns and the pieces'
bytes: about 1 MB for 30,000 pieces. :func:`cached_vocabulary` writes it once into the vector
cache directory (next to ``table-digests.json``, named by a digest of the source file's
content, so every checkout or install of one model shares one table) and maps it back
read-only, so a later start parses nothing and only the pages its lookups touch become
resident.

A lookup is an encode, a CRC and a few array reads in Python, several times a dict's cost:
fine for a query's few dozen lookups (tokenized words are cached); a bulk tokenization (an
index build) takes :meth:`Vocabulary.as_dict`, a transient dict, for its duration.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os
import struct
import tempfile
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from pegboard.search.pages import keep as keep_pages

logger = logging.getLogger("pegboard.search")

# Texts in one embedding call from which its tokenizer takes a transient dict (``bulk()``).
BULK_TEXTS = 64
# Tables kept per vocabulary in the cache directory (one per content of the model's file).
KEEP_TABLES = 4
# Digests remembered in ``table-digests.json`` (one per model file of each checkout or install).
KEEP_DIGESTS = 64
DIGESTS_FILE = "table-digests.json"

MAGIC = b"PEGBOARD-VOCAB2\n"
# CRC-32 of the body (against a damaged file: 0.2 ms a MB where blake2b took 1.2), pieces,
# slots (a power of 2); native byte order, as the columns (``array``/``memoryview`` of ``I``):
# the file is this machine's cache.
_HEAD = struct.Struct("=III")
_START = len(MAGIC) + _HEAD.size


class Vocabulary(Mapping[str, int]):
    """A read-only ``str -> int`` mapping over ``raw`` (the bytes :meth:`encode` makes, or a
    mapping of a file of them). Raises ``ValueError`` when ``raw`` is not such a table."""

    __slots__ = ("_blob", "_ends", "_hashes", "_ids", "_mask", "_raw", "_slots")

    def __init__(self, raw: bytes | mmap.mmap | memoryview) -> None:
        if len(raw) < _START or raw[: len(MAGIC)] != MAGIC:
            raise ValueError("not a vocabulary table")
        _, count, size = _HEAD.unpack_from(raw, len(MAGIC))
        words = memoryview(raw)[_START:]
        table = size + 3 * count + 1  # slots, hashes, ids, ends: uint32 each
        if size & (size - 1) or size < 2 * count or len(words) < 4 * table:
            raise ValueError("vocabulary table cut short")
        columns = words[: 4 * table].cast("I")
        self._slots = columns[:size]  # entry + 1, 0 when free
        self._hashes = columns[size : size + count]
        self._ids = columns[size + count : size + 2 * count]
        self._ends = columns[size + 2 * count :]  # entry e's bytes: blob[ends[e]:ends[e + 1]]
        self._blob = _START + 4 * table  # where the pieces' bytes start in raw
        if len(raw) < self._blob + (self._ends[count] if count else 0):
            raise ValueError("vocabulary table cut short")
        self._raw, self._mask = raw, size - 1

    @staticmethod
    def encode(pieces: Iterable[tuple[str, int]]) -> bytes:
        """The table of ``pieces`` (a later duplicate piece wins, as in a dict of them)."""
        entries: dict[bytes, int] = {}
        for piece, value in pieces:
            entries[piece.encode("utf-8", "surrogatepass")] = value
        size = 8
        while size < 2 * len(entries):
            size *= 2
        mask = size - 1
        slots = [0] * size
        hashes, ends, blob = [], [0], bytearray()
        for entry, data in enumerate(entries):
            h = zlib.crc32(data)
            i = h & mask
            while slots[i]:
                i = (i + 1) & mask
            slots[i] = entry + 1
            hashes.append(h)
            blob += data
            ends.append(len(blob))
        count = len(entries)
        columns = array("I", slots)
        for column in (hashes, entries.values(), ends):
            columns.extend(column)
        body = columns.tobytes() + blob
        return MAGIC + _HEAD.pack(zlib.crc32(body), count, size) + body

    def get(self, key: object, default: int | None = None, /) -> int | None:  # type: ignore[override]
        if not isinstance(key, str):
            return default
        data = key.encode("utf-8", "surrogatepass")
        h = zlib.crc32(data)
        slots, hashes, ends = self._slots, self._hashes, self._ends
        raw, blob, mask = self._raw, self._blob, self._mask
        i = h & mask
        while entry := slots[i]:
            entry -= 1
            if hashes[entry] == h and raw[blob + ends[entry] : blob + ends[entry + 1]] == data:
                found: int = self._ids[entry]
                return found
            i = (i + 1) & mask
        return default

    def __getitem__(self, key: str) -> int:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        return (self._piece(e) for e in range(len(self._ids)))

    def __len__(self) -> int:
        return len(self._ids)

    def _piece(self, entry: int) -> str:
        start, end = self._blob + self._ends[entry], self._blob + self._ends[entry + 1]
        return bytes(self._raw[start:end]).decode("utf-8", "surrogatepass")

    def as_dict(self) -> dict[str, int]:
        """The same pairs as a dict: for a bulk tokenization, dropped after it."""
        return {self._piece(e): self._ids[e] for e in range(len(self._ids))}


def as_dict(vocab: Mapping[str, int]) -> dict[str, int]:
    """``vocab`` as a dict (:meth:`Vocabulary.as_dict` for a table)."""
    return vocab.as_dict() if isinstance(vocab, Vocabulary) else dict(vocab)


def cached_vocabulary(
    source: Path, read: Callable[[], Iterable[tuple[str, int]]], name: str
) -> Vocabulary:
    """The vocabulary ``read()`` gives from ``source``, kept as a table file in the vector
    cache directory (:func:`pegboard.search.default_cache_dir`) and mapped from there.

    The file is named by ``name`` and a digest of ``source``'s content (remembered by its
    path, size and modification time, :func:`remembered_digest`): checkouts and installs of
    one model share the table, a changed model has another; one that fails its check is
    rewritten. Without a usable cache directory the table is built in memory at each start.
    """
    from pegboard.search import default_cache_dir

    try:
        directory = default_cache_dir()
        if directory is not None:
            content = remembered_digest([source.resolve()], lambda: _file_digest(source))
    except OSError:
        directory = None
    if directory is None:
        return Vocabulary(Vocabulary.encode(read()))
    path = directory / f"vocab-{name}-{content}.bin"
    try:
        return _mapped(path)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        logger.warning("rebuilding the unusable vocabulary table %s: %s", path, exc)
    raw = Vocabulary.encode(read())
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        Path(tmp).replace(path)
        _prune(directory, name)
        return _mapped(path)
    except (OSError, ValueError) as exc:
        logger.warning("cannot keep the vocabulary table in %s: %s", directory, exc)
        return Vocabulary(raw)


def _file_digest(source: Path) -> str:
    digest = hashlib.sha256()
    with source.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def remembered_digest(files: Sequence[Path], compute: Callable[[], str]) -> str:
    """``compute()`` (a digest of ``files``' content), remembered in the vector cache directory
    by the files' paths, sizes and modification times (the :data:`KEEP_DIGESTS` latest).

    Hashing a table reads every row: 0.1-0.2 s per model at each start, and with a memory-mapped
    table every page of it resident. A reinstalled table has another size or time.
    """
    from pegboard.search import default_cache_dir

    try:
        stamp = "|".join(f"{f}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files)
        directory = default_cache_dir()
    except OSError:
        return compute()
    if directory is None:
        return compute()
    path = directory / DIGESTS_FILE
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    digest = known.get(stamp)
    if isinstance(digest, str):
        return digest
    digest = compute()
    kept = dict(list(known.items())[-(KEEP_DIGESTS - 1) :])  # the oldest go
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({**kept, stamp: digest}, f)
        Path(name).replace(path)
    except OSError as exc:
        logger.warning("cannot remember the table digest in %s: %s", path, exc)
    return digest


def _prune(directory: Path, name: str) -> None:
    """Remove all but the :data:`KEEP_TABLES` most recently written tables of ``name`` (other
    installs of a model sharing the directory keep theirs)."""
    tables = sorted(
        directory.glob(f"vocab-{name}-*.bin"), key=lambda p: p.stat().st_mtime_ns, reverse=True
    )
    for old in tables[KEEP_TABLES:]:
        old.unlink(missing_ok=True)


def _mapped(path: Path) -> Vocabulary:
    """The table file at ``path``, its CRC checked by reading (which maps nothing)."""
    with path.open("rb") as f:
        head = f.read(_START)
        if len(head) < _START or head[: len(MAGIC)] != MAGIC:
            raise ValueError("not a vocabulary table")
        expected = _HEAD.unpack_from(head, len(MAGIC))[0]
        crc = 0
        while chunk := f.read(1 << 20):
            crc = zlib.crc32(chunk, crc)
        if crc != expected:
            raise ValueError("digest mismatch")
        mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    keep_pages(mapping)  # a query's lookups touch pages all over it: unmapped after a search
    return Vocabulary(mapping)
