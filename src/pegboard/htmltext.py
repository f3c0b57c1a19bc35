"""HTML to readable Markdown: the one converter of ``web_fetch`` and knowledge-base ingestion.

Two readings of a page, one function:

- ``main_content=True`` (``web_fetch``: someone's web page): the main content from
  ``trafilatura``, boilerplate (navigation, sidebars, footers, cookie banners) left out;
  headings as ``#``, lists, tables, optionally links.
- ``main_content=False`` (``pegboard kb add``: the user's own file, every word of which may be
  what a question is about): the whole document, walked with BeautifulSoup's standard-library
  parser; scripts, styles, ``<nav>`` and ``<footer>`` dropped, headings as ``#``. trafilatura
  is not used there because on short documents it drops headings or keeps the navigation
  (its main-content detection needs a page of text; tests/test_htmltext.py shows both).

A page in which trafilatura finds no main content (a bare list of links) is read whole, so no
page comes back empty while it has text. Parsers are imported on the first conversion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pegboard.errors import OptionalDependencyMissing

_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "nav", "footer", "head")
_BLOCKS = ("p", "li", "div", "tr", "br", "pre", "blockquote")


@dataclass(frozen=True, slots=True)
class HtmlText:
    """A page's title (``<title>``, else its first heading, else empty) and its Markdown."""

    title: str
    markdown: str


def html_to_markdown(
    html: str, url: str | None = None, *, main_content: bool = True, links: bool = False
) -> HtmlText:
    """The readable content of ``html`` as Markdown (see the module docstring).

    ``links`` keeps ``[text](href)`` links of the main content, resolved against ``url`` (the
    page's address). CPU-bound: call it from a worker thread in async code.
    """
    if not main_content:
        return _whole_page(html)
    try:
        import trafilatura  # lazy: lxml and the extractor's models of boilerplate
    except ImportError as exc:
        raise OptionalDependencyMissing(
            "the main content of a web page (web_fetch)", "web"
        ) from exc

    tree = trafilatura.load_html(html)
    if tree is None:
        return _whole_page(html)
    title = _title(tree)
    markdown = trafilatura.extract(
        tree,
        url=url,
        output_format="markdown",
        include_formatting=True,
        include_links=links,
        include_tables=True,
        favor_recall=True,  # a user's own page: keep what might be content
    )
    if not markdown or not markdown.strip():
        return _whole_page(html)
    return HtmlText(title or _first_heading(markdown), markdown.strip())


def _title(tree: Any) -> str:
    found = tree.find(".//title")  # an lxml element
    return " ".join(str(found.text_content()).split()) if found is not None else ""


def _first_heading(markdown: str) -> str:
    match = re.search(r"^#{1,6}\s+(.+?)\s*#*\s*$", markdown, re.MULTILINE)
    return match.group(1) if match else ""


def _whole_page(html: str) -> HtmlText:
    """Every text node of the page (scripts, styles, nav and footer aside), headings as ``#``."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(_DROP_TAGS):
        tag.decompose()
    for level in range(1, 7):
        for tag in soup.find_all(f"h{level}"):
            tag.replace_with(f"\n\n{'#' * level} {tag.get_text(' ', strip=True)}\n\n")
    for tag in soup.find_all(_BLOCKS):
        tag.insert_after("\n\n")
    body = re.sub(r"[ \t]+", " ", soup.get_text())
    body = re.sub(r"\n\s*\n\s*", "\n\n", body).strip()
    return HtmlText(title or _first_heading(body), body)
