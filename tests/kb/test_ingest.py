import sqlite3
from pathlib import Path

import numpy as np
import pytest

from pegboard.errors import KnowledgeBaseError
from pegboard.kb import IngestReport, ingest, list_bases, remove, sample_sources, search_base
from pegboard.kb.files import Skipped
from pegboard.kb.store import BaseInfo

PETS = "# Pet policy\n\nEmployees may bring a well-behaved canine to the workplace on Fridays.\n"
EXPENSES = "# Expenses\n\nTravel costs are refunded within 30 days when receipts are submitted.\n"
LEAVE = (
    "<html><head><title>Leave</title></head>"
    "<body><p>Staff get 25 days of paid vacation per year.</p></body></html>"
)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "hr").mkdir(parents=True)
    (root / "pets.md").write_text(PETS)
    (root / "hr" / "expenses.md").write_text(EXPENSES)
    (root / "hr" / "leave.html").write_text(LEAVE)
    return root


def _chunks(db: Path) -> list[tuple[str, str, int, str]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT base, title, position, text FROM chunks ORDER BY source, position"
        ).fetchall()
    return [tuple(r) for r in rows]


def test_ingest_stores_documents_chunks_and_counts_and_search_finds_a_paraphrase(
    tmp_path: Path, notes: Path
) -> None:
    db = tmp_path / "kb.sqlite3"
    progress: list[tuple[int, int]] = []

    report = ingest(db, "notes", [notes], progress=lambda d, t, _: progress.append((d, t)))

    assert report.indexed == [  # a directory's own files first, then its subdirectories
        str(notes / "pets.md"),
        str(notes / "hr" / "expenses.md"),
        str(notes / "hr" / "leave.html"),
    ]
    assert (report.chunks, report.skipped) == (3, [])
    assert progress == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert list_bases(db) == [BaseInfo("notes", "minilm-l6", 3, 3)]
    hits = search_base(db, "notes", "can I bring my dog to the office", top_k=3)
    assert (hits[0].source, hits[0].title) == (str(notes / "pets.md"), "Pet policy")
    assert hits[0].snippet == (
        "Employees may bring a well-behaved canine to the workplace on Fridays."
    )
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_re_adding_reads_again_only_the_files_whose_content_changed(
    tmp_path: Path, notes: Path
) -> None:
    db = tmp_path / "kb.sqlite3"
    ingest(db, "notes", [notes])
    (notes / "pets.md").write_text(PETS.replace("Fridays", "Mondays"))

    report = ingest(db, "notes", [notes])

    assert report.indexed == [str(notes / "pets.md")]
    assert report.unchanged == [str(notes / "hr" / "expenses.md"), str(notes / "hr" / "leave.html")]
    texts = [c[3] for c in _chunks(db)]
    assert any("Mondays" in t for t in texts)
    assert not any("Fridays" in t for t in texts)
    assert search_base(db, "notes", "mondays", mode="fts")[0].source == str(notes / "pets.md")
    assert search_base(db, "notes", "fridays", mode="fts") == []


def test_an_edited_file_embeds_only_its_edited_chunks_and_keeps_the_others_vectors(
    tmp_path: Path,
) -> None:
    from pegboard.kb.embedding import load_embedder

    db = tmp_path / "kb.sqlite3"
    page = tmp_path / "handbook.md"
    page.write_text("# Handbook\n\n## Pets\n\nDogs on Fridays.\n\n## Leave\n\n25 days.\n")
    ingest(db, "hb", [page], model="minilm-static")
    before = _vectors(db)
    page.write_text("# Handbook\n\n## Pets\n\nDogs on Mondays.\n\n## Leave\n\n25 days.\n")

    report = ingest(db, "hb", [page])

    after = _vectors(db)
    assert (report.indexed, report.chunks, report.reused) == ([str(page)], 2, 1)
    assert after["25 days."] == before["25 days."]
    fresh = load_embedder("minilm-static").embed(["Handbook › Pets\nDogs on Mondays."])[0]
    assert np.frombuffer(after["Dogs on Mondays."], dtype=np.float32).tolist() == pytest.approx(
        fresh.tolist(), abs=1e-6
    )
    assert "Dogs on Fridays." not in after


def _vectors(db: Path) -> dict[str, bytes]:
    with sqlite3.connect(db) as conn:
        return {str(t): bytes(v) for t, v in conn.execute("SELECT text, vector FROM chunks")}


def test_a_file_that_fails_halfway_leaves_its_previous_version_and_the_others(
    tmp_path: Path, notes: Path
) -> None:
    db = tmp_path / "kb.sqlite3"
    ingest(db, "notes", [notes])
    before = _chunks(db)
    with sqlite3.connect(db) as conn:  # a real failure inside the transaction: the 2nd chunk
        conn.execute(
            "CREATE TRIGGER poison BEFORE INSERT ON chunks WHEN NEW.text LIKE '%POISON%'"
            " BEGIN SELECT RAISE(ABORT, 'poisoned chunk'); END"
        )
    (notes / "pets.md").write_text(PETS + "\n## Cats\n\nPOISON\n")
    (notes / "new.txt").write_text("a new note about parking spaces")

    report = ingest(db, "notes", [notes])

    assert report.indexed == [str(notes / "new.txt")]
    assert report.skipped == [
        Skipped(str(notes / "pets.md"), f"{notes / 'pets.md'}: not stored (poisoned chunk)")
    ]
    after = _chunks(db)
    assert [c for c in after if "parking" not in c[3]] == before
    assert search_base(db, "notes", "canine", mode="fts")[0].source == str(notes / "pets.md")


def test_unreadable_files_are_skipped_with_a_reason_and_the_rest_ingested(
    tmp_path: Path, notes: Path
) -> None:
    db = tmp_path / "kb.sqlite3"
    (notes / "broken.pdf").write_bytes(b"not a pdf")

    report = ingest(db, "notes", [notes, tmp_path / "missing"])

    assert len(report.indexed) == 3
    assert [s.path for s in report.skipped] == [
        str(tmp_path / "missing"),
        str(notes / "broken.pdf"),
    ]
    assert report.skipped[0].reason == f"{tmp_path / 'missing'}: no such file or directory"
    assert report.skipped[1].reason.startswith(f"{notes / 'broken.pdf'}: not a readable PDF (")


def test_a_base_is_created_only_when_a_file_is_stored(tmp_path: Path) -> None:
    db = tmp_path / "kb.sqlite3"

    report = ingest(db, "empty", [tmp_path / "missing"])

    assert report == IngestReport(
        skipped=[
            Skipped(str(tmp_path / "missing"), f"{tmp_path / 'missing'}: no such file or directory")
        ]
    )
    assert list_bases(db) == []


def test_remove_drops_a_path_prefix_or_the_whole_base(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "kb.sqlite3"
    ingest(db, "notes", [notes])
    ingest(db, "other", [notes / "pets.md"])

    assert remove(db, "notes", str(notes / "hr")) == 2
    assert sample_sources(db, "notes", 8) == [str(notes / "pets.md")]
    assert search_base(db, "notes", "receipts", mode="fts") == []
    assert remove(db, "notes") == 1
    assert [b.name for b in list_bases(db)] == ["other"]
    with pytest.raises(KnowledgeBaseError, match=r"^no knowledge base named 'notes'"):
        search_base(db, "notes", "dog")


def test_the_vector_matrix_is_reloaded_after_the_base_changes(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "kb.sqlite3"
    ingest(db, "notes", [notes / "pets.md"])
    assert [h.title for h in search_base(db, "notes", "money refund", mode="vector")] == [
        "Pet policy"
    ]

    ingest(db, "notes", [notes / "hr"])

    titles = [h.title for h in search_base(db, "notes", "money refund for travel", mode="vector")]
    assert sorted(titles) == ["Expenses", "Leave", "Pet policy"]
    assert titles[0] == "Expenses"


def test_a_bad_base_name_is_refused_with_the_rule(tmp_path: Path) -> None:
    with pytest.raises(KnowledgeBaseError) as info:
        ingest(tmp_path / "kb.sqlite3", "../x", [tmp_path])

    assert str(info.value) == (
        "invalid knowledge-base name '../x': use 1-64 letters, digits, '.', '_' or '-', "
        "starting with a letter or digit"
    )


def test_a_missing_store_and_an_empty_query_are_clear_errors(tmp_path: Path) -> None:
    db = tmp_path / "kb.sqlite3"
    with pytest.raises(KnowledgeBaseError) as info:
        search_base(db, "notes", "dog")
    assert str(info.value) == (
        f"no knowledge bases yet ({db} does not exist); create one with "
        "`pegboard kb add NAME PATH...`"
    )
    with pytest.raises(KnowledgeBaseError, match=r"^the query is empty"):
        search_base(db, "notes", "  ")


def test_a_corrupt_store_file_is_a_knowledge_base_error(tmp_path: Path) -> None:
    db = tmp_path / "kb.sqlite3"
    db.write_bytes(b"this is not sqlite" * 100)

    with pytest.raises(KnowledgeBaseError, match=r"is unreadable: file is not a database$"):
        list_bases(db)


def test_a_base_keeps_the_model_it_was_built_with(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "kb.sqlite3"
    ingest(db, "notes", [notes / "pets.md"], model="wordllama")

    ingest(db, "notes", [notes / "hr"], model="minilm-static")  # ignored: the base exists

    assert list_bases(db) == [BaseInfo("notes", "wordllama", 3, 3)]
    hits = search_base(db, "notes", "can I bring my dog to the office", top_k=1)
    assert hits[0].title == "Pet policy"
