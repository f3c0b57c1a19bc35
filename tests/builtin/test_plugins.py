"""The pegboard.tools entry-point group, found by importlib.metadata in a third-party dist."""

from __future__ import annotations

import logging
import pathlib
from importlib.metadata import entry_points

import pytest

from pegboard.builtin.plugins import GROUP, _points, load_tool_entries
from pegboard.config.model import PegboardConfig
from pegboard.core.entry import ToolEntry

ENTRY_POINTS = """\
[pegboard.tools]
acme = acme_tools.tools:entries
broken = acme_tools.broken:entries
clash = acme_tools.tools:clashing
wrong = acme_tools.tools:not_entries
"""

TOOLS = """\
from pegboard.core.entry import ToolEntry
from pegboard.core.tool import Tool


def entries(config, data_dir):
    tool = Tool(description="Echo the data dir.", execute=lambda args, ctx: str(data_dir))
    return [ToolEntry(name="acme_echo", namespace="acme", tool=tool)]


def clashing(config, data_dir):
    return [ToolEntry(name="web_search", namespace="acme", tool=Tool(description="mine"))]


def not_entries(config, data_dir):
    return ["acme_other"]
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A distribution laid out as pip installs one: the package plus its ``.dist-info``."""
    site = tmp_path_factory.mktemp("site")
    (site / "acme_tools").mkdir()
    (site / "acme_tools" / "__init__.py").write_text("")
    (site / "acme_tools" / "tools.py").write_text(TOOLS)
    (site / "acme_tools" / "broken.py").write_text("raise ImportError('acme is broken')\n")
    info = site / "acme_pegboard_tools-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: acme-pegboard-tools\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return site


@pytest.fixture
def loaded(
    installed: pathlib.Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> tuple[list[ToolEntry], list[str]]:
    """The entries loaded with the plugin dist on sys.path, and the warnings logged."""
    monkeypatch.syspath_prepend(str(installed))
    caplog.set_level(logging.WARNING, logger="pegboard.builtin.plugins")
    return load_tool_entries(PegboardConfig(), pathlib.Path("/data")), caplog.messages


def test_an_installed_plugin_adds_its_tools_after_pegboards_own(
    loaded: tuple[list[ToolEntry], list[str]],
) -> None:
    entries, _ = loaded
    assert [(e.name, e.namespace) for e in entries] == [
        ("kb_search", "kb"),
        ("kb_list", "kb"),
        ("web_search", "web"),
        ("web_fetch", "web"),
        ("acme_echo", "acme"),
    ]
    assert entries[4].tool.execute is not None
    assert entries[4].tool.execute({}, None) == "/data"  # type: ignore[arg-type]


def test_a_broken_plugin_is_skipped_with_a_warning_naming_it(
    loaded: tuple[list[ToolEntry], list[str]],
) -> None:
    _, warnings = loaded
    assert (
        "tool plugin broken (acme_tools.broken:entries) failed and is skipped: acme is broken"
        in warnings
    )
    assert (
        "tool plugin wrong (acme_tools.tools:not_entries) failed and is skipped: "
        "returned str, not ToolEntry" in warnings
    )


def test_a_plugin_cannot_take_a_name_already_provided(
    loaded: tuple[list[ToolEntry], list[str]],
) -> None:
    entries, warnings = loaded
    (search,) = [e for e in entries if e.name == "web_search"]
    assert search.namespace == "web"
    assert (
        "tool plugin clash (acme_tools.tools:clashing): tool web_search is already provided "
        "by web (pegboard.builtin.web_tools:web_entries); skipped" in warnings
    )


def test_without_plugins_pegboard_registers_its_four_built_ins() -> None:
    entries = load_tool_entries(PegboardConfig(), pathlib.Path("."))
    assert [e.name for e in entries] == ["kb_search", "kb_list", "web_search", "web_fetch"]


def _dist(site: pathlib.Path, name: str, entry_points: str | None) -> None:
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points)


def test_plugins_are_the_entry_points_importlib_metadata_finds(
    installed: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    # The first of two installs of one name wins, though it has no tools; the second's go.
    _dist(first, "shadowed-tools", "[console_scripts]\nshadowed = shadowed:main\n")
    _dist(second, "shadowed-tools", "[pegboard.tools]\nshadow = shadowed.tools:entries\n")
    _dist(second, "scripts-only", "[console_scripts]\npegboard.tools = x:main\n")
    _dist(second, "no-entry-points", None)
    for site in (second, first, installed):  # sys.path: installed, first, second, ...
        monkeypatch.syspath_prepend(str(site))

    found = sorted(f"{p.name}={p.value}" for p in _points())

    assert found == sorted(f"{p.name}={p.value}" for p in entry_points(group=GROUP))
    assert found == [
        "acme=acme_tools.tools:entries",
        "broken=acme_tools.broken:entries",
        "clash=acme_tools.tools:clashing",
        "kb=pegboard.builtin.kb_tools:kb_entries",
        "web=pegboard.builtin.web_tools:web_entries",
        "wrong=acme_tools.tools:not_entries",
    ]
