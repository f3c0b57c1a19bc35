import logging
from pathlib import Path
from typing import Any

import pytest

from pegboard.builtin.kb_tools import kb_entries
from pegboard.config.model import PegboardConfig
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.scope import AssistantSettings, ToolApplyScope
from pegboard.core.tool import ToolContext
from pegboard.kb import ingest

PETS = "# Pet policy\n\nEmployees may bring a well-behaved canine to the workplace on Fridays.\n"
PARKING = "# Car park\n\nThe garage has 40 spaces, allocated by monthly lottery.\n"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "pets.md").write_text(PETS)
    (notes / "parking.md").write_text(PARKING)
    other = tmp_path / "other"
    other.mkdir()
    (other / "copy-of-pets.md").write_text(PETS)  # the same text in a second base
    data = tmp_path / "data"
    ingest(data / "kb.sqlite3", "notes", [notes])
    ingest(data / "kb.sqlite3", "other", [other])
    return data


def _entries(data_dir: Path) -> dict[str, ToolEntry]:
    return {e.name: e for e in kb_entries(PegboardConfig(), data_dir)}


def _scope(*ids: str) -> ToolApplyScope:
    return ToolApplyScope(assistant=AssistantSettings(knowledge_base_ids=ids))


async def _call(entry: ToolEntry, scope: ToolApplyScope | None, **args: Any) -> ToolOutput:
    result = await entry.tool.run(args, ToolContext(call_id="c1", scope=scope))
    assert isinstance(result, ToolOutput)
    return result


def test_both_tools_are_deferred_kb_tools_that_apply_when_the_profile_names_a_base(
    data_dir: Path,
) -> None:
    entries = _entries(data_dir)

    assert list(entries) == ["kb_search", "kb_list"]
    for entry in entries.values():
        assert (entry.namespace, entry.defer) == ("kb", "auto")
        assert entry.tool.annotations == {"readOnlyHint": True, "openWorldHint": False}
        assert entry.applies is not None
        assert entry.applies(_scope("notes")) is True
        assert entry.applies(_scope()) is False
    assert entries["kb_search"].tool.input_schema["required"] == ["query"]


@pytest.mark.anyio
async def test_kb_search_merges_bases_dedupes_by_content_and_numbers_from_one(
    data_dir: Path,
) -> None:
    out = await _call(
        _entries(data_dir)["kb_search"],
        _scope("notes", "other"),
        query="can I bring my dog to the office",
        top_k=5,
    )

    results = out.structured["results"]
    assert [r["id"] for r in results] == [1, 2]
    assert [r["title"] for r in results] == ["Pet policy", "Car park"]
    assert results[0]["snippet"] == PETS.splitlines()[2]
    assert results[0]["score"] >= results[1]["score"]
    assert {r["knowledge_base"] for r in results} <= {"notes", "other"}
    assert out.structured["warnings"] == []
    assert out.as_text().startswith('[{"id": 1, "knowledge_base": ')


@pytest.mark.anyio
async def test_ids_outside_the_scope_are_dropped_with_a_warning(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entry = _entries(data_dir)["kb_search"]
    with caplog.at_level(logging.WARNING, logger="pegboard.kb"):
        out = await _call(
            entry, _scope("notes"), query="parking", knowledge_base_ids=["other", "notes"]
        )

    assert [r["knowledge_base"] for r in out.structured["results"]][:1] == ["notes"]
    assert all(r["knowledge_base"] == "notes" for r in out.structured["results"])
    assert out.structured["warnings"] == [
        "knowledge base 'other' is not available to this profile; not searched"
    ]
    assert caplog.messages == [
        "kb_search: knowledge base 'other' is not available to this profile; not searched"
    ]


@pytest.mark.anyio
async def test_all_ids_out_of_scope_is_an_empty_result_without_a_search_and_a_kb_list_hint(
    tmp_path: Path,
) -> None:
    entry = _entries(tmp_path / "no-store-here")["kb_search"]  # a search would fail loudly

    out = await _call(entry, _scope("notes"), query="dogs", knowledge_base_ids=["secret"])

    assert out.structured == {
        "results": [],
        "warnings": ["knowledge base 'secret' is not available to this profile; not searched"],
    }
    assert out.as_text() == (
        "No passages found. Call kb_list to see the knowledge bases and what they hold, then "
        "search again with other words or other knowledge_base_ids.\n"
        "warning: knowledge base 'secret' is not available to this profile; not searched"
    )


@pytest.mark.anyio
async def test_without_a_scope_the_requested_ids_are_trusted(data_dir: Path) -> None:
    out = await _call(
        _entries(data_dir)["kb_search"], None, query="canine", knowledge_base_ids=["other"]
    )

    assert [(r["knowledge_base"], Path(r["source"]).name) for r in out.structured["results"]] == [
        ("other", "copy-of-pets.md")
    ]


@pytest.mark.anyio
async def test_one_broken_base_does_not_hide_the_others(data_dir: Path) -> None:
    out = await _call(_entries(data_dir)["kb_search"], _scope("gone", "notes"), query="lottery")

    assert out.structured["results"][0]["title"] == "Car park"
    assert out.structured["warnings"] == [
        "knowledge base 'gone' could not be searched: no knowledge base named 'gone'; "
        "see `pegboard kb list`"
    ]


@pytest.mark.anyio
async def test_kb_list_shows_the_bases_in_scope_with_sample_sources_and_failures(
    data_dir: Path,
) -> None:
    out = await _call(_entries(data_dir)["kb_list"], _scope("notes", "gone"))

    assert out.structured == [
        {
            "id": "notes",
            "documents": 2,
            "sample_sources": [
                str(data_dir.parent / "notes" / "parking.md"),
                str(data_dir.parent / "notes" / "pets.md"),
            ],
        },
        {"id": "gone", "error": "no knowledge base named 'gone'; create it with `pegboard kb add`"},
    ]


@pytest.mark.anyio
async def test_kb_list_caps_samples_at_eight_and_shortens_long_names(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    for i in range(10):
        (deep / f"{i}.txt").write_text(f"note {i}")
    ingest(tmp_path / "data" / "kb.sqlite3", "many", [deep])

    out = await _call(_entries(tmp_path / "data")["kb_list"], _scope("many"))

    samples = out.structured[0]["sample_sources"]
    assert len(samples) == 8
    assert out.structured[0]["documents"] == 10
    assert all(len(s) == 80 and s.endswith("…") for s in samples)
    assert samples[0] == (str(deep / "0.txt"))[:79] + "…"


@pytest.mark.anyio
async def test_kb_list_filters_by_query_and_hints_when_nothing_matches(data_dir: Path) -> None:
    entry = _entries(data_dir)["kb_list"]

    matched = await _call(entry, _scope("notes", "other"), query="COPY-of")
    nothing = await _call(entry, _scope("notes", "other"), query="zzz")

    assert [r["id"] for r in matched.structured] == ["other"]
    assert nothing.as_text() == (
        "No knowledge base matches 'zzz'; call kb_list without a query for all of them."
    )


@pytest.mark.anyio
async def test_kb_list_with_an_empty_scope_lists_every_base_or_says_there_are_none(
    data_dir: Path, tmp_path: Path
) -> None:
    listed = await _call(_entries(data_dir)["kb_list"], None)
    empty = await _call(_entries(tmp_path / "empty")["kb_list"], None)

    assert [r["id"] for r in listed.structured] == ["notes", "other"]
    assert empty.as_text() == (
        "No knowledge bases yet; the user can create one with `pegboard kb add NAME PATH`."
    )


def test_the_entry_point_is_declared_for_the_pegboard_tools_group() -> None:
    from importlib.metadata import entry_points

    (point,) = [e for e in entry_points(group="pegboard.tools") if e.name == "kb"]

    assert point.value == "pegboard.builtin.kb_tools:kb_entries"
    assert point.load() is kb_entries


PYDOC = Path(__file__).resolve().parents[1] / "fixtures" / "pydoc" / "library"


@pytest.mark.anyio
async def test_kb_search_gives_one_result_per_document_and_passages_when_asked(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    ingest(data / "kb.sqlite3", "py", [PYDOC], model="minilm-static")
    entry = _entries(data)["kb_search"]
    question = "keep a list in sorted order without sorting it again after each insertion"

    documents = await _call(entry, _scope("py"), query=question, top_k=3)
    passages = await _call(entry, _scope("py"), query=question, top_k=3, chunks=True)

    names = [Path(r["source"]).name for r in documents.structured["results"]]
    assert names[0] == "bisect.html"
    assert len(names) == len(set(names))
    assert [Path(r["source"]).name for r in passages.structured["results"]][:2] == [
        "bisect.html",
        "bisect.html",
    ]
    assert documents.structured["results"][0]["title"].startswith("bisect — Array bisection")
    assert entry.tool.input_schema["properties"]["chunks"] == {
        "default": False,
        "description": "Return passages instead of documents (a document may give several).",
        "type": "boolean",
    }
