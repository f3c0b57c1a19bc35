import sqlite3
from pathlib import Path

import pytest

from pegboard.errors import KnowledgeBaseError
from pegboard.kb import ingest, list_bases
from pegboard.kb.excludes import check_patterns, excluded
from pegboard.kb.files import discover

PYDOC = Path(__file__).resolve().parents[1] / "fixtures" / "pydoc"
PAGES = ["bisect.html", "colorsys.html", "heapq.html", "keyword.html"]


def _sources(db: Path, base: str = "py") -> list[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT source FROM documents WHERE base = ?", (base,)).fetchall()
    return sorted(Path(r[0]).relative_to(PYDOC).as_posix() for r in rows)


@pytest.mark.parametrize(
    ("relative", "patterns", "expected"),
    [
        ("_sources/library/bisect.rst.txt", ["_sources"], True),  # a folder anywhere
        ("docs/_sources/x.txt", ["_sources"], True),
        ("library/bisect.html", ["_sources"], False),
        ("library/notes.txt", ["*.txt"], True),  # a file name anywhere
        ("library/notes.txt.html", ["*.txt"], False),
        ("drafts/a.md", ["drafts/*.md"], True),  # with a slash: from the folder down
        ("old/drafts/a.md", ["drafts/*.md"], False),
        ("library/_sources/a.txt", ["library/_sources"], True),
        ("library/bisect.html", ["library/*"], True),  # * crosses folders too
        ("Bisect.html", ["bisect.html"], False),  # case matters, as on the file system
        ("a/b.md", [], False),
    ],
)
def test_an_exclude_pattern_matches_a_part_of_the_path_or_a_path_from_the_folder_down(
    relative: str, patterns: list[str], expected: bool
) -> None:
    assert excluded(relative, patterns) is expected


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "invalid exclude pattern ''"),
        ("/abs/path", "patterns are relative to the folder added (write 'abs/path')"),
        ("a\0b", "invalid exclude pattern 'a\\x00b'"),
        ("x" * 201, "give a glob of up to 200 characters"),
    ],
)
def test_a_bad_exclude_pattern_is_refused_with_the_fix(pattern: str, message: str) -> None:
    with pytest.raises(KnowledgeBaseError, match="invalid exclude pattern") as info:
        check_patterns([pattern])
    assert message in str(info.value)


def test_patterns_are_kept_once_in_order_and_a_trailing_slash_is_dropped() -> None:
    assert check_patterns(["_sources/", "*.txt", "./_sources", "*.txt"]) == ("_sources", "*.txt")


def test_discovery_does_not_walk_an_excluded_folder_and_skips_excluded_files() -> None:
    everything, _ = discover([PYDOC])
    kept, skipped = discover([PYDOC], exclude=["_sources", "keyword.*"])

    assert [c.path.relative_to(PYDOC).as_posix() for c in everything] == [
        "_sources/library/bisect.rst.txt",
        "_sources/library/colorsys.rst.txt",
        *(f"library/{p}" for p in PAGES),
    ]
    assert [c.path.relative_to(PYDOC).as_posix() for c in kept] == [
        "library/bisect.html",
        "library/colorsys.html",
        "library/heapq.html",
    ]
    assert skipped == []


def test_excludes_are_remembered_for_the_base_and_applied_when_it_is_added_again(
    tmp_path: Path,
) -> None:
    db = tmp_path / "kb.sqlite3"

    first = ingest(db, "py", [PYDOC], model="minilm-static", exclude=["_sources"])
    again = ingest(db, "py", [PYDOC])  # no --exclude: the remembered one still applies

    assert first.excludes == ("_sources",)
    assert _sources(db) == [f"library/{p}" for p in PAGES]
    assert (again.indexed, again.excludes, again.removed) == ([], ("_sources",), [])
    assert len(again.unchanged) == 4
    assert list_bases(db)[0].excludes == ("_sources",)


def test_an_exclude_added_later_takes_the_files_it_names_out_of_the_base(tmp_path: Path) -> None:
    db = tmp_path / "kb.sqlite3"
    ingest(db, "py", [PYDOC], model="minilm-static")
    assert len(_sources(db)) == 6

    report = ingest(db, "py", [PYDOC], exclude=["*.txt"])

    assert sorted(Path(s).name for s in report.removed) == ["bisect.rst.txt", "colorsys.rst.txt"]
    assert _sources(db) == [f"library/{p}" for p in PAGES]
    assert list_bases(db)[0].documents == 4


def test_config_excludes_apply_without_being_remembered_and_forget_drops_remembered_ones(
    tmp_path: Path,
) -> None:
    db = tmp_path / "kb.sqlite3"
    ingest(db, "py", [PYDOC], model="minilm-static", exclude=["_sources"])

    configured = ingest(db, "py", [PYDOC], config_exclude=["keyword.html"])
    assert configured.excludes == ("_sources", "keyword.html")
    assert "library/keyword.html" not in _sources(db)
    assert list_bases(db)[0].excludes == ("_sources",)

    forgotten = ingest(db, "py", [PYDOC], forget_excludes=True)
    assert forgotten.excludes == ()
    assert len(_sources(db)) == 6
    assert list_bases(db)[0].excludes == ()


def test_a_store_written_before_excludes_existed_lists_its_bases_without_any(
    tmp_path: Path,
) -> None:
    db = tmp_path / "kb.sqlite3"
    ingest(db, "py", [PYDOC / "library" / "keyword.html"], model="minilm-static")
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE base_excludes")

    assert [(b.name, b.documents, b.excludes) for b in list_bases(db)] == [("py", 1, ())]
