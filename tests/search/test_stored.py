"""The built index kept on disk: loaded instead of built, exact, and rebuilt when unusable."""

from __future__ import annotations

import logging
import math
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from pegboard.search import CACHE_DIR_ENV, default_index
from pegboard.search import flat as flat_module
from pegboard.search import stored as stored_module
from pegboard.search.dense import MODEL_DIR
from pegboard.search.document import document_for
from pegboard.search.index import ToolIndex
from pegboard.search.pages import release as release_pages
from pegboard.search.stored import KEEP_FILES, LoadedState, StoredIndex, index_key, read_index
from pegboard.search.vocab import Vocabulary
from pegboard.search.wordllama import WEIGHTS, semantic_available, wordllama_dir
from tests.search.test_index import CATALOG, entry

QUERIES = [
    ["read a file"],
    ["weather forecast in Paris"],
    ["send an email to bob", "search the web"],
    ["必应搜索"],
    ["xyzzy"],
    [""],
]


class Counting:
    """The default dense ranker's factory, counting the indexes it makes and fills."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self.filled = 0

    def __call__(self) -> ToolIndex:
        made = default_index(cache_dir=self.cache)
        assert isinstance(made, ToolIndex)
        counter = self

        class Filled(ToolIndex):
            def upsert_documents(self, documents: object) -> None:  # type: ignore[override]
                counter.filled += 1
                super().upsert_documents(documents)  # type: ignore[arg-type]

        filled = Filled(made.params, dense=made.signals, fusion=made.fusion)
        return filled


def stored(tmp_path: Path) -> tuple[StoredIndex, Counting]:
    factory = Counting(tmp_path / "vectors")
    index = StoredIndex(tmp_path / "index", factory)
    index.upsert(CATALOG)
    return index, factory


def results(index: StoredIndex | ToolIndex) -> list[object]:
    found: list[object] = [[(h.name, h.score) for h in index.search(q, limit=5)] for q in QUERIES]
    found.append(index.search(["file"], namespaces=["fs"]))
    found.append(index.search(["search"], allowed=frozenset({"web_search", "send_email"})))
    return found


def reference(tmp_path: Path) -> list[object]:
    index = default_index(cache_dir=tmp_path / "vectors")
    assert isinstance(index, ToolIndex)
    index.upsert(CATALOG)
    return results(index)


def the_file(tmp_path: Path) -> Path:
    (path,) = (tmp_path / "index").glob("*.index")
    return path


def test_a_stored_index_ranks_exactly_as_the_index_built_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stored_module, "FLAT_TOOLS", 0)  # numpy's scoring, as in memory
    index, factory = stored(tmp_path)

    assert results(index) == reference(tmp_path)
    assert factory.filled == 1
    assert the_file(tmp_path).stat().st_size > 0


def _rounded(found: list[object]) -> list[list[tuple[str, float]]]:
    """Each result's hits as (name, score to 6 places)."""
    out = []
    for hits in found:
        assert isinstance(hits, list)
        pairs = [h if isinstance(h, tuple) else (h.name, h.score) for h in hits]
        out.append([(name, round(score, 6)) for name, score in pairs])
    return out


def test_a_small_stored_index_ranks_without_numpy_as_numpy_does(tmp_path: Path) -> None:
    # pegboard.search.flat: the same hits in the same order, the scores to the last bits of
    # float32 products (the stored scores compared rounded to 6 places)
    index, _ = stored(tmp_path)
    assert index.current().flat
    assert _rounded(results(index)) == _rounded(reference(tmp_path))


def test_the_flat_dot_products_match_exact_sums_of_the_stored_rows(tmp_path: Path) -> None:
    # flat._dots (math.dist, polarization) against the exact float64 sum of each row's
    # products: equal to 1e-12 on every row of every stored table
    index, _ = stored(tmp_path)
    state = index.current()
    assert isinstance(state, LoadedState)
    assert state.tables
    for table in state.tables:
        vector = [((i * 37) % 11 - 5) / 7.0 for i in range(table.dims)]
        exact = [
            math.fsum(a * b for a, b in zip(table.row(i), vector, strict=True))
            for i in range(table.rows)
        ]
        found = flat_module._dots(table, vector)
        assert len(found) == table.rows
        assert max(abs(f - e) for f, e in zip(found, exact, strict=True)) < 1e-12
        assert any(abs(e) > 1e-3 for e in exact)  # not all zeros


def test_a_second_process_loads_the_stored_index_and_builds_nothing(tmp_path: Path) -> None:
    first, _ = stored(tmp_path)
    expected = results(first)

    again, factory = stored(tmp_path)

    assert results(again) == expected
    assert factory.filled == 0
    state = again.current()
    assert isinstance(state, LoadedState)
    assert np.shares_memory(state.vectors[0], np.frombuffer(state.pages, dtype=np.uint8))
    # the terms too are a table in the mapped file, not a dict of strings
    assert isinstance(state.lexical.terms, Vocabulary)
    assert isinstance(state.spaces.terms, Vocabulary)
    assert len(state.lexical.terms) > 20


def resident_kb(path: Path) -> int | None:
    """kB of ``path``'s mappings resident in this process (None when it is not mapped)."""
    found, current = None, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and "-" in parts[0] and ":" in parts[3]:  # a mapping's first line
            current = len(parts) > 5 and parts[5] == str(path)
        elif current and parts[0] == "Rss:":
            found = (found or 0) + int(parts[1])
    return found


@pytest.mark.skipif(not Path("/proc/self/smaps").is_file(), reason="reads Linux's smaps")
def test_a_search_leaves_none_of_the_mapped_files_resident(tmp_path: Path) -> None:
    first, _ = stored(tmp_path)
    expected = results(first)
    again, _ = stored(tmp_path)

    assert results(again) == expected  # ranked from the mapped file
    tables = [the_file(tmp_path), MODEL_DIR / "embeddings.npy"]
    tables += sorted(Path(os.environ[CACHE_DIR_ENV]).glob("vocab-*.bin"))
    root = wordllama_dir()
    if semantic_available() and root is not None:
        tables.append(root / WEIGHTS)
    assert len(tables) >= 3
    assert all(resident_kb(path) == 0 for path in tables)  # mapped, no page held
    state = again.current()
    assert isinstance(state, LoadedState)
    float(np.asarray(state.vectors[0]).sum())  # what a search reads
    assert (resident_kb(tables[0]) or 0) > 0
    release_pages()
    assert resident_kb(tables[0]) == 0


@pytest.mark.parametrize(
    "damage", ["flip a data byte", "cut short", "cut in the header", "garbage", "empty"]
)
def test_an_unusable_index_file_is_ignored_and_rebuilt(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    first, _ = stored(tmp_path)
    expected = results(first)
    path = the_file(tmp_path)
    data = bytearray(path.read_bytes())
    if damage == "flip a data byte":
        data[-200] ^= 0xFF
    elif damage == "cut short":
        del data[len(data) // 2 :]
    elif damage == "cut in the header":
        del data[len(b"PEGBOARD-INDEX\n") + 3 :]
    elif damage == "garbage":
        data[:40] = b"x" * 40
    else:
        data.clear()
    path.write_bytes(bytes(data))

    with caplog.at_level(logging.WARNING, logger="pegboard.search"):
        again, factory = stored(tmp_path)
        assert results(again) == expected

    assert factory.filled == 1
    assert "ignoring the unusable search index" in caplog.text
    read_index(path, path.stem)  # rewritten whole


def test_an_index_file_of_another_catalog_is_not_used(tmp_path: Path) -> None:
    first, _ = stored(tmp_path)
    results(first)
    other = the_file(tmp_path)
    renamed = other.with_name("0" * 24 + ".index")  # as if the key of this catalog
    other.rename(renamed)

    factory = Counting(tmp_path / "vectors")
    index = StoredIndex(tmp_path / "index", factory)
    index.upsert(CATALOG[:3])

    assert [h.name for h in index.search(["weather"], limit=7)] == [
        h.name for h in _memory(tmp_path, CATALOG[:3]).search(["weather"], limit=7)
    ]
    assert factory.filled == 1
    with pytest.raises(ValueError, match="another catalog"):
        read_index(renamed, "0" * 24)


def _memory(tmp_path: Path, entries: list[object]) -> ToolIndex:
    index = default_index(cache_dir=tmp_path / "vectors")
    assert isinstance(index, ToolIndex)
    index.upsert(entries)  # type: ignore[arg-type]
    return index


def test_a_change_of_the_catalog_is_searched_at_once_and_stored_anew(tmp_path: Path) -> None:
    index, factory = stored(tmp_path)
    index.search(["file"])
    added = entry("get_forecast", "Rain and snow forecast for a region.", "meteo")

    index.upsert([added])
    index.remove(["send_email"])

    everything = [*[e for e in CATALOG if e.name != "send_email"], added]
    memory = _memory(tmp_path, everything)
    for query in (["rain forecast"], ["send an email"], ["file"]):
        assert _rounded([index.search(query, limit=4)]) == _rounded([memory.search(query, limit=4)])
    key = index_key(memory, [document_for(e) for e in everything])
    read_index(tmp_path / "index" / f"{key}.index", key)  # stored for the next process
    assert factory.filled >= 2


def test_a_change_after_the_first_search_is_built_in_the_background(tmp_path: Path) -> None:
    index, _ = stored(tmp_path)
    index.search(["file"])
    done = threading.Event()
    threads_before = {t.ident for t in threading.enumerate()}

    index.upsert([entry("get_forecast", "Rain forecast.", "meteo")])

    fresh = [t for t in threading.enumerate() if t.ident not in threads_before]
    workers = [t for t in fresh if t.name == "search-index"]
    assert workers, "no background build started"
    for worker in workers:
        worker.join(timeout=60)
        done.set()
    assert done.is_set()
    assert len(list((tmp_path / "index").glob("*.index"))) == 2  # built without a search


def test_old_index_files_are_pruned(tmp_path: Path) -> None:
    index, _ = stored(tmp_path)
    for i in range(KEEP_FILES + 2):
        index.upsert([entry(f"tool_{i}", f"Tool number {i}.")])
        index.search(["tool"])

    assert len(list((tmp_path / "index").glob("*.index"))) == KEEP_FILES


def test_an_unwritable_directory_searches_from_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "index"
    blocked.write_text("a file where the directory should be")
    factory = Counting(tmp_path / "vectors")
    index = StoredIndex(blocked, factory)
    index.upsert(CATALOG)

    with caplog.at_level(logging.WARNING, logger="pegboard.search"):
        assert results(index) == reference(tmp_path)
    assert "cannot store the search index" in caplog.text


def test_a_build_apart_runs_in_a_child_process_and_ranks_the_same(tmp_path: Path) -> None:
    factory = Counting(tmp_path / "vectors")
    child = {"dense": True, "cache": True, "cache_dir": str(tmp_path / "vectors")}
    index = StoredIndex(tmp_path / "index", factory, child=child)
    index.upsert(CATALOG)

    assert _rounded(results(index)) == _rounded(reference(tmp_path))  # ranked flat
    assert factory.filled == 0  # built by the child, loaded here
    read_index(the_file(tmp_path), the_file(tmp_path).stem)


def test_a_child_that_fails_leaves_the_build_to_this_process(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    factory = Counting(tmp_path / "vectors")
    index = StoredIndex(tmp_path / "index", factory, child={"dense": False})  # another ranker
    index.upsert(CATALOG)

    with caplog.at_level(logging.WARNING, logger="pegboard.search"):
        assert _rounded(results(index)) == _rounded(reference(tmp_path))
    assert factory.filled == 1
    assert "could not build the search index in a child process: exit 3" in caplog.text


def test_a_changed_text_of_a_tool_is_another_catalog(tmp_path: Path) -> None:
    first, _ = stored(tmp_path)
    assert "read_file" not in [h.name for h in first.search(["zeppelin"], limit=3)]
    changed = [
        entry("read_file", "Read the contents of a file.", "fs", {"path": "A zeppelin's path."})
        if e.name == "read_file"
        else e
        for e in CATALOG
    ]  # the same names, namespaces and descriptions: one parameter's text differs

    factory = Counting(tmp_path / "vectors")
    again = StoredIndex(tmp_path / "index", factory)
    again.upsert(changed)

    assert [h.name for h in again.search(["zeppelin"], limit=1)] == ["read_file"]
    assert factory.filled == 1
    assert len(list((tmp_path / "index").glob("*.index"))) == 2
