import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import Invoke, as_json, write

PYDOC = Path(__file__).resolve().parents[1] / "fixtures" / "pydoc"


def test_kb_add_then_search_json_finds_the_note_asked_for_in_other_words(
    invoke: Invoke, notes: Path
) -> None:
    added = invoke("kb", "add", "notes", str(notes))
    found = invoke("kb", "search", "notes", "can I bring my dog to the office", "--json", "-k", "1")

    assert added.exit_code == 0
    assert added.stdout == "notes: 2 files indexed (2 chunks), 0 unchanged, 0 skipped\n"
    assert found.exit_code == 0
    assert as_json(found) == [
        {
            "source": str(notes / "pets.md"),
            "title": "Pet policy",
            "snippet": "Employees may bring a well-behaved canine to the workplace on Fridays.",
            "score": as_json(found)[0]["score"],
        }
    ]
    assert isinstance(as_json(found)[0]["score"], float)


def test_kb_add_again_reports_unchanged_files_and_warns_about_skipped_ones(
    invoke: Invoke, notes: Path, tmp_path: Path
) -> None:
    invoke("kb", "add", "notes", str(notes))

    again = invoke("kb", "add", "notes", str(notes), str(tmp_path / "missing"))

    assert again.exit_code == 0
    assert "notes: 0 files indexed (0 chunks), 2 unchanged, 1 skipped" in again.stdout
    assert f"warning: skipped {tmp_path / 'missing'}: no such file or directory" in again.stderr


def test_kb_add_of_an_edited_file_says_how_many_chunks_it_kept(
    invoke: Invoke, tmp_path: Path
) -> None:
    page = tmp_path / "hb" / "handbook.md"
    page.parent.mkdir()
    page.write_text("# Handbook\n\n## Pets\n\nDogs on Fridays.\n\n## Leave\n\n25 days.\n")
    invoke("kb", "add", "hb", str(page.parent), "--model", "minilm-static")
    page.write_text("# Handbook\n\n## Pets\n\nDogs on Mondays.\n\n## Leave\n\n25 days.\n")

    again = invoke("kb", "add", "hb", str(page.parent))

    assert again.stdout == (
        "hb: 1 file indexed (2 chunks, 1 kept from before), 0 unchanged, 0 skipped\n"
    )


def test_kb_add_with_nothing_readable_fails_and_a_bad_name_is_a_usage_error(
    invoke: Invoke, tmp_path: Path
) -> None:
    nothing = invoke("kb", "add", "notes", str(tmp_path / "missing"))
    bad = invoke("kb", "add", "no/slash", str(tmp_path))
    model = invoke("kb", "add", "notes", str(tmp_path), "--model", "bert")

    assert nothing.exit_code == 1
    assert (
        "error: nothing was added: no readable Markdown, text, HTML or PDF file" in nothing.stderr
    )
    assert bad.exit_code == 2
    assert "invalid knowledge-base name 'no/slash'" in bad.stderr
    assert model.exit_code == 2
    assert (
        "unknown embedding model 'bert'; use one of minilm-l6, minilm-static, wordllama"
        in model.stderr
    )


def test_kb_list_json_and_remove_of_a_path_and_of_a_base(invoke: Invoke, notes: Path) -> None:
    invoke("kb", "add", "notes", str(notes))

    listed = as_json(invoke("kb", "list", "--json"))
    removed_path = invoke("kb", "remove", "notes", str(notes / "pets.md"))
    after_path = as_json(invoke("kb", "list", "--json"))
    removed_base = invoke("kb", "remove", "notes")
    after_base = invoke("kb", "list")

    assert listed == [
        {"name": "notes", "documents": 2, "chunks": 2, "model": "minilm-l6", "excludes": []}
    ]
    assert removed_path.stdout == f"removed 1 document under {notes / 'pets.md'} from notes\n"
    assert after_path[0]["documents"] == 1
    assert removed_base.stdout == "removed knowledge base notes (1 document)\n"
    assert (
        after_base.stdout
        == "no knowledge bases yet; create one with `pegboard kb add NAME PATH...`\n"
    )


def test_search_and_remove_of_an_unknown_base_exit_3(invoke: Invoke, notes: Path) -> None:
    invoke("kb", "add", "notes", str(notes))

    search = invoke("kb", "search", "nope", "dogs")
    remove = invoke("kb", "remove", "nope")
    remove_path = invoke("kb", "remove", "notes", "/nowhere")

    assert (search.exit_code, remove.exit_code, remove_path.exit_code) == (3, 3, 3)
    assert "error: no knowledge base named 'nope'; see `pegboard kb list`" in search.stderr
    assert "notes has no document at or under /nowhere" in remove_path.stderr


def test_kb_search_prints_ranked_passages_for_people(invoke: Invoke, notes: Path) -> None:
    invoke("kb", "add", "notes", str(notes))

    out = invoke("kb", "search", "notes", "garage spaces", "-k", "1")

    assert out.exit_code == 0
    first, second = out.stdout.splitlines()
    assert first.startswith(f"1. Car park  ({notes / 'parking.md'}, score ")
    assert second == "   The garage has 40 spaces."


def test_importing_the_kb_modules_loads_no_parser() -> None:
    code = (
        "import sys\n"
        "import pegboard.kb, pegboard.builtin.kb_tools, pegboard.cli.kb_cmd\n"
        "print(sorted(m for m in ('bs4', 'pypdf', 'defusedxml') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout == "[]\n"


def test_kb_add_exclude_is_remembered_shown_by_kb_list_and_joined_by_the_config(
    invoke: Invoke, config_path: Path
) -> None:
    first = invoke("kb", "add", "py", str(PYDOC), "--model", "minilm-static", "-x", "_sources")
    again = invoke("kb", "add", "py", str(PYDOC))
    write(config_path, {"kb": {"py": {"exclude": ["keyword.html"]}}})
    configured = invoke("kb", "add", "py", str(PYDOC))
    listed = invoke("kb", "list")
    listed_json = as_json(invoke("kb", "list", "--json"))

    assert first.stdout == (
        "py: 4 files indexed (24 chunks), 0 unchanged, 0 skipped\nexcluded: _sources\n"
    )
    assert (
        again.stdout
        == "py: 0 files indexed (0 chunks), 4 unchanged, 0 skipped\nexcluded: _sources\n"
    )
    assert configured.stdout == (
        "py: 0 files indexed (0 chunks), 3 unchanged, 0 skipped, 1 removed (excluded)\n"
        "excluded: _sources, keyword.html\n"
    )
    assert listed_json == [
        {
            "name": "py",
            "documents": 3,
            "chunks": listed_json[0]["chunks"],
            "model": "minilm-static",
            "excludes": ["_sources", "keyword.html"],
        }
    ]
    assert "_sources keyword.html" in listed.stdout


def test_kb_add_forget_excludes_reads_the_excluded_files_again_and_bad_globs_exit_2(
    invoke: Invoke, config_path: Path
) -> None:
    invoke("kb", "add", "py", str(PYDOC), "--model", "minilm-static", "-x", "_sources")

    forgotten = invoke("kb", "add", "py", str(PYDOC), "--forget-excludes")
    bad = invoke("kb", "add", "py", str(PYDOC), "--exclude", "/etc")
    write(config_path, {"kb": {"py": {"exclude": [""]}}})
    bad_config = invoke("kb", "add", "py", str(PYDOC))

    assert forgotten.stdout == "py: 2 files indexed (10 chunks), 4 unchanged, 0 skipped\n"
    assert bad.exit_code == 2
    assert "error: invalid exclude pattern '/etc': patterns are relative" in bad.stderr
    assert bad_config.exit_code == 2
    assert "error: invalid exclude pattern ''" in bad_config.stderr


def test_kb_search_chunks_shows_several_passages_of_one_page(invoke: Invoke) -> None:
    invoke("kb", "add", "py", str(PYDOC / "library"), "--model", "minilm-static")
    question = "keep a list in sorted order without sorting it again after each insertion"

    documents = as_json(invoke("kb", "search", "py", question, "--json", "-k", "3"))
    passages = as_json(invoke("kb", "search", "py", question, "--json", "-k", "3", "--chunks"))

    names = [Path(r["source"]).name for r in documents]
    assert names[0] == "bisect.html"
    assert len(set(names)) == len(names)
    assert [Path(r["source"]).name for r in passages][:2] == ["bisect.html", "bisect.html"]
