from pegboard.kb.chunking import Chunk, chunk
from pegboard.kb.extract import Extracted, Section


def test_paragraphs_are_packed_up_to_the_size_and_never_across_a_heading() -> None:
    doc = Extracted(
        "Handbook",
        (
            Section("", "one two\nthree\n\nfour"),
            Section("Leave", "a" * 30 + "\n\n" + "b" * 30 + "\n\n" + "c" * 10),
            Section("Empty", ""),
        ),
    )

    assert chunk(doc, max_chars=64) == [
        Chunk(0, "Handbook", "one two three\n\nfour"),
        Chunk(1, "Handbook › Leave", "a" * 30 + "\n\n" + "b" * 30),
        Chunk(2, "Handbook › Leave", "c" * 10),
        Chunk(3, "Handbook › Empty", "Empty"),
    ]


def test_an_overlong_paragraph_is_cut_at_sentences_then_at_spaces() -> None:
    text = "First sentence here. " + "word " * 30
    doc = Extracted("T", (Section("T", text),))

    chunks = chunk(doc, max_chars=40)

    assert [c.text for c in chunks][:2] == ["First sentence here.", ("word " * 8).strip()]
    assert all(len(c.text) <= 40 for c in chunks)
    assert " ".join(c.text for c in chunks).split() == text.split()
    assert {c.title for c in chunks} == {"T"}
