"""HTML to readable Markdown: the one converter of ``web_fetch`` and knowledge-base ingestion.

Two readings of a page, one function:

- ``main_content=True`` (``web_fetch``: someone's web page): the main content from
  ``trafilatura``, boilerplate (navigation, sidebars, footers, cookie banners) left out;
  headings as ``#``, lists, tables, optionally links.
- ``main_content=False`` (``pegboard kb add``: the user's own file, every word of which may be
  what a question is about): the whole document, read in one streaming pass of the standard
  library's HTML tokenizer (linear however it nests); scripts, styles, ``<nav>`` and
  ``<footer>`` dropped, headings as ``#``. trafilatura is not used there because on short
  documents it drops headings or keeps the navigation (its main-content detection needs a
  page of text; tests/test_htmltext.py shows both).

A page in which trafilatura finds no main content (a bare list of links) is read whole, so no
page comes back empty while it has text. Parsers are imported on the first conversion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from pegboard.errors import OptionalDependencyMissing

_DROP_TAGS = frozenset(("script", "style", "noscript", "template", "svg", "nav", "footer", "head"))
_BLOCKS = frozenset({"p", "li", "div", "tr", "br", "pre", "blockquote"})
# A "<" that another "<" (or the end) follows before any ">" opens no tag the tokenizer can
# finish; CPython's html.parser before 3.11.13 rescans to the end for each such "<"
# (quadratic on "<a <a <a ..."), so they become text first. The lookahead from each "<"
# stops at the next "<" or ">", so the substitution is linear.
_UNCLOSED_LT = re.compile(r"<(?=[^<>]*(?:<|\Z))")
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


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
    """Every text node of the page (scripts, styles, nav and footer aside), headings as ``#``.

    One streaming pass of the standard library's tokenizer, building no tree: linear in the
    page's size however deeply it nests. A tree costs more than that on hostile nesting: the
    tree builder scans its stack of open tags for every stray end tag (``</br>``), and editing
    the tree (``insert_after`` per block) walks descendants each time; both are quadratic.
    """
    reader = _PageReader()
    reader.feed(_UNCLOSED_LT.sub("&lt;", html))
    reader.close()
    body = re.sub(r"[ \t]+", " ", "".join(reader.parts))
    body = re.sub(r"\n\s*\n\s*", "\n\n", body).strip()
    return HtmlText(" ".join("".join(reader.title).split()) or _first_heading(body), body)


class _PageReader(HTMLParser):
    """The tokens of a page as text: blocks separated by blank lines, headings as ``#``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._dropped = 0  # depth inside script, style, nav, ...
        self._in_title = False
        self._heading: list[str] | None = None  # the words of the open (outermost) heading
        self._heading_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in _DROP_TAGS:
            self._dropped += 1
        elif not self._dropped and tag in _HEADINGS:
            self._heading_depth += 1
            if self._heading is None:
                self._heading = []
                self.parts.append(f"\n\n{'#' * int(tag[1])} ")
        elif tag in _BLOCKS:
            self._text("\n\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:  # <br/>, <p/>
            self._text("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _DROP_TAGS:
            self._dropped = max(0, self._dropped - 1)
        elif not self._dropped and tag in _HEADINGS and self._heading_depth:
            self._heading_depth -= 1
            if not self._heading_depth and self._heading is not None:
                self.parts.append(" ".join(" ".join(self._heading).split()) + "\n\n")
                self._heading = None
        elif tag in _BLOCKS:
            self._text("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        self._text(data)

    def _text(self, text: str) -> None:
        if self._dropped:
            return
        if self._heading is not None:
            self._heading.append(text)
        else:
            self.parts.append(text)
