"""The built search index kept on disk, so a start loads it instead of building it.

Building the index (BM25F postings of every tool, each embedding model's vector per tool)
takes 0.4-1.5 s of CPU at 527-4,800 tools and holds the build's intermediates (term counts per
field, every document's text) in memory. :class:`StoredIndex` writes what ranking reads into
one file of the data directory, named by a key over everything the ranking depends on (each
tool's searchable text, the BM25F and fusion parameters, the models' ids, this format's
version), and maps it back read-only (a search unmaps the pages it read once it has ranked,
:mod:`pegboard.search.pages`): the postings and vectors stay in the page cache, not in the
process, and a start with an unchanged catalog never builds.

A change of the catalog builds the new index in a background thread (from the vector cache,
so only new texts are embedded), writes it and swaps it in; a search that arrives meanwhile
waits for that build, so it never misses a tool. A change is a whole rebuild (0.4-1.5 s of CPU
at 527-4,800 tools, in the background) where the in-memory index updated only the changed
slots: catalogs change rarely, starts are frequent, and a refresh that re-lists the same tools
(new objects, same text) finds its file by key and builds nothing. A file that fails its
digest, is cut short, or belongs to another key is ignored and rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import mmap
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard._release import release
from pegboard.core.entry import ToolEntry
from pegboard.core.memory import after_burst
from pegboard.search.document import ToolDocument, document_for
from pegboard.search.flat import FLAT_TOOLS
from pegboard.search.index import IndexState, RankedState, ToolIndex, rank
from pegboard.search.interface import SearchHit
from pegboard.search.lexical import LexicalState
from pegboard.search.pages import keep as keep_pages
from pegboard.search.tables import CODES, Table
from pegboard.search.vocab import Vocabulary

if TYPE_CHECKING:
    import numpy as np

    from pegboard.search.dense import Vectors
    from pegboard.search.lexical import FloatArray
else:  # numpy loads on first use: a small stored index is ranked without it (search.flat)
    from pegboard._lazy import LazyModule

    np = LazyModule("numpy")

logger = logging.getLogger("pegboard.search")

# Bump when the ranking code changes what a built index holds (postings, weights, vectors),
# or the file's layout (3: the data's check is a CRC-32).
FORMAT = 3
MAGIC = b"PEGBOARD-INDEX\n"
_ALIGN = 64
# Index files kept per directory (one per catalog: profiles of one data directory differ).
KEEP_FILES = 4
# A temporary file this old is a write that was cut short (a write takes well under a second).
STALE_TMP_S = 600
CHANGE_DELAY_S = 0.5


def index_key(index: ToolIndex, documents: Sequence[ToolDocument]) -> str:
    """sha256 (24 hex) of what a built ``index`` over ``documents`` depends on."""
    digest = hashlib.sha256()
    head = {
        "format": FORMAT,
        "version": release("pegboard"),
        "bm25f": asdict(index.params),
        "fusion": asdict(index.fusion),
        "models": [s.embedder.model_id for s in index.signals],
    }
    digest.update(json.dumps(head, sort_keys=True).encode())
    # One JSON text of all rows: the C encoder throughout (a dumps a row was 2.4x the time).
    rows = [[d.name, d.namespace, d.label, *d.fields.values()] for d in documents]
    rows.sort(key=lambda row: row[0])
    digest.update(json.dumps(rows).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class LoadedLexical:
    """A :class:`~pegboard.search.lexical.LexicalState` as stored: postings in three arrays
    (compressed sparse rows, one row per term), mapped from the index file as Python
    sequences (``memoryview``; numpy wraps them without a copy when it ranks)."""

    names: tuple[str | None, ...]
    places: Mapping[str, tuple[str, str]]
    terms: Mapping[str, int]  # term -> row: a Vocabulary table in the file, not a dict
    bounds: Sequence[int]  # term i's postings are slots[bounds[i]:bounds[i + 1]]
    slots: Sequence[int]
    weights: Sequence[float]

    @property
    def size(self) -> int:
        return len(self.places)

    def live(self) -> Iterable[str]:
        return self.places.keys()

    def place(self, name: str) -> tuple[str, str]:
        return self.places[name]

    def idf(self, term: str) -> float:
        row = self.terms.get(term)
        if row is None:
            return 0.0
        df, n = int(self.bounds[row + 1] - self.bounds[row]), self.size
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def score(self, terms: Iterable[str]) -> list[float] | FloatArray:
        """The same sums, in the same order, as :meth:`LexicalState.score` (float64 both:
        the same numbers): in Python for a small index, numpy's above :data:`FLAT_TOOLS`."""
        if len(self.names) > FLAT_TOOLS:
            return self._numpy_score(terms)
        scores = [0.0] * len(self.names)
        for term in sorted(set(terms)):
            row = self.terms.get(term)
            if row is not None:
                idf = self.idf(term)
                start, end = self.bounds[row], self.bounds[row + 1]
                for slot, weight in zip(
                    self.slots[start:end], self.weights[start:end], strict=True
                ):
                    scores[slot] += idf * weight
        return scores

    def _numpy_score(self, terms: Iterable[str]) -> FloatArray:
        slots = np.asarray(self.slots, dtype=np.int64)
        weights = np.asarray(self.weights, dtype=np.float64)
        scores = np.zeros(len(self.names))
        for term in sorted(set(terms)):
            row = self.terms.get(term)
            if row is not None:
                start, end = self.bounds[row], self.bounds[row + 1]
                scores[slots[start:end]] += self.idf(term) * weights[start:end]
        return scores


@dataclass(frozen=True, slots=True)
class LoadedState:
    """An :class:`~pegboard.search.index.IndexState` read back from an index file."""

    lexical: LoadedLexical
    spaces: LoadedLexical
    space_of: Sequence[int]
    tables: tuple[Table, ...]  # per dense signal: row i belongs to slot i
    pages: mmap.mmap | None = None  # the file's mapping, which the arrays view

    @property
    def vectors(self) -> tuple[Vectors, ...]:
        """The tables as numpy arrays (views of the same pages)."""
        return tuple(table.array() for table in self.tables)

    @property
    def flat(self) -> bool:
        """A small catalog is ranked without numpy (:mod:`pegboard.search.flat`)."""
        return len(self.lexical.names) <= FLAT_TOOLS


# -- writing ----------------------------------------------------------------------------------


def _lexical_parts(state: LexicalState, prefix: str) -> tuple[dict[str, Any], dict[str, Any]]:
    terms = sorted(state.postings)
    lengths = [len(state.postings[t].slots) for t in terms]
    bounds = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    empty_i, empty_f = np.empty(0, np.int64), np.empty(0, np.float64)
    slots = [state.postings[t].slots.astype(np.int64) for t in terms]
    weights = [state.postings[t].weights.astype(np.float64) for t in terms]
    table = Vocabulary.encode((term, i) for i, term in enumerate(terms))
    arrays = {
        f"{prefix}.terms": np.frombuffer(table, dtype=np.uint8),
        f"{prefix}.bounds": bounds,
        f"{prefix}.slots": np.concatenate(slots) if slots else empty_i,
        f"{prefix}.weights": np.concatenate(weights) if weights else empty_f,
    }
    places = [list(state.place(n)) if n is not None else None for n in state.names]
    return {"names": list(state.names), "places": places}, arrays


def write_index(path: Path, key: str, state: IndexState) -> None:
    """Write ``state`` to ``path`` atomically (a temporary file renamed over it)."""
    lexical, arrays = _lexical_parts(state.lexical, "lexical")
    spaces, space_arrays = _lexical_parts(state.spaces, "spaces")
    arrays |= space_arrays
    arrays["space_of"] = state.space_of.astype(np.int64)
    for i, rows in enumerate(state.vectors):
        arrays[f"vectors.{i}"] = np.ascontiguousarray(rows, dtype=np.float32)
    layout: dict[str, Any] = {}
    offset = 0
    for name, array in arrays.items():
        layout[name] = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset}
        offset += _aligned(array.nbytes)
    crc = 0
    for array in arrays.values():
        crc = zlib.crc32(array.tobytes(), crc)
        crc = zlib.crc32(b"\0" * (_aligned(array.nbytes) - array.nbytes), crc)
    header = json.dumps(
        {
            "key": key,
            "lexical": lexical,
            "spaces": spaces,
            "arrays": layout,
            "data_bytes": offset,
            "data_crc32": crc,
        }
    ).encode("utf-8", "surrogatepass")
    start = _aligned(len(MAGIC) + 8 + len(header))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + struct.pack("<Q", len(header)) + header)
            f.write(b"\0" * (start - f.tell()))
            for array in arrays.values():
                f.write(array.tobytes())
                f.write(b"\0" * (_aligned(array.nbytes) - array.nbytes))
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _aligned(size: int) -> int:
    return -(-size // _ALIGN) * _ALIGN


# -- reading ----------------------------------------------------------------------------------


class BadIndexFile(ValueError):
    """An index file that is cut short, altered, or of another key or format."""


def read_index(path: Path, key: str) -> LoadedState:
    """The state stored at ``path`` for ``key``, its arrays mapped read-only.

    Raises :class:`BadIndexFile` (or ``OSError``) when the file cannot be used.
    """
    with path.open("rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            raise BadIndexFile("not an index file")
        size_field = f.read(8)
        if len(size_field) != 8:
            raise BadIndexFile("header cut short")
        (length,) = struct.unpack("<Q", size_field)
        if length > os.fstat(f.fileno()).st_size:
            raise BadIndexFile("header cut short")
        try:
            header = json.loads(f.read(length).decode("utf-8", "surrogatepass"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise BadIndexFile(f"unreadable header: {exc}") from exc
        if header.get("key") != key:
            raise BadIndexFile("built for another catalog")
        start = _aligned(len(MAGIC) + 8 + length)
        size = int(header["data_bytes"])
        f.seek(start)
        # A CRC-32 of the data, against a file damaged or cut short (the key in the header says
        # which catalog it is for): 0.2 ms a MB where blake2b took 1.2 (bench/RESULTS.md,
        # session 17).
        crc = 0
        left = size
        while left > 0:  # read(), not the mapping: checking the file keeps nothing resident
            chunk = f.read(min(left, 1 << 20))
            if not chunk:
                raise BadIndexFile("data cut short")
            crc = zlib.crc32(chunk, crc)
            left -= len(chunk)
        if crc != header["data_crc32"]:
            raise BadIndexFile("data digest mismatch")
    pages: mmap.mmap | bytes = b""
    if size:
        with path.open("rb") as f:
            pages = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        keep_pages(pages)  # unmapped after each search (pegboard.search.pages)

    def table(name: str) -> Table:
        spec = header["arrays"][name]
        dtype, shape = spec["dtype"], tuple(spec["shape"])
        if dtype not in CODES or len(shape) > 2:
            raise BadIndexFile(f"array {name} of type {dtype} and shape {shape}")
        rows, dims = (*shape, 1, 1)[:2] if shape else (1, 1)
        found = Table(pages, start + int(spec["offset"]), rows, dims, dtype)
        if not pages or rows * dims == 0:  # nothing stored: zeros of the right shape
            return Table(bytes(rows * dims * found.itemsize), 0, rows, dims, dtype)
        if found.offset + rows * dims * found.itemsize > start + size:
            raise BadIndexFile(f"array {name} runs past the data")
        return found

    def array(name: str) -> Sequence[Any]:
        return table(name).values()

    vectors = sorted((n for n in header["arrays"] if n.startswith("vectors.")), key=_vector_order)
    return LoadedState(
        _lexical(header["lexical"], "lexical", array),
        _lexical(header["spaces"], "spaces", array),
        array("space_of"),
        tuple(table(n) for n in vectors),
        pages if isinstance(pages, mmap.mmap) else None,
    )


def _vector_order(name: str) -> int:
    return int(name.rsplit(".", 1)[1])


def _lexical(
    part: dict[str, Any], prefix: str, array: Callable[[str], Sequence[Any]]
) -> LoadedLexical:
    names = tuple(part["names"])
    places = {n: (p[0], p[1]) for n, p in zip(names, part["places"], strict=True) if n is not None}
    return LoadedLexical(
        names,
        places,
        Vocabulary(memoryview(array(f"{prefix}.terms"))),  # type: ignore[arg-type]
        array(f"{prefix}.bounds"),
        array(f"{prefix}.slots"),
        array(f"{prefix}.weights"),
    )


# -- the index --------------------------------------------------------------------------------


class StoredIndex:
    """A :class:`~pegboard.search.interface.SearchIndex` built by ``make`` (an empty
    :class:`ToolIndex` with the ranker's signals) and kept in ``directory``.

    ``upsert`` and ``remove`` only record the change; the first search after a change loads the
    stored index of the new catalog, or builds, writes and loads it. Once the index has been
    used, a change starts that in a background thread at once. With ``child`` (the keyword
    arguments of :func:`pegboard.search.default_index` that make the same ranker), builds run
    in a child Python process, so a long-lived process (``pegboard serve``) keeps none of a
    build's memory: the build's many small objects outlive it as heap fragments otherwise
    (about 70 MB at 4,800 tools).
    """

    def __init__(
        self,
        directory: Path,
        make: Callable[[], ToolIndex],
        *,
        child: Mapping[str, Any] | None = None,
    ) -> None:
        self._directory = directory
        self._make = make
        self._child = child
        self._ranker: ToolIndex | None = None
        self._entries: dict[str, ToolEntry] = {}
        self._changes = 0  # bumped by every upsert/remove
        self._built = -1  # the change count ``_state`` reflects
        self._state: RankedState | None = None
        self._entries_lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._pending = False  # a background rebuild is on its way
        self._file: tuple[Path, str] | None = None  # where ``_state`` was read from, its key

    def upsert(self, entries: Iterable[ToolEntry]) -> None:
        with self._entries_lock:
            for entry in entries:
                self._entries[entry.name] = entry
            self._changes += 1
        self._changed()

    def remove(self, names: Iterable[str]) -> None:
        with self._entries_lock:
            for name in names:
                self._entries.pop(name, None)
            self._changes += 1
        self._changed()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def dense(self) -> bool:
        """Whether the ranker fuses embedding signals into the scores."""
        return self._ranker_index().dense

    def _ranker_index(self) -> ToolIndex:
        with self._entries_lock:
            if self._ranker is None:
                self._ranker = self._make()
            return self._ranker

    def search(
        self,
        queries: Sequence[str],
        *,
        limit: int = 8,
        namespaces: Sequence[str] | None = None,
        allowed: frozenset[str] | None = None,
    ) -> list[SearchHit]:
        state = self.current()
        ranker = self._ranker_index()
        return rank(state, ranker.signals, ranker.fusion, queries, limit, namespaces, allowed)

    def plan(self) -> dict[str, Any] | None:
        """How another process ranks exactly as this index does now, with
        :func:`load_plan`: ``default_index``'s arguments (the ones a child build gets), the
        stored file and its key; None before the first search, after a change not yet
        loaded, or without ``child`` arguments."""
        with self._build_lock:
            current = self._state is not None and self._built == self._changes
            if self._child is None or self._file is None or not current:
                return None
            path, key = self._file
            return {"arguments": dict(self._child), "path": str(path), "key": key}

    def current(self) -> RankedState:
        """The state of the latest catalog: loaded, or built and stored, if it is not yet."""
        with self._build_lock:
            if self._state is None or self._built != self._changes:
                self._refresh()
            assert self._state is not None
            return self._state

    def _changed(self) -> None:
        if self._state is None:  # not in use yet: the first search loads or builds
            return
        with self._entries_lock:
            if self._pending:
                return
            self._pending = True
        # A moment's delay: a registry change arrives as a removal then an upsert, and
        # servers starting together change it several times in a row.
        timer = threading.Timer(CHANGE_DELAY_S, self._background)
        timer.name, timer.daemon = "search-index", True
        timer.start()

    def _background(self) -> None:
        try:
            while True:
                self.current()
                with self._entries_lock:
                    if self._built == self._changes:
                        self._pending = False
                        return
        except Exception as exc:  # the next search builds it, and reports
            with self._entries_lock:
                self._pending = False
            logger.warning("could not rebuild the search index in the background: %s", exc)

    def _refresh(self) -> None:
        with self._entries_lock:
            changes, entries = self._changes, list(self._entries.values())
        ranker = self._ranker_index()
        documents = [document_for(e) for e in entries]
        key = index_key(ranker, documents)
        path = self._directory / f"{key}.index"
        try:
            state: RankedState = read_index(path, key)
        except FileNotFoundError:
            state = self._build(path, key, documents)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            logger.warning("ignoring the unusable search index %s (%s): rebuilding it", path, exc)
            state = self._build(path, key, documents)
        else:
            _touch(path)
        stored = isinstance(state, LoadedState)
        self._state, self._built, self._file = state, changes, (path, key) if stored else None
        after_burst()  # the header's texts and the documents were many short-lived objects

    def _build(self, path: Path, key: str, documents: Sequence[ToolDocument]) -> RankedState:
        if self._child is not None:
            try:
                build_in_child(self._child, path, key, documents)
                loaded = read_index(path, key)
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                logger.warning("could not build the search index in a child process: %s", exc)
            else:
                _prune(self._directory, keep=path)
                return loaded
        built = self._make()
        built.upsert_documents(documents)
        try:
            write_index(path, key, built.state)
            loaded = read_index(path, key)
        except (OSError, ValueError) as exc:
            logger.warning("cannot store the search index in %s: %s", path.parent, exc)
            return built.state
        _prune(self._directory, keep=path)
        return loaded  # the build's intermediates (term counts, texts) go with ``built``


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):  # only the pruning order depends on it
        os.utime(path)


def _prune(directory: Path, keep: Path) -> None:
    """Remove all but the :data:`KEEP_FILES` most recently used index files, and temporary
    files of writes cut short (older than :data:`STALE_TMP_S`)."""
    try:
        files = sorted(directory.glob("*.index"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in [f for f in files if f != keep][KEEP_FILES - 1 :]:
            old.unlink(missing_ok=True)
        now = time.time()
        for tmp in directory.glob("*.tmp"):
            if now - tmp.stat().st_mtime > STALE_TMP_S:
                tmp.unlink(missing_ok=True)
    except OSError as exc:
        logger.warning("cannot prune old search indexes in %s: %s", directory, exc)


# -- building in a child process --------------------------------------------------------------

CHILD_TIMEOUT_S = 600.0


def build_in_child(
    arguments: Mapping[str, Any], path: Path, key: str, documents: Sequence[ToolDocument]
) -> None:
    """Build the index of ``documents`` with ``default_index(**arguments)`` in a child Python
    process that writes it to ``path`` (raises when it did not)."""
    payload = {
        "arguments": dict(arguments),
        "path": str(path),
        "key": key,
        "documents": [[d.name, d.namespace, d.label, dict(d.fields)] for d in documents],
    }
    done = subprocess.run(
        [sys.executable, "-m", "pegboard.search.stored"],
        input=json.dumps(payload).encode("utf-8", "surrogatepass"),
        capture_output=True,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ValueError(f"exit {done.returncode}: {lines[-1] if lines else 'no message'}")


def ranker_of(arguments: Mapping[str, Any]) -> ToolIndex | None:
    """The empty ranker ``default_index(**arguments)`` makes (a :meth:`StoredIndex.plan`'s or a
    child build's arguments); None if they make a stored index instead."""
    from pegboard.search import default_index

    given = dict(arguments)
    if given.get("cache_dir") is not None:
        given["cache_dir"] = Path(given["cache_dir"])
    index = default_index(**given)
    return index if isinstance(index, ToolIndex) else None


def load_plan(plan: Mapping[str, Any]) -> tuple[ToolIndex, LoadedState]:
    """The ranker and the stored state of a :meth:`StoredIndex.plan` (raises
    :class:`BadIndexFile`, ``OSError`` or ``ValueError`` when they cannot be had)."""
    ranker = ranker_of(plan["arguments"])
    if ranker is None:
        raise ValueError("the plan's arguments make a stored index, not a ranker")
    return ranker, read_index(Path(plan["path"]), plan["key"])


def _child_main() -> int:
    payload = json.loads(sys.stdin.buffer.read().decode("utf-8", "surrogatepass"))
    index = ranker_of(payload["arguments"])
    if index is None:
        print("the arguments make a stored index, not a ranker", file=sys.stderr)
        return 2
    documents = [
        ToolDocument(name=n, namespace=ns, label=label, fields=fields)
        for n, ns, label, fields in payload["documents"]
    ]
    if index_key(index, documents) != payload["key"]:
        print("this process makes another ranker than its parent", file=sys.stderr)
        return 3
    index.upsert_documents(documents)
    write_index(Path(payload["path"]), payload["key"], index.state)
    return 0


if __name__ == "__main__":
    sys.exit(_child_main())
