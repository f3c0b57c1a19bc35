"""Masking secret values out of text that a person or a model will read."""

from __future__ import annotations

from collections.abc import Iterable

MASK = "****"
_MIN_SECRET = 4  # shorter values ("1", "on") would mask ordinary text, and guard little


def mask(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret replaced by ``****``.

    Longer secrets first, so a secret that contains another is masked whole; values shorter
    than four characters are left alone (masking them would garble the text).
    """
    for secret in sorted({s for s in secrets if len(s) >= _MIN_SECRET}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
