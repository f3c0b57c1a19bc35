"""Token counts of tool definitions, with a real offline BPE tokenizer.

A tool costs the tokens of ``name + description + canonical schema JSON`` (the same text for
every provider, so counts are comparable across catalogs). The default counter uses
``bpe-openai``'s ``o200k_base`` encoding, which ships inside the wheel: nothing is downloaded.
The encoding is loaded on first use (about 0.1 s), once per process.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import sys
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pegboard.core.definition import ToolDefinition
from pegboard.core.entry import ToolEntry
from pegboard.core.tool import Tool

__all__ = [
    "BpeTokenCounter",
    "TokenCounter",
    "count_entries",
    "default_token_counter",
]

DEFAULT_ENCODING = "o200k_base"
# Counts remembered: tool definitions and the prompt-section texts deferral measures.
DEFAULT_CACHE_SIZE = 65_536


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of text and of tool definitions."""

    def count_text(self, text: str) -> int: ...

    def count_tool(self, definition: ToolDefinition) -> int:
        """Tokens of ``definition.token_text``."""
        ...


class BpeTokenCounter:
    """:class:`TokenCounter` over a ``bpe-openai`` encoding, caching tool counts by content.

    Thread-safe. The cache maps a digest of the counted text to its count and keeps the most
    recent ``cache_size`` texts (tool definitions and others).
    """

    def __init__(self, encoding: str = DEFAULT_ENCODING, cache_size: int = DEFAULT_CACHE_SIZE):
        self.encoding = encoding
        self.cache_size = cache_size
        self._tokenizer: Any = None
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._by_tool: weakref.WeakKeyDictionary[Tool, tuple[str, int]] = (
            weakref.WeakKeyDictionary()
        )
        # Called after a count was made (one not found among the remembered ones).
        self.on_new: Callable[[], None] | None = None

    def _load(self) -> Any:
        self._tokenizer = _tokenizer_for(self.encoding)
        return self._tokenizer

    def seed(self, counts: Iterable[tuple[bytes, int]]) -> None:
        """Add counts made earlier (``(digest, count)`` pairs of :meth:`counts`), kept as the
        least recent; a start whose texts were all counted before never loads the encoding
        (about 70 MB resident)."""
        with self._cache_lock:
            for key, count in counts:
                if key not in self._cache:
                    self._cache[key] = count
                    self._cache.move_to_end(key, last=False)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def counts(self) -> list[tuple[bytes, int]]:
        """The remembered ``(digest of the text, count)`` pairs, least recent first."""
        with self._cache_lock:
            return list(self._cache.items())

    def count_text(self, text: str) -> int:
        """Tokens of ``text``, remembered by the text's digest."""
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._cache_lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        count = self._count(text)
        with self._cache_lock:
            self._cache[key] = count
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        if self.on_new is not None:
            self.on_new()
        return count

    def _count(self, text: str) -> int:
        tokenizer = self._tokenizer or self._load()
        try:
            return int(tokenizer.count(text))
        except UnicodeEncodeError:  # lone surrogates cannot cross into Rust; count them as U+FFFD
            return int(tokenizer.count(text.encode("utf-8", "replace").decode("utf-8")))

    def count_tool(self, definition: ToolDefinition) -> int:
        return self.count_text(definition.token_text)

    def count_entry(self, entry: ToolEntry) -> int:
        """:meth:`count_tool` of an entry, remembered per :class:`Tool` object.

        Tools are immutable, so a repeated count of the same entry (every request counts the
        active set) skips serialising the schema again.
        """
        tool = entry.tool
        with self._cache_lock:
            hit = self._by_tool.get(tool)
        if hit is not None and hit[0] == entry.name:
            return hit[1]
        count = self.count_tool(entry.definition)
        with self._cache_lock:
            self._by_tool[tool] = (entry.name, count)
        return count

    def clear_cache(self) -> None:
        with self._cache_lock:
            self._cache.clear()
            self._by_tool.clear()

    @property
    def cache_len(self) -> int:
        return len(self._cache)


_TOKENIZERS: dict[str, Any] = {}
_TOKENIZERS_LOCK = threading.Lock()


def _tokenizer_for(encoding: str) -> Any:
    """Load an encoding once per process (about a second for o200k) and share it."""
    with _TOKENIZERS_LOCK:
        if encoding not in _TOKENIZERS:
            _TOKENIZERS[encoding] = _bindings().tokenizer_for_encoding(encoding)
        return _TOKENIZERS[encoding]


def _bindings() -> Any:
    """bpe-openai's Rust extension, loaded without its Python wrapper package.

    The wrapper's ``__init__`` builds tiktoken-compatible tables in Python (about 1.7 s); the
    extension alone loads an encoding in about 0.1 s. Falls back to the regular import.
    """
    name = "bpe_openai._bindings"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec("bpe_openai")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / f"_bindings{suffix}"
            if path.is_file():
                loader = importlib.machinery.ExtensionFileLoader(name, str(path))
                ext_spec = importlib.util.spec_from_file_location(name, path, loader=loader)
                if ext_spec is not None:
                    module = importlib.util.module_from_spec(ext_spec)
                    loader.exec_module(module)
                    return module
    with warnings.catch_warnings():
        # The wrapper reads its bundled data through a deprecated importlib API.
        warnings.simplefilter("ignore", DeprecationWarning)
        from bpe_openai import _bindings

    return _bindings


@cache
def default_token_counter() -> TokenCounter:
    """The process-wide counter (``o200k_base``)."""
    return BpeTokenCounter()


def count_entries(entries: Iterable[ToolEntry], counter: TokenCounter | None = None) -> int:
    """Total tokens of the entries' definitions (wire name, tool description, input schema)."""
    counter = counter or default_token_counter()
    if isinstance(counter, BpeTokenCounter):
        return sum(counter.count_entry(e) for e in entries)
    return sum(counter.count_tool(e.definition) for e in entries)
