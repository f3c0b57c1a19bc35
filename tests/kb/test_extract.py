from pathlib import Path

import pytest

from pegboard.errors import FileTooLarge, KnowledgeBaseError
from pegboard.kb.extract import Extracted, Section, extract
from tests.kb.pdfs import flate_bomb, pdf


def test_markdown_is_split_at_headings_outside_fenced_code() -> None:
    text = (
        "intro line\n\n# Pet policy\n\nDogs welcome.\n\n"
        "```\n# not a heading\n```\n## Cats\nNo cats.\n"
    )

    doc = extract(text.encode(), Path("pets.md"))

    assert doc == Extracted(
        "Pet policy",
        (
            Section("", "intro line\n"),
            Section("Pet policy", "\nDogs welcome.\n\n```\n# not a heading\n```"),
            Section("Cats", "No cats."),
        ),
    )


def test_text_is_one_section_titled_by_the_file_name_and_bad_utf8_is_replaced() -> None:
    doc = extract(b"caf\xe9 menu", Path("/x/lunch.txt"))

    assert doc == Extracted("lunch", (Section("", "caf\ufffd menu"),))


def test_html_becomes_sections_with_scripts_and_navigation_dropped() -> None:
    html = (
        b"<html><head><title>Handbook</title><script>var x = 1;</script></head><body>"
        b"<nav>Home | About</nav><h1>Leave</h1><p>25 days&nbsp;a year.</p>"
        b"<h2>Sick days</h2><ul><li>Call in</li><li>Rest</li></ul></body></html>"
    )

    doc = extract(html, Path("hb.html"))

    assert doc.title == "Handbook"
    assert [(s.heading, " ".join(s.text.split())) for s in doc.sections] == [
        ("Leave", "25 days a year."),
        ("Sick days", "Call in Rest"),
    ]


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<html><body><p>&lol3;</p></body></html>"""
XXE = b"""<?xml version="1.0"?>
<!DOCTYPE html [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<html><body><p>&xxe;</p></body></html>"""


@pytest.mark.parametrize(
    ("data", "kind"), [(BILLION_LAUGHS, "EntitiesForbidden"), (XXE, "EntitiesForbidden")]
)
def test_xhtml_declaring_entities_is_refused_by_defusedxml(data: bytes, kind: str) -> None:
    with pytest.raises(KnowledgeBaseError) as info:
        extract(data, Path("bomb.xhtml"))

    assert str(info.value) == (
        f"bomb.xhtml: refused: it declares XML entities ({kind}), the shape of an "
        "entity-expansion bomb or an external-entity read; remove the DOCTYPE subset"
    )


def test_pdf_pages_become_sections_and_the_info_title_is_used() -> None:
    data = pdf(["Dogs are welcome on Fridays.", "Cats are not."], title="Pet policy")

    doc = extract(data, Path("pets.pdf"))

    assert doc == Extracted(
        "Pet policy",
        (Section("page 1", "Dogs are welcome on Fridays."), Section("page 2", "Cats are not.")),
    )


def test_a_pdf_whose_stream_decompresses_past_the_limit_is_refused() -> None:
    data = pdf(["x"], extra_stream=flate_bomb(80 * 1024 * 1024))
    assert len(data) < 200_000

    with pytest.raises(FileTooLarge, match=r"^bomb.pdf: a PDF stream expands past pypdf's limit"):
        extract(data, Path("bomb.pdf"))


def test_a_file_that_is_not_a_pdf_is_a_clear_error() -> None:
    with pytest.raises(KnowledgeBaseError, match=r"^fake.pdf: not a readable PDF"):
        extract(b"hello, not a pdf", Path("fake.pdf"))
