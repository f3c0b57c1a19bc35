"""html_to_markdown: main content for web_fetch, the whole document for kb ingestion."""

from __future__ import annotations

from pegboard.htmltext import HtmlText, html_to_markdown

PARAGRAPH = (
    "<p>Sea otters hold hands while they sleep so that they do not drift apart; a group "
    "resting together is called a raft, and it can hold more than a hundred animals.</p>"
)
ARTICLE = (
    "<html><head><title>Otters - Field notes</title><script>track()</script></head><body>"
    '<nav><a href="/">Home</a> <a href="/about">About us</a></nav>'
    f"<main><article><h1>Otters</h1>{PARAGRAPH * 3}<h2>Diet</h2>"
    '<ul><li>Sea urchins</li><li>Crabs, see <a href="/crabs">crabs</a></li></ul>'
    "<table><tr><th>Food</th><th>Share</th></tr><tr><td>Urchins</td><td>40%</td></tr></table>"
    "</article></main><aside><h2>Related</h2><p>Subscribe to our newsletter</p></aside>"
    "<footer>Copyright 2026 Field notes</footer></body></html>"
)
SHORT = (
    "<html><head><title>Handbook</title></head><body><nav>Home | About</nav>"
    "<h1>Leave</h1><p>25 days a year.</p><h2>Sick days</h2><ul><li>Call in</li></ul>"
    "</body></html>"
)


def test_main_content_is_markdown_without_the_pages_boilerplate() -> None:
    page = html_to_markdown(ARTICLE, "https://notes.example/otters", links=True)

    assert page.title == "Otters - Field notes"
    assert page.markdown.startswith("# Otters\n\nSea otters hold hands")
    assert "## Diet\n\n- Sea urchins\n- Crabs, see [crabs](https://notes.example/crabs)" in (
        page.markdown
    )
    assert "| Urchins | 40% |" in page.markdown
    for boilerplate in ("About us", "newsletter", "Copyright", "track()"):
        assert boilerplate not in page.markdown


def test_the_whole_document_keeps_every_heading_of_a_short_file() -> None:
    page = html_to_markdown(SHORT, main_content=False)

    assert page == HtmlText("Handbook", "# Leave\n\n25 days a year.\n\n## Sick days\n\nCall in")


def test_main_content_of_a_short_file_loses_its_headings_which_is_why_kb_reads_it_whole() -> None:
    # The measured reason for two readings: trafilatura needs a page of text to find the main
    # content; below that it returns the page flattened, navigation included.
    page = html_to_markdown(SHORT)

    assert "# Leave" not in page.markdown
    assert "25 days a year." in page.markdown


def test_a_page_of_links_only_still_comes_back_with_its_text() -> None:
    links = "<html><body><div><a href='/a'>Alpha</a> <a href='/b'>Beta</a></div></body></html>"
    empty = "<html><body><script>only()</script></body></html>"

    assert html_to_markdown(links, "https://x.example/", links=True).markdown == "Alpha\nBeta"
    assert html_to_markdown(empty) == HtmlText("", "")


def test_declared_entities_are_never_expanded_in_either_reading() -> None:
    bomb = (
        '<!DOCTYPE html [<!ENTITY a "AAAAAAAAAA"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        "<html><body><p>&b;&b;&b;</p><p>hello</p></body></html>"
    )

    for main in (True, False):
        text = html_to_markdown(bomb, main_content=main).markdown
        assert "AAAA" not in text
        assert "hello" in text
