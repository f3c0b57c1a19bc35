from pegboard.core.pystub import render_python_signature


def test_python_signature_has_keyword_only_parameters_required_first() -> None:
    schema = {
        "type": "object",
        "properties": {
            "b": {"type": "integer", "default": 0, "description": "Second addend."},
            "a": {"type": "integer", "description": "First addend.\nMore text."},
            "mode": {"enum": ["x", "y"]},
            "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
            "opt": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["a"],
        "$defs": {"tag": {"type": "string"}},
    }
    assert render_python_signature("mcp__notes__add", "Add two numbers.", schema, {}) == (
        "async def mcp__notes__add(*, a: int, b: int = 0, mode: Literal['x', 'y'] = None, "
        "opt: str | None = None, tags: list[str] = None) -> Any:\n"
        '    """Add two numbers.\n'
        "\n"
        "    a: First addend.\n"
        "    b: Second addend.\n"
        '    """'
    )


def test_python_signature_of_a_tool_without_parameters_or_description() -> None:
    assert render_python_signature("ping", "", {"type": "object"}) == "async def ping() -> Any: ..."
    assert render_python_signature("ping", 'Say """hi"""', {"type": "object"}, None) == (
        "async def ping() -> Any:\n    \"\"\"Say '''hi'''\"\"\""
    )
