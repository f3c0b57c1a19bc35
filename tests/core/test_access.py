"""``[[auth.allow]]``: deny by default once a rule exists; subjects, groups, servers, tools."""

from __future__ import annotations

from pegboard.config.model import PegboardConfig
from pegboard.core.access import AccessPolicy
from pegboard.core.principal import ANONYMOUS as ANONYMOUS_PRINCIPAL
from pegboard.core.principal import Principal

ALICE = Principal("alice", frozenset({"ops"}))
BOB = Principal("bob", frozenset({"dev"}))


def policy(*rules: dict[str, list[str]]) -> AccessPolicy:
    config = PegboardConfig.model_validate(
        {"auth": {"issuer": "https://idp", "audience": "https://gw/mcp", "allow": list(rules)}}
    )
    return AccessPolicy.from_rules(config.auth.allow)


def test_without_rules_everyone_gets_everything() -> None:
    open_policy = policy()
    assert open_policy.open
    assert open_policy.allows_tool(ANONYMOUS_PRINCIPAL, "github", "delete_repo")
    assert open_policy.allows_server(BOB, "github")


def test_with_a_rule_everything_else_is_denied() -> None:
    rules = policy({"subjects": ["group:ops"], "servers": ["github"], "tools": ["list_issues"]})
    assert rules.allows_tool(ALICE, "github", "list_issues")
    assert not rules.allows_tool(ALICE, "github", "delete_repo")
    assert not rules.allows_tool(ALICE, "time", "get_current_time")
    assert not rules.allows_tool(BOB, "github", "list_issues")
    assert not rules.allows_tool(ANONYMOUS_PRINCIPAL, "github", "list_issues")
    assert rules.allows_server(ALICE, "github")
    assert not rules.allows_server(ALICE, "time")
    assert not rules.allows_server(BOB, "github")


def test_subjects_groups_and_wildcards_each_match_alone() -> None:
    rules = policy(
        {"subjects": ["bob"], "servers": ["time"]},
        {"subjects": ["*"], "servers": ["builtin"], "tools": ["kb_search"]},
    )
    assert rules.allows_tool(BOB, "time", "anything")
    assert not rules.allows_tool(ALICE, "time", "anything")
    assert rules.allows_tool(ALICE, "builtin", "kb_search")
    assert not rules.allows_tool(ALICE, "builtin", "web_search")
    # A group name is not a subject, and a subject is not a group.
    assert not policy({"subjects": ["group:alice"]}).allows_tool(ALICE, "s", "t")
    assert not policy({"subjects": ["ops"]}).allows_tool(ALICE, "s", "t")
    assert policy({"subjects": ["group:ops"]}).allows_tool(ALICE, "s", "t")


def test_names_match_exactly_not_by_prefix_or_case() -> None:
    rules = policy({"subjects": ["alice"], "servers": ["git"], "tools": ["status"]})
    assert not rules.allows_tool(Principal("Alice"), "git", "status")
    assert not rules.allows_tool(Principal("alice2"), "git", "status")
    assert not rules.allows_tool(ALICE, "github", "status")
    assert not rules.allows_tool(ALICE, "git", "status2")
    assert not rules.allows_tool(ALICE, "git", "Status")


def test_principals_named_by_the_same_rules_share_one_view_and_its_listings() -> None:
    from pegboard.core.access import AccessViews

    views = AccessViews(policy({"subjects": ["group:ops"]}, {"subjects": ["bob"]}))
    carol = Principal("carol", frozenset({"ops"}))
    assert views.of(ALICE) is views.of(carol)
    assert views.of(BOB) is not views.of(ALICE)
    assert views.of(Principal("nobody")) is views.of(ANONYMOUS_PRINCIPAL)
    assert AccessViews(policy()).of(ALICE) is None  # open: nothing to filter
    view = views.of(ALICE)
    assert view is not None
    source = object()
    built: list[int] = []
    for _ in range(3):
        view.memo("listing", source, lambda: built.append(1) or len(built))
    assert built == [1]  # derived once per change of the shared listing
    view.memo("listing", object(), lambda: built.append(1) or len(built))
    assert built == [1, 1]


def test_admins_are_subjects_or_groups_and_never_the_anonymous_by_a_star() -> None:
    from pegboard.core.access import is_admin

    assert is_admin(ALICE, ["group:ops"])
    assert is_admin(BOB, ["bob"])
    assert not is_admin(BOB, ["group:ops", "alice"])
    assert not is_admin(Principal("Bob", frozenset({"dev"})), ["bob"])
    assert is_admin(BOB, ["*"])
    assert not is_admin(ANONYMOUS_PRINCIPAL, ["*"])
