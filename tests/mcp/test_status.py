from pegboard import AssistantSettings
from pegboard.core.status import NamespaceStatus
from pegboard.mcp.status import ServerStatus, namespace_statuses

STATUSES = [
    ServerStatus("gh", "GitHub", "failed", error="server gh exited with code 1"),
    ServerStatus("fs", "Files", "connected"),
]


def test_statuses_are_keyed_by_namespace_and_labelled_by_display_name() -> None:
    assert namespace_statuses(STATUSES) == {
        "mcp:gh": NamespaceStatus("mcp:GitHub", "failed", "server GitHub exited with code 1"),
        "mcp:fs": NamespaceStatus("mcp:Files", "connected", None),
    }


def test_servers_the_profile_cannot_use_are_left_out() -> None:
    manual = AssistantSettings(mcp_mode="manual", mcp_server_ids=("fs",))
    disabled = AssistantSettings(mcp_mode="disabled", mcp_server_ids=("fs",))
    auto = AssistantSettings(mcp_mode="auto")

    assert list(namespace_statuses(STATUSES, manual)) == ["mcp:fs"]
    assert namespace_statuses(STATUSES, disabled) == {}
    assert list(namespace_statuses(STATUSES, auto)) == ["mcp:gh", "mcp:fs"]


def test_a_server_not_started_yet_but_listed_before_is_cached_and_one_never_listed_is_cold() -> (
    None
):
    statuses = [
        ServerStatus("a", "A", "cold", fetched_at=1.0, tool_count=3),
        ServerStatus("b", "B", "connecting", fetched_at=1.0, tool_count=3),
        ServerStatus("c", "C", "cold"),
        ServerStatus("d", "D", "connecting"),
    ]
    states = {ns: s.state for ns, s in namespace_statuses(statuses).items()}
    assert states == {"mcp:a": "cached", "mcp:b": "cached", "mcp:c": "cold", "mcp:d": "connecting"}
