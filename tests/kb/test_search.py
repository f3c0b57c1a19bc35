import math
import shutil
import sqlite3
from pathlib import Path

import pytest

from pegboard.kb import ingest, remove, search_base, search_bases
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
    every = search_base(db, "py", query, top_k=50, mode="fts", chunks=True)
    bisect = [h.score for h in every if h.source == documents[0].source]
    # a document scores as the log-sum-exp of its passages at a quarter of the best passage's
    # score (more than its best passage alone, less than their sum), and shows the best
    assert documents[0].score == pytest.approx(_lse(bisect, every[0].score / 4), abs=1e-5)
    assert bisect[0] < documents[0].score < sum(bisect)
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
    together, _ = search_bases(path, ["small", "py"], query, top_k=5)
    (pooled,) = [h for h in together if h.base == "small"]

    assert [Path(h.source).name for h in together][:2] == ["bisect.html", "heapq.html"]
    assert alone[0].score > pooled.score  # its own best, scaled by itself alone


def test_a_document_scores_its_best_chunks_plus_its_lead_and_title_z_scores(db: Path) -> None:
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
        named = dict(
            conn.execute(
                "SELECT d.source, t.vector FROM document_titles t JOIN documents d"
                " ON d.id = t.document"
            ).fetchall()
        )
        embedder = load_embedder("minilm-static")
        vector = embedder.embed_query(query, _idf_weight(conn, db))
        (colorsys_title,) = conn.execute(
            "SELECT title FROM documents WHERE source LIKE '%colorsys.html'"
        ).fetchone()
    sources = sorted(first)
    assert sorted(named) == sources  # one title vector per document, its title embedded alone
    colorsys = next(s for s in sources if s.endswith("colorsys.html"))
    assert np.frombuffer(named[colorsys], dtype=np.float32) == pytest.approx(
        embedder.embed([colorsys_title])[0], abs=1e-6
    )

    def z(blobs: dict[str, bytes]) -> dict[str, float]:
        cos = np.stack([np.frombuffer(blobs[s], dtype=np.float32) for s in sources]) @ vector
        return dict(zip(sources, ((cos - cos.mean()) / cos.std()).tolist(), strict=True))

    leads, titles = z({s: b for s, (_, b) in first.items()}), z(named)

    assert Path(documents[0].source).name == "colorsys.html"
    assert leads[colorsys] > 0  # the colorsys page's opening says what it is about
    assert titles[colorsys] > 0  # and so does its title
    for hit in documents:
        own = [p.score for p in passages if p.source == hit.source]
        expected = (
            _lse(own, passages[0].score / 4)
            + 0.5 * max(leads[hit.source], 0.0)
            + 0.25 * max(titles[hit.source], 0.0)
        )
        assert hit.score == pytest.approx(expected, abs=1e-5)


def test_a_store_from_before_title_vectors_is_searched_without_them_until_re_added(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kb.sqlite3"
    ingest(path, "py", [LIBRARY], model="minilm-static")
    query = "convert a colour between RGB and HSV coordinates"
    with_titles = search_base(path, "py", query, top_k=3)
    with sqlite3.connect(path) as conn:
        (documents,) = conn.execute("SELECT count(*) FROM documents").fetchone()
        (titles,) = conn.execute("SELECT count(*) FROM document_titles").fetchone()
    remove(path, "py", str(LIBRARY / "bisect.html"))
    with sqlite3.connect(path) as conn:
        (left,) = conn.execute("SELECT count(*) FROM document_titles").fetchone()
        conn.execute("DROP TABLE document_titles")
        conn.execute("UPDATE bases SET generation = generation + 1")

    without = search_base(path, "py", query, top_k=3)

    assert (titles, left) == (documents, documents - 1)  # a document's title goes with it
    assert without[0].source == with_titles[0].source
    assert without[0].score < with_titles[0].score  # no title term, no error

    again = ingest(path, "py", [LIBRARY], model="minilm-static")  # a re-add fills them in
    with sqlite3.connect(path) as conn:
        (titles_again,) = conn.execute("SELECT count(*) FROM document_titles").fetchone()
    restored = search_base(path, "py", query, top_k=3)

    assert (len(again.indexed), len(again.unchanged)) == (1, documents - 1)  # bisect.html back
    assert titles_again == documents
    assert [h.source for h in restored] == [h.source for h in with_titles]
    assert [h.score for h in restored] == pytest.approx([h.score for h in with_titles], abs=1e-6)


def _lse(scores: list[float], temperature: float) -> float:
    return temperature * math.log(sum(math.exp(s / temperature) for s in scores))


def _page(title: str, *paragraphs: str) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<html><head><title>{title} — Docs</title></head><body><nav>optkit flagparse</nav>"
        f"<div role='main'><h1>{title}¶</h1>{body}</div></body></html>"
    )


def test_a_page_whose_lead_says_it_is_deprecated_ranks_below_the_live_page_for_the_same_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pegboard.kb.search as kb_search

    pages = tmp_path / "pages"
    shutil.copytree(LIBRARY, pages)
    task = "Parse the options and flags typed after the script's name on the command line."
    (pages / "optkit.html").write_text(
        _page(
            "optkit — Command line options",
            "Source code: Lib/optkit.py",
            "Deprecated since version 3.2: The optkit module is deprecated; use flagparse.",
            f"{task} Each option and flag of the command line becomes an attribute.",
        )
    )
    (pages / "flagparse.html").write_text(
        _page("flagparse — Parser for arguments", "Source code: Lib/flagparse.py", task)
    )
    (pages / "legacy.md").write_text(
        "# legacy\n\n**Deprecated**: kept for old scripts.\n\nWrites a greeting to the screen.\n"
    )
    path = tmp_path / "kb.sqlite3"
    ingest(path, "docs", [pages], model="minilm-static")
    query = "each command line option and flag becomes an attribute"

    ranked = search_base(path, "docs", query, top_k=3)
    legacy = search_base(path, "docs", "legacy scripts greeting", top_k=1)
    monkeypatch.setattr(kb_search, "DEPRECATED", 1.0)
    undemoted = search_base(path, "docs", query, top_k=3)
    legacy_undemoted = search_base(path, "docs", "legacy scripts greeting", top_k=1)
    monkeypatch.undo()
    named = search_base(path, "docs", "the optkit module", top_k=1)
    chunks = search_base(path, "docs", query, top_k=3, chunks=True)

    names = [Path(h.source).name for h in ranked]
    assert [Path(h.source).name for h in undemoted][:2] == ["optkit.html", "flagparse.html"]
    assert names.index("flagparse.html") < names.index("optkit.html")
    (optkit,) = [h for h in ranked if h.source.endswith("optkit.html")]
    assert optkit.score == pytest.approx(undemoted[0].score * 0.7, abs=2e-6)
    # a Markdown page's "**Deprecated**" lead counts too
    assert Path(legacy[0].source).name == "legacy.md"
    assert legacy[0].score == pytest.approx(legacy_undemoted[0].score * 0.7, abs=2e-6)
    assert Path(named[0].source).name == "optkit.html"  # asked for by name, still found
    assert Path(chunks[0].source).name == "optkit.html"  # passages are not demoted


def test_a_deprecated_page_with_a_negative_score_is_still_ranked_lower(tmp_path: Path) -> None:
    """A document's score can be below zero (z-scores fused); the demotion lowers it whatever
    its sign (a factor of 0.7 on a negative score would raise it above the live page)."""
    from pegboard.kb.search import DEPRECATED, _collect

    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "optkit.html").write_text(
        _page(
            "optkit — Command line options",
            "Deprecated since version 3.2: The optkit module is deprecated; use flagparse.",
            "Parses the command line.",
        )
    )
    (pages / "flagparse.html").write_text(
        _page("flagparse — Parser for arguments", "Parses the command line.")
    )
    path = tmp_path / "kb.sqlite3"
    ingest(path, "docs", [pages], model="minilm-static")
    with sqlite3.connect(path) as conn:
        first = {
            Path(source).name: chunk_id
            for chunk_id, source in conn.execute(
                "SELECT MIN(id), source FROM chunks GROUP BY source"
            )
        }
        ranked = [(first["optkit.html"], -1.0), (first["flagparse.html"], -1.1)]
        kept, demoted = (
            _collect(conn, ranked, [], 2, by_document=True, leads={}, titles={}, demote=demote)
            for demote in (False, True)
        )

    assert [(Path(h.source).name, h.score) for h in kept] == [
        ("optkit.html", -1.0),
        ("flagparse.html", -1.1),
    ]
    assert [(Path(h.source).name, h.score) for h in demoted] == [
        ("flagparse.html", -1.1),
        ("optkit.html", pytest.approx(-1.0 - (1.0 - DEPRECATED))),
    ]
