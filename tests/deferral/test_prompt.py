from pegboard.core.entry import ToolEntry, ToolSource
from pegboard.core.status import NamespaceStatus
from pegboard.core.tokens import default_token_counter
from pegboard.deferral import render_deferred_section
from pegboard.sandbox.tool import EXEC_PROMPT_LINE
from tests.deferral.factories import entry

META = ["tool_search", "tool_inspect", "tool_invoke"]
GMAIL_ID = "6f1c2a9e-gmail-uuid"


def gmail(tool: str) -> ToolEntry:
    return entry(
        f"mcp__gmail__{tool}",
        namespace=f"mcp:{GMAIL_ID}",
        label="mcp:Gmail",
        source=ToolSource(GMAIL_ID, tool),
    )


GOLDEN = """\
<deferred-tools>
More tools are available than are loaded. Find and call them with:
- tool_search({query?, namespace?, limit?, verbose?}): ranked search over these tools; \
for a task of several steps, pass one query per step; no query browses
- tool_inspect({name}): a tool's signature (JSDoc stub)
- tool_invoke({name, params}): call a tool; inspect first unless you know its params
<namespaces>
- mcp:Gmail (2): mcp__gmail__search_threads, mcp__gmail__send_message
- web (2): web_fetch, web_search
- mcp:Jira: server failing: connection refused; its tools may be missing
</namespaces>
</deferred-tools>"""


def test_the_section_lists_labels_counts_summaries_and_failing_servers() -> None:
    deferred = [gmail("send_message"), gmail("search_threads"), entry("web_fetch")]
    deferred.append(entry("web_search"))
    statuses = {"mcp:jira-id": NamespaceStatus("mcp:Jira", "failed", "connection refused")}
    text = render_deferred_section(META, deferred, statuses=statuses)
    assert text == GOLDEN
    assert GMAIL_ID not in text
    assert "jira-id" not in text


def test_the_section_is_the_same_whatever_the_input_order() -> None:
    deferred = [gmail("send_message"), entry("web_search"), gmail("search_threads")]
    assert render_deferred_section(META, deferred) == render_deferred_section(
        META, list(reversed(deferred))
    )


def test_a_namespace_without_label_falls_back_to_the_namespace() -> None:
    text = render_deferred_section(META, [entry("kb_search", namespace="kb")])
    assert "- kb (1): kb_search" in text


def test_only_injected_meta_tools_are_described() -> None:
    text = render_deferred_section(["tool_search"], [entry("web_search")])
    assert "tool_search({query?" in text
    assert "tool_invoke" not in text
    assert "tool_inspect" not in text
    assert "tool_exec" not in text
    assert render_deferred_section([], [entry("web_search")]) == ""


def test_cold_and_connecting_servers_are_shown_but_connected_and_disabled_are_not() -> None:
    statuses = {
        "mcp:a": NamespaceStatus("mcp:Alpha", "cold"),
        "mcp:b": NamespaceStatus("mcp:Beta", "connecting"),
        "mcp:c": NamespaceStatus("mcp:Gamma", "connected"),
        "mcp:d": NamespaceStatus("mcp:Delta", "disabled"),
    }
    text = render_deferred_section(META, [entry("web_search")], statuses=statuses)
    assert "- mcp:Alpha: server not connected yet; its tools may be missing" in text
    assert "- mcp:Beta: server connecting; its tools may be missing" in text
    assert "Gamma" not in text
    assert "Delta" not in text


def many_namespaces(count: int) -> list[ToolEntry]:
    return [
        entry(f"mcp__server{i:03d}__tool{j}", namespace=f"mcp:server{i:03d}")
        for i in range(count)
        for j in range(1 + i % 3)
    ]


def test_many_namespaces_drop_summaries_to_fit_the_budget() -> None:
    deferred = many_namespaces(20)
    text = render_deferred_section(META, deferred, budget=400)
    assert default_token_counter().count_text(text) <= 400
    assert (
        "\nMCP servers (namespace mcp:<name>): server000 (1), server001 (2), server002 (3), "
        in (text)
    )
    assert "tool0, tool1" not in text


def test_too_many_namespaces_keep_the_largest_and_point_to_tool_search() -> None:
    deferred = many_namespaces(70)
    statuses = {"mcp:dead": NamespaceStatus("mcp:Dead", "failed", "timeout")}
    text = render_deferred_section(META, deferred, statuses=statuses, budget=300)
    assert default_token_counter().count_text(text) <= 300
    assert "server002 (3)" in text
    assert "server000 (1)" not in text
    assert "more namespaces" in text
    assert "call tool_search with no query to list them all" in text
    assert "- mcp:Dead: server failing: timeout; its tools may be missing" in text


def test_with_tool_exec_the_section_says_how_to_call_tools_from_code() -> None:
    text = render_deferred_section([*META, "tool_exec"], [entry("web_search")])
    lines = text.splitlines()
    assert f"- {EXEC_PROMPT_LINE}" in lines
    assert "- tool_inspect({name}): a tool's signature (the Python function code calls)" in lines
    assert "JSDoc" not in text


def test_a_cached_server_is_not_flagged_and_a_failing_one_with_tools_says_they_may_be_stale() -> (
    None
):
    deferred = [gmail("send_message"), entry("web_search")]
    cached = {f"mcp:{GMAIL_ID}": NamespaceStatus("mcp:Gmail", "cached")}
    failing = {f"mcp:{GMAIL_ID}": NamespaceStatus("mcp:Gmail", "failed", "timeout")}

    quiet = render_deferred_section(META, deferred, statuses=cached)
    flagged = render_deferred_section(META, deferred, statuses=failing)

    assert "server" not in quiet.split("<namespaces>")[1]
    assert "- mcp:Gmail: server failing: timeout; its cached tools may be stale" in flagged
