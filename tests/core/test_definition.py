from pegboard import Tool, ToolDefinition, ToolEntry

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def test_the_hash_is_stable_and_changes_with_every_model_facing_field() -> None:
    base = ToolDefinition("t", "d", SCHEMA)
    reordered = ToolDefinition(
        "t", "d", {"properties": {"q": {"type": "string"}}, "type": "object"}
    )
    variants = {
        ToolDefinition("u", "d", SCHEMA).hash,
        ToolDefinition("t", "e", SCHEMA).hash,
        ToolDefinition("t", "d", {"type": "object"}).hash,
        ToolDefinition("t", "d", SCHEMA, output_schema={"type": "string"}).hash,
        ToolDefinition("t", "d", SCHEMA, annotations={"destructiveHint": True}).hash,
        ToolDefinition("t", "d", SCHEMA, strict=True).hash,
        ToolDefinition("t", "d", SCHEMA, title="T").hash,
    }

    assert base.hash == reordered.hash
    assert base == reordered
    assert len({base, reordered}) == 1
    assert len(base.hash) == 64
    assert base.hash not in variants
    assert len(variants) == 7


def test_an_entry_gives_its_definition_under_its_wire_name() -> None:
    tool = Tool(description="Find things.", input_schema=SCHEMA, annotations={"readOnlyHint": True})
    entry = ToolEntry("find", "user", tool)

    assert entry.definition == ToolDefinition(
        "find", "Find things.", SCHEMA, annotations={"readOnlyHint": True}
    )
    assert entry.definition_hash == entry.definition.hash


def test_the_stub_and_the_token_text_come_from_the_definition() -> None:
    definition = ToolDefinition("find", "Find things.", SCHEMA)

    assert definition.stub() == (
        "/**\n"
        " * Find things.\n"
        " *\n"
        " * @param {Object} params - Parameters\n"
        " * @param {string} [params.q]\n"
        " */\n"
        "function find(params) {}"
    )
    assert definition.token_text == (
        'find\nFind things.\n{"properties":{"q":{"type":"string"}},"type":"object"}'
    )
