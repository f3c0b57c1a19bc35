"""HTML to Markdown on hostile nesting: pegboard's converters against tree-walking baselines.

    .venv/bin/python bench/html_convert.py [--mb 2.0]

Pages: ``<div><p>w `` nested N deep (the attack run's shape), and the same bytes flat
(``<p>w</p>`` repeated) as the linear reference of the same run. Rows: pegboard's whole-page
reading (``kb add``), its main-content reading (``web_fetch``), and two baselines: the
previous converter (BeautifulSoup, ``insert_after`` per block tag; only on small pages, it is
quadratic) and lxml's ``itertext`` (linear, but libxml2 stops at 256 levels: words are lost).
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable

from pegboard.htmltext import html_to_markdown


def nested(size: int) -> tuple[str, int]:
    unit_open, unit_close = "<div><p>w ", "</p></div>"
    levels = size // (len(unit_open) + len(unit_close))
    return f"<html><body>{unit_open * levels}end{unit_close * levels}</body></html>", levels


def flat(size: int) -> tuple[str, int]:
    levels = size // len("<p>w</p>")
    return "<html><body>" + "<p>w</p>" * levels + "</body></html>", levels


def previous(html: str) -> str:
    """The converter before the fix (bs4, edited tree): the quadratic baseline."""
    try:
        from bs4 import BeautifulSoup
    except ImportError as exc:  # not a pegboard dependency: the bench extra
        raise SystemExit("the baseline needs beautifulsoup4: pip install -e '.[bench]'") from exc

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(("p", "li", "div", "tr", "br", "pre", "blockquote")):
        tag.insert_after("\n\n")
    return re.sub(r"\n\s*\n\s*", "\n\n", soup.get_text()).strip()


def lxml_text(html: str) -> str:
    from lxml import etree

    return " ".join(etree.fromstring(html, etree.HTMLParser()).itertext())


def run(label: str, fn: Callable[[str], str], html: str, words: int) -> str:
    started = time.perf_counter()
    text = fn(html)
    seconds = time.perf_counter() - started
    kept = text.split().count("w")
    return f"| {label} | {len(html) / 1e6:.2f} | {seconds:.3f} | {kept:,} of {words:,} |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=2.0)
    size = int(parser.parse_args().mb * 1_000_000)
    whole = lambda h: html_to_markdown(h, main_content=False).markdown  # noqa: E731
    main_content = lambda h: html_to_markdown(h).markdown  # noqa: E731
    print("| converter, page | MB | seconds | words kept |")
    print("| --- | ---: | ---: | ---: |")
    for shape, make in (("nested", nested), ("flat", flat)):
        html, words = make(size)
        print(run(f"pegboard whole page (kb add), {shape}", whole, html, words))
        print(run(f"pegboard main content (web_fetch), {shape}", main_content, html, words))
        print(run(f"baseline: lxml itertext, {shape}", lxml_text, html, words))
    for small in (25_000, 50_000, 100_000):
        html, words = nested(small)
        print(run("baseline: previous converter (bs4 insert_after), nested", previous, html, words))
        print(run("pegboard whole page (kb add), nested", whole, html, words))


if __name__ == "__main__":
    main()
