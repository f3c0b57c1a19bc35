"""Which embedding model turns chunks and questions into vectors (loaded lazily).

Both choices are static embeddings that ship with their weights (nothing downloaded): the
distilled MiniLM table inside pegboard, and WordLlama from the ``semantic`` extra. A base
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
    """The MiniLM table that ships inside pegboard.

    On bench/kb.py's paraphrase set both models put the right note first for 31 of 40
    questions when fused with BM25 (WordLlama: 29 vs 28 with vectors alone, hit@3 0.90 vs
    0.85), so the default is the one every install has: a base built with it can be searched
    wherever pegboard runs. ``pegboard kb add --model wordllama`` picks the other.
    """
    return MINILM


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
