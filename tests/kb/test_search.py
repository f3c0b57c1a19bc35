import sqlite3
from pathlib import Path

import pytest

from pegboard.kb import ingest, search_base, search_bases
from pegboard.kb.extract import extract, main_region

PYDOC = Path(__file__).resolve().parents[1] / "fixtures" / "pydoc"
LIBRARY = PYDOC / "library"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kb") / "kb.sqlite3"
    ingest(path, "py", [LIBRARY], model="minilm-static")
    return path


def test_a_search_gives_one_result_per_document_with_its_best_passage_and_heading(
    db: Path,
) -> None:
    query = "insert into a sorted list and keep it sorted"

    documents = search_base(db, "py", query, top_k=4, mode="fts")
    passages = search_base(db, "py", query, top_k=4, mode="fts", chunks=True)

    assert [Path(h.source).name for h in documents] == ["bisect.html", "heapq.html"]
    assert [Path(h.source).name for h in passages][:2] == ["bisect.html", "bisect.html"]
    bisect = [
        h.score
        for h in search_base(db, "py", query, top_k=50, mode="fts", chunks=True)
        if h.source == documents[0].source
    ]
    # a document scores as its best passage plus 0.3 times its next two, and shows the best
    assert documents[0].score == pytest.approx(bisect[0] + 0.3 * (bisect[1] + bisect[2]), abs=1e-5)
    assert (documents[0].title, documents[0].snippet) == (passages[0].title, passages[0].snippet)
    assert documents[0].title == "bisect — Array bisection algorithm — Python 3.11.2 documentation"
    assert [h.score for h in documents] == sorted((h.score for h in documents), reverse=True)


def test_a_result_from_a_section_is_titled_with_the_page_and_the_heading(db: Path) -> None:
    (hit,) = search_base(db, "py", "movie released after 1960 by_year", top_k=1, mode="fts")

    assert (
        hit.title == "bisect — Array bisection algorithm — Python 3.11.2 documentation › Examples"
    )


def test_a_page_that_declares_its_main_region_is_indexed_without_its_navigation(db: Path) -> None:
    page = (LIBRARY / "bisect.html").read_text()
    with sqlite3.connect(db) as conn:
        texts = [r[0] for r in conn.execute("SELECT title || ' ' || text FROM chunks")]
        titles = {r[0] for r in conn.execute("SELECT title FROM chunks")}

    assert "Previous topic" in page
    assert "Report a Bug" in page
    assert not [t for t in texts if "Previous topic" in t or "Report a Bug" in t]
    assert not [t for t in titles if "¶" in t]  # Sphinx's permalink marks end no heading
    assert main_region(page).startswith("<head>")
    assert 'role="main"' in main_region(page)[:3000]
    assert main_region("<p>no main here</p>") == "<p>no main here</p>"


def test_a_main_region_nested_in_its_own_tag_name_ends_at_its_own_close() -> None:
    html = (
        "<html><head><title>T</title></head><body><div class='nav'>menu words</div>"
        "<div role='main'><div>inner</div><p>kept</p></div><div>after words</div></body></html>"
    )

    doc = extract(html.encode(), Path("page.html"))

    assert doc.title == "T"
    assert " ".join(s.text for s in doc.sections).split() == ["inner", "kept"]


def test_the_same_document_in_two_bases_is_one_result_and_a_missing_base_is_reported(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kb.sqlite3"
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "bisect.html").write_bytes((LIBRARY / "bisect.html").read_bytes())
    ingest(path, "py", [LIBRARY], model="minilm-static")
    ingest(path, "mirror", [copy], model="minilm-static")

    hits, failed = search_bases(path, ["py", "mirror", "nope"], "bisection algorithm", top_k=5)

    assert [Path(h.source).name for h in hits].count("bisect.html") == 1
    assert failed == {"nope": "no knowledge base named 'nope'; see `pegboard kb list`"}


def test_scores_are_normalised_over_every_base_searched_so_a_weak_match_stays_below(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kb.sqlite3"
    small = tmp_path / "small"
    small.mkdir()
    (small / "lunch.md").write_text("# Lunch\n\nThe canteen sorts its menu by price.\n")
    ingest(path, "py", [LIBRARY], model="minilm-static")
    ingest(path, "small", [small], model="minilm-static")
    query = "bisection algorithm to keep a list sorted"

    alone = search_base(path, "small", query, top_k=1)
    together, _ = search_bases(path, ["small", "py"], query, top_k=2)

    assert [Path(h.source).name for h in together] == ["bisect.html", "heapq.html"]
    assert alone[0].score > together[1].score  # its own best, scaled by itself alone


def test_a_document_scores_its_best_chunks_plus_half_the_z_score_of_its_lead(db: Path) -> None:
    import numpy as np

    from pegboard.kb.embedding import load_embedder
    from pegboard.kb.vectors import _idf_weight

    query = "convert a colour between RGB and HSV coordinates"

    documents = search_base(db, "py", query, top_k=4)
    passages = search_base(db, "py", query, top_k=100, chunks=True)
    with sqlite3.connect(db) as conn:
        first: dict[str, tuple[int, bytes]] = {}
        for source, position, blob in conn.execute("SELECT source, position, vector FROM chunks"):
            if source not in first or position < first[source][0]:
                first[source] = (position, blob)
        vector = load_embedder("minilm-static").embed_query(query, _idf_weight(conn, db))
    sources = sorted(first)
    leads = np.stack([np.frombuffer(first[s][1], dtype=np.float32) for s in sources]) @ vector
    z = dict(zip(sources, (leads - leads.mean()) / leads.std(), strict=True))

    assert Path(documents[0].source).name == "colorsys.html"
    assert z[documents[0].source] > 0  # the colorsys page's opening says what it is about
    for hit in documents:
        own = [p.score for p in passages if p.source == hit.source]
        expected = own[0] + 0.3 * sum(own[1:3]) + 0.5 * max(float(z[hit.source]), 0.0)
        assert hit.score == pytest.approx(expected, abs=1e-5)
