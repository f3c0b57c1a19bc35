"""Bytes of one file -> its title and sections (heading, text): Markdown, text, HTML, PDF.

HTML becomes Markdown through :func:`pegboard.htmltext.html_to_markdown` (the converter
``web_fetch`` uses), whose HTML parsers never expand entities a document declares; a document
that declares any (XHTML with an internal DTD subset) is first parsed with ``defusedxml``,
which refuses entity expansion (billion laughs) and external entities (XXE). PDF text comes
from pypdf, whose decoders cap decompressed stream sizes; the extracted text of any file is
capped too.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

from pegboard.errors import FileTooLarge, KnowledgeBaseError

MAX_TEXT_CHARS = 16_000_000
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_DECLARES_ENTITIES = re.compile(rb"<!DOCTYPE[^>]*\[|<!ENTITY", re.IGNORECASE)
_MAIN_OPEN = re.compile(
    r"<(main)\b[^>]*>|<([a-z][a-z0-9]*)\b[^>]*?\srole\s*=\s*[\"']?main\b[^>]*>", re.IGNORECASE
)
_HEAD = re.compile(r"<head\b.*?</head\s*>", re.IGNORECASE | re.DOTALL)
_HEADING_MARKS = " \t¶#§🔗"  # permalink marks documentation generators put after headings


@dataclass(frozen=True, slots=True)
class Section:
    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class Extracted:
    """A document's title and its sections in reading order."""

    title: str
    sections: tuple[Section, ...]


def extract(data: bytes, path: Path) -> Extracted:
    """The text of ``data`` read as the kind its suffix names (text when unknown)."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return _cap(_pdf(data, path), path)
    text = data.decode("utf-8", errors="replace")  # bad UTF-8 becomes U+FFFD, not an error
    if len(text) > MAX_TEXT_CHARS:
        raise FileTooLarge(f"{path}: over {MAX_TEXT_CHARS:,} characters of text")
    if suffix in (".html", ".htm", ".xhtml"):
        return _cap(_html(data, text, path), path)
    if suffix in (".md", ".markdown"):
        return markdown(text, path.stem)
    return Extracted(path.stem, (Section("", text),))


def markdown(text: str, fallback_title: str) -> Extracted:
    """Sections split at ATX headings (``#`` .. ``######``) outside fenced code."""
    sections: list[Section] = []
    heading, lines, fenced = "", [], False
    title = ""
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        match = None if fenced else _HEADING.match(line)
        if match is None:
            lines.append(line)
            continue
        sections.append(Section(heading, "\n".join(lines)))
        heading, lines = match.group(2).strip().rstrip(_HEADING_MARKS), []
        if not title and len(match.group(1)) == 1:
            title = heading
    sections.append(Section(heading, "\n".join(lines)))
    kept = tuple(s for s in sections if s.text.strip() or s.heading)
    return Extracted(title or fallback_title, kept)


def _html(data: bytes, text: str, path: Path) -> Extracted:
    if _DECLARES_ENTITIES.search(data[:65536]):
        _refuse_xml_entities(data, path)
    from pegboard.htmltext import html_to_markdown  # lazy: only ingestion parses HTML

    page = html_to_markdown(main_region(text), main_content=False)
    doc = markdown(page.markdown, path.stem)
    return Extracted(page.title or doc.title, doc.sections)


def main_region(html: str) -> str:
    """The page's ``<head>`` and its main region (``<main>`` or ``role="main"``) when it
    declares one, else the whole page.

    A page that names its main content (Sphinx, MkDocs and most site generators do, saved web
    pages often) keeps around it navigation, a table of contents and "next topic" links that
    name other pages: indexed, they make every page match every other page's name. Tags are
    matched with a regex over the raw text (no second parse); an unclosed region runs to the
    end of the page.
    """
    opened = _MAIN_OPEN.search(html)
    if opened is None:
        return html
    tag = (opened.group(1) or opened.group(2)).lower()
    depth, end = 1, len(html)
    for found in re.finditer(rf"<(/?){tag}\b[^>]*?(/?)>", html[opened.end() :], re.IGNORECASE):
        if found.group(1):
            depth -= 1
        elif not found.group(2):
            depth += 1
        if depth == 0:
            end = opened.end() + found.end()
            break
    head = _HEAD.search(html, 0, opened.start())
    return (head.group(0) if head else "") + html[opened.start() : end]


def _refuse_xml_entities(data: bytes, path: Path) -> None:
    import xml.etree.ElementTree as ET

    import defusedxml
    import defusedxml.ElementTree

    try:
        defusedxml.ElementTree.fromstring(data, forbid_dtd=False)
    except defusedxml.DefusedXmlException as exc:
        raise KnowledgeBaseError(
            f"{path}: refused: it declares XML entities ({type(exc).__name__}), the shape of an "
            "entity-expansion bomb or an external-entity read; remove the DOCTYPE subset"
        ) from exc
    except ET.ParseError:
        return  # not well-formed XML: plain HTML, which the HTML parser reads without entities


def _pdf(data: bytes, path: Path) -> Extracted:
    try:
        from pypdf import PdfReader
        from pypdf.errors import LimitReachedError, PyPdfError
    except ImportError as exc:  # pragma: no cover - a dependency
        raise KnowledgeBaseError(f"{path}: reading PDF needs pypdf: pip install pypdf") from exc
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise KnowledgeBaseError(f"{path}: an encrypted PDF; decrypt it first")
        meta_title = (reader.metadata.title if reader.metadata else None) or ""
        pages, total = [], 0
        for number, page in enumerate(reader.pages, start=1):
            text = page.extract_text() or ""
            total += len(text)
            if total > MAX_TEXT_CHARS:
                raise FileTooLarge(f"{path}: over {MAX_TEXT_CHARS:,} characters of text")
            pages.append(Section(f"page {number}", text))
    except LimitReachedError as exc:  # a decompression bomb inside a stream
        raise FileTooLarge(f"{path}: a PDF stream expands past pypdf's limit ({exc})") from exc
    except PyPdfError as exc:
        raise KnowledgeBaseError(f"{path}: not a readable PDF ({exc})") from exc
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise KnowledgeBaseError(f"{path}: a malformed PDF ({type(exc).__name__})") from exc
    return Extracted(str(meta_title).strip() or path.stem, tuple(pages))


def _cap(doc: Extracted, path: Path) -> Extracted:
    if sum(len(s.text) for s in doc.sections) > MAX_TEXT_CHARS:
        raise FileTooLarge(f"{path}: over {MAX_TEXT_CHARS:,} characters of text")
    return doc
