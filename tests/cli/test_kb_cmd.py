import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import Invoke, as_json


def test_kb_add_then_search_json_finds_the_note_asked_for_in_other_words(
    invoke: Invoke, notes: Path
) -> None:
    added = invoke("kb", "add", "notes", str(notes))
    found = invoke("kb", "search", "notes", "can I bring my dog to the office", "--json", "-k", "1")

    assert added.exit_code == 0
    assert added.stdout == "notes: 2 file(s) indexed (2 chunks), 0 unchanged, 0 skipped\n"
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
    assert "notes: 0 file(s) indexed (0 chunks), 2 unchanged, 1 skipped" in again.stdout
    assert f"warning: skipped {tmp_path / 'missing'}: no such file or directory" in again.stderr


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
    assert "unknown embedding model 'bert'; use one of minilm-l6, minilm-static, wordllama" in model.stderr


def test_kb_list_json_and_remove_of_a_path_and_of_a_base(invoke: Invoke, notes: Path) -> None:
    invoke("kb", "add", "notes", str(notes))

    listed = as_json(invoke("kb", "list", "--json"))
    removed_path = invoke("kb", "remove", "notes", str(notes / "pets.md"))
    after_path = as_json(invoke("kb", "list", "--json"))
    removed_base = invoke("kb", "remove", "notes")
    after_base = invoke("kb", "list")

    assert listed == [
        {"name": "notes", "documents": 2, "chunks": 2, "model": "minilm-static", "excludes": []}
    ]
    assert removed_path.stdout == f"removed 1 document(s) under {notes / 'pets.md'} from notes\n"
    assert after_path[0]["documents"] == 1
    assert removed_base.stdout == "removed knowledge base notes (1 document(s))\n"
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
