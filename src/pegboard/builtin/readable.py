"""Turn a fetched body into text a model can read: HTML to Markdown, JSON, text, PDF.

HTML and PDF are converted in a worker process (``anyio.to_process``, workers are reused), so
a deadline can stop a conversion: cancelling kills the worker, where a thread would go on
burning a core after the caller gave up.
"""

from __future__ import annotations

import io
import json

import anyio.to_process

from pegboard.errors import ToolExecutionError

_HTML = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_LIKE = frozenset(
    {"application/xml", "application/javascript", "application/x-yaml", "application/yaml"}
)


async def readable_text(body: bytes, media_type: str, charset: str | None, url: str) -> str:
    """The readable text of ``body``; unsupported media types raise a model-readable error."""
    kind = _kind(body, media_type)
    if kind == "pdf":
        return await anyio.to_process.run_sync(_pdf_text, body, url, cancellable=True)
    text = body.decode(charset or "utf-8", errors="replace")
    if kind == "html":
        return await anyio.to_process.run_sync(_html_markdown, text, url, cancellable=True)
    if kind == "json":
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return text
    if kind == "text":
        return text
    raise ToolExecutionError(
        f"{url} is {media_type}, which web_fetch cannot read (it reads HTML, text, JSON and PDF)"
    )


def _kind(body: bytes, media_type: str) -> str:
    if media_type in _HTML:
        return "html"
    if media_type == "application/pdf":
        return "pdf"
    if media_type == "application/json" or media_type.endswith("+json"):
        return "json"
    if media_type.startswith("text/") or media_type in _TEXT_LIKE or media_type.endswith("+xml"):
        return "text"
    if media_type:
        return "other"
    # No Content-Type: sniff the two formats that announce themselves.
    head = body[:512].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "pdf"
    if head.startswith((b"<!doctype html", b"<html")):
        return "html"
    return "text"


def _html_markdown(html: str, url: str) -> str:
    from pegboard.htmltext import html_to_markdown  # the one HTML converter (kb too)

    return html_to_markdown(html, url, links=True).markdown


def _pdf_text(body: bytes, url: str) -> str:  # in a worker process: errors must pickle
    import pypdf  # lazy; a core dependency (kb ingestion reads PDF too)
    from pypdf.errors import PyPdfError

    try:
        reader = pypdf.PdfReader(io.BytesIO(body))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError) as exc:
        raise ToolExecutionError(f"{url} is a PDF that could not be read: {exc}") from exc
    return "\n\n".join(f"[page {i}]\n{text.strip()}" for i, text in enumerate(pages, 1))
