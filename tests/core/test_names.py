import random

from hypothesis import given, settings
from hypothesis import strategies as st

from pegboard.core.entry import ToolEntry, ToolSource
from pegboard.core.names import (
    BUILTIN_TOOL_NAMES,
    MAX_WIRE_NAME_LENGTH,
    META_TOOL_NAMES,
    WIRE_NAME_RE,
    identity_digest,
    is_valid_wire_name,
    legacy_mcp_tool_name,
    mcp_tool_name,
    to_camel_case,
)
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import AssistantSettings
from pegboard.core.tool import Tool

CJK = "查询天气报销电梯数据库文件搜索邮件日历"
EMOJI = "🔍📅✉️🚀🧪"
ASCII = "abcXYZ019"
SEPARATORS = "-_. /:@"


def random_name(rng: random.Random) -> str:
    kind = rng.randrange(6)
    if kind == 0:  # a plain identifier, kept verbatim
        return rng.choice(["search", "create_issue", "list", "getWeather"]) + str(rng.randrange(50))
    if kind == 1:  # colliding slugs: all camelCase to myTool<n>
        n = rng.randrange(30)
        return rng.choice(
            [f"my-tool{n}", f"my_tool{n}", f"my.tool{n}", f"My Tool{n}", f"myTool{n}"]
        )
    if kind == 2:
        return "".join(rng.choices(CJK, k=rng.randint(1, 8)))
    if kind == 3:
        return "".join(rng.choices(EMOJI + ASCII, k=rng.randint(1, 10)))
    if kind == 4:  # 200 characters
        return "".join(rng.choices(ASCII + SEPARATORS, k=200))
    return "".join(rng.choices(ASCII + SEPARATORS + CJK + EMOJI, k=rng.randint(0, 30)))


@settings(max_examples=1, deadline=None)
@given(rng=st.randoms(use_true_random=True))
def test_ten_thousand_random_pairs_are_valid_distinct_short_and_map_back(
    rng: random.Random,
) -> None:
    servers = [random_name(rng) for _ in range(60)] + ["github", "gmail-prod", "gmail_prod"]
    pairs: set[tuple[str, str]] = set()
    while len(pairs) < 10_000:
        pairs.add((rng.choice(servers), random_name(rng)))

    registry = ToolRegistry()
    wire: dict[str, tuple[str, str]] = {}
    for server_id, tool_name in sorted(pairs):
        name = mcp_tool_name(server_id, None, tool_name)
        assert WIRE_NAME_RE.match(name), name
        assert len(name) <= MAX_WIRE_NAME_LENGTH, name
        assert name not in wire, (name, wire.get(name), (server_id, tool_name))
        wire[name] = (server_id, tool_name)
    registry.register_many(
        ToolEntry(name, f"mcp:{s}", Tool("t"), source=ToolSource(s, t))
        for name, (s, t) in wire.items()
    )
    assert len(registry) == 10_000
    assert registry.collisions == []
    snapshot = registry.snapshot()
    for name, (server_id, tool_name) in wire.items():
        assert registry.resolve_source(name) == ToolSource(server_id, tool_name)
        assert snapshot.name_for(ToolSource(server_id, tool_name)) == name


names_text = st.one_of(
    st.text(max_size=220),
    st.text(alphabet=CJK + EMOJI + ASCII + SEPARATORS, max_size=80),
    st.sampled_from(["github", "create_issue", "a_b", "a", "b_c", "x1"]),
)


@settings(max_examples=200, deadline=None)
@given(server=names_text, tool=names_text, other_server=names_text, other_tool=names_text)
def test_any_two_different_pairs_get_different_valid_names(
    server: str, tool: str, other_server: str, other_tool: str
) -> None:
    name = mcp_tool_name(server, None, tool)
    other = mcp_tool_name(other_server, None, other_tool)
    assert is_valid_wire_name(name)
    assert is_valid_wire_name(other)
    assert name == mcp_tool_name(server, "renamed display name", tool)
    assert (name == other) == ((server, tool) == (other_server, other_tool))


def test_pairs_that_differ_only_by_where_a_nul_sits_get_different_names() -> None:
    # Found by the property test above: "\0" + NUL + "" and "" + NUL + "\0" hashed alike.
    assert mcp_tool_name("\x00", None, "") != mcp_tool_name("", None, "\x00")
    assert mcp_tool_name("a\x00", None, "b") != mcp_tool_name("a", None, "\x00b")


def test_identifier_safe_segments_are_kept_verbatim() -> None:
    assert mcp_tool_name("github", "GitHub", "create_issue") == "mcp__github__create_issue"


def test_hyphens_are_kept_verbatim_as_openai_and_anthropic_allow() -> None:
    assert mcp_tool_name("my-server", None, "get-weather") == "mcp__my-server__get-weather"
    assert mcp_tool_name("files", None, "read-file") != mcp_tool_name("files", None, "read_file")


def test_unsafe_chinese_and_colliding_names_get_a_stable_hash_suffix() -> None:
    spaced = mcp_tool_name("files", None, "read file")
    dotted = mcp_tool_name("files", None, "read.file")
    assert spaced.startswith("mcp__files__readFile__")
    assert dotted.startswith("mcp__files__readFile__")
    assert spaced != dotted
    reimbursement = mcp_tool_name("mysql", None, "mysql_报销")
    elevator = mcp_tool_name("mysql", None, "mysql_电梯")
    assert reimbursement != elevator
    assert reimbursement.startswith("mcp__mysql__mysql__")
    assert mcp_tool_name("db-1", "Old name", "查询") == mcp_tool_name("db-1", "New name", "查询")
    assert mcp_tool_name("srv", None, "") == "mcp__srv__tool__" + identity_digest("srv", "")


def test_camel_case_drops_separators_and_non_ascii() -> None:
    assert to_camel_case("Get-Weather forecast.v2") == "getWeatherForecastV2"
    assert to_camel_case("天气") == ""


def test_builtin_and_meta_names_are_valid_wire_names() -> None:
    assert all(is_valid_wire_name(n) for n in BUILTIN_TOOL_NAMES | META_TOOL_NAMES)
    assert is_valid_wire_name("mcp__my-server__get-weather")
    assert not is_valid_wire_name("a tool")
    assert not is_valid_wire_name("a.b")
    assert not is_valid_wire_name("")
    assert not is_valid_wire_name("a" * 65)


def test_the_legacy_name_of_a_hyphenated_tool_is_its_old_camel_case_suffixed_name() -> None:
    legacy = legacy_mcp_tool_name("my-server", "get-weather")
    assert legacy == "mcp__myServer__getWeather__" + identity_digest("my-server", "get-weather")
    assert legacy_mcp_tool_name("github", "create_issue") == "mcp__github__create_issue"
    assert legacy_mcp_tool_name("db", "查询") == mcp_tool_name("db", None, "查询")


def test_the_registry_resolves_a_legacy_name_to_the_renamed_tool() -> None:
    source = ToolSource("my-server", "get-weather")
    registry = ToolRegistry(
        [ToolEntry("mcp__my-server__get-weather", "mcp:my-server", Tool("t"), source=source)]
    )
    legacy = legacy_mcp_tool_name("my-server", "get-weather")

    entry = registry.get_by_name(legacy)

    assert entry is not None
    assert entry.name == "mcp__my-server__get-weather"
    assert registry.snapshot().canonical(legacy) == "mcp__my-server__get-weather"
    assert registry.resolve_source(legacy) == source
    assert registry.get_by_name("mcp__myServer__getWeather__0000000000000000") is None


def test_config_lists_that_name_the_legacy_wire_name_still_match() -> None:
    legacy = legacy_mcp_tool_name("my-server", "get-weather")
    settings = AssistantSettings(disabled_tools=frozenset({legacy}))

    assert settings.is_tool_disabled("mcp__my-server__get-weather", "my-server", "get-weather")
    assert not settings.is_tool_disabled("mcp__my-server__other", "my-server", "other")


def test_the_mcp_namespace_is_built_and_read_by_one_helper_pair() -> None:
    from pegboard.core.names import is_mcp_namespace, mcp_namespace, strip_mcp_namespace

    assert mcp_namespace("github") == "mcp:github"
    assert strip_mcp_namespace("mcp:github") == "github"
    assert strip_mcp_namespace("web") == "web"
    assert (is_mcp_namespace("mcp:github"), is_mcp_namespace("web")) == (True, False)


def test_python_aliases_keep_identifiers_and_derive_collision_free_ones() -> None:
    from pegboard.core.names import python_aliases

    names = ["mcp__a__b", "get-env", "get_env", "len", "class", "工具", "9lives", "gather"]
    assert python_aliases(names) == {
        "mcp__a__b": "mcp__a__b",
        "get_env": "get_env",
        "get-env": "get_env_e42fa272",
        "len": "len_71fa9faa",
        "class": "class_0889113e",
        "工具": "tool_5ca6730d",
        "9lives": "t_9lives_bc867356",
        "gather": "gather_e9da0bd7",
    }


def test_a_python_alias_that_would_collide_is_lengthened() -> None:
    from pegboard.core.names import python_aliases

    taken = python_aliases(["get-env"])["get-env"]  # get_env_e42fa272
    aliases = python_aliases(["get-env", taken])
    assert aliases[taken] == taken
    assert aliases["get-env"] == "get_env_e42fa272d55e"
    assert len(set(aliases.values())) == 2
