"""Which embedding model turns chunks and questions into vectors (loaded lazily).

Three choices, all shipping their weights (nothing downloaded): the all-MiniLM-L6-v2
sentence encoder run in numpy (the default), the static table distilled from it, both inside
pegboard, and WordLlama's static table from the ``semantic`` extra. A base
records the model it was built with, and is always searched with that one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pegboard.errors import KnowledgeBaseError

if TYPE_CHECKING:
    from pegboard.search.dense import Embedder

MINILM = "minilm-static"
MINILM_L6 = "minilm-l6"
WORDLLAMA = "wordllama"
MODELS = (MINILM_L6, MINILM, WORDLLAMA)


def default_model() -> str:
    """The sentence encoder (all-MiniLM-L6-v2 in numpy, shipped inside pegboard).

    bench/kb.py: on the paraphrase notes it puts the right note first for 37 of 40 questions
    (the static table 30, WordLlama 31); on the Python library reference (python3-doc) 20 of 33
    dev questions first and 28 in the top three, 23 and 35 of 39 held-out ones (session 10,
    bench/RESULTS.md; static table, session 7: 8 / 15 and 19 / 28). A query costs ~10 ms more
    CPU (28 ms p50 fused at 100k chunks).
    Ingestion is the price: about 20 chunks (10 KB of text) per second per core where the
    static table embeds hundreds (x2.6 that with the ``fast`` extra's int8 kernels), so
    ``pegboard kb add --model minilm-static`` stays for very large folders.
    """
    return MINILM_L6


def load_embedder(model: str) -> Embedder:
    """The process-wide embedder named ``model``."""
    if model == MINILM:
        from pegboard.search.dense import shared_embedder

        return shared_embedder()
    if model == MINILM_L6:
        from pegboard.search.encoder import shared_encoder

        return shared_encoder()
    if model == WORDLLAMA:
        from pegboard.search.wordllama import semantic_available, shared_wordllama

        if not semantic_available():
            raise KnowledgeBaseError(
                "this knowledge base was built with WordLlama vectors; install them with "
                "pip install 'pegboard[semantic]', or rebuild the base with `pegboard kb add`"
            )
        return shared_wordllama()
    raise KnowledgeBaseError(f"unknown embedding model {model!r}; use one of {', '.join(MODELS)}")
