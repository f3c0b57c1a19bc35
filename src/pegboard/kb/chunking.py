"""Sections -> chunks: paragraphs packed up to a size, never across a heading."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pegboard.kb.extract import Extracted

MAX_CHUNK_CHARS = 1200
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One searchable piece: its title (document › heading), place in the document and text."""

    position: int
    title: str
    text: str


def chunk(doc: Extracted, max_chars: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    """Chunks of ``doc`` in reading order; a section's paragraphs are packed while they fit."""
    out: list[Chunk] = []
    for section in doc.sections:
        heading = section.heading.strip()
        # A page's own first heading is usually its title (a site's <title> adds " — Site").
        same = heading == doc.title or doc.title.startswith(heading + " ")
        title = f"{doc.title} › {heading}" if heading and not same else doc.title
        for text in _pack(_pieces(section.text, max_chars), max_chars):
            out.append(Chunk(len(out), title, text))
        if not section.text.strip() and heading and not same:
            out.append(Chunk(len(out), title, heading))  # a heading alone is still findable
    return out


def _pieces(text: str, max_chars: int) -> list[str]:
    pieces: list[str] = []
    for paragraph in _PARAGRAPH_BREAK.split(text):
        paragraph = " ".join(paragraph.split())
        if not paragraph:
            continue
        if len(paragraph) <= max_chars:
            pieces.append(paragraph)
            continue
        for sentence in _SENTENCE_END.split(paragraph):
            while len(sentence) > max_chars:  # one enormous "sentence": cut at a space
                cut = sentence.rfind(" ", 0, max_chars)
                cut = cut if cut > max_chars // 2 else max_chars
                pieces.append(sentence[:cut].strip())
                sentence = sentence[cut:].strip()
            if sentence:
                pieces.append(sentence)
    return pieces


def _pack(pieces: list[str], max_chars: int) -> list[str]:
    packed: list[str] = []
    current = ""
    for piece in pieces:
        if current and len(current) + 2 + len(piece) > max_chars:
            packed.append(current)
            current = piece
        else:
            current = f"{current}\n\n{piece}" if current else piece
    if current:
        packed.append(current)
    return packed
