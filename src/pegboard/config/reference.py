"""The configuration reference, generated from the model (the README embeds this text)."""

from __future__ import annotations

import json
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import AliasChoices, BaseModel

from pegboard.config.model import (
    GatewayConfig,
    KnowledgeBaseConfig,
    MetaConfig,
    ModelConfig,
    PegboardConfig,
    ProfileConfig,
    StoreConfig,
    WebFetchConfig,
    WebSearchProviderConfig,
)
from pegboard.config.server import ServerConfig

_TABLES: tuple[tuple[str, type[BaseModel]], ...] = (
    ("(top level)", PegboardConfig),
    ("[servers.<id>]", ServerConfig),
    ("[profiles.<name>]", ProfileConfig),
    ("[web_search.<name>]", WebSearchProviderConfig),
    ("[web_fetch]", WebFetchConfig),
    ("[models.<id>]", ModelConfig),
    ("[meta]", MetaConfig),
    ("[gateway]", GatewayConfig),
    ("[store]", StoreConfig),
    ("[kb.<name>]", KnowledgeBaseConfig),
)
_NESTED = {
    "servers",
    "profiles",
    "web_search",
    "web_fetch",
    "models",
    "meta",
    "gateway",
    "store",
    "kb",
}


def _type_name(annotation: Any) -> str:
    """``str or None``, ``"a" / "b"``, ``list[str]``: short, for a Markdown cell."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return " / ".join(f'"{a}"' for a in args)
    if origin in (Union, UnionType):
        return " or ".join(_type_name(a) for a in args)
    if annotation is type(None):
        return "None"
    if origin in (tuple, frozenset):  # a TOML array either way
        return f"list[{_type_name(args[0])}]"
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type_name(a) for a in args)}]"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: Any) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
        return "`[]`" if value == [] else "`{}`" if value == {} else "(table)"
    if field.default in ((), frozenset()):
        return "`[]`"
    if field.is_required():
        return "required"
    if field.default is None:
        return "unset"
    return f"`{json.dumps(field.default)}`"


def render_reference() -> str:
    """Markdown tables, one per TOML table, listing key, type, default and meaning."""
    out: list[str] = []
    for title, model in _TABLES:
        out.append(f"#### `{title}`\n")
        out.append("| key | type | default | meaning |")
        out.append("|---|---|---|---|")
        for key, field in model.model_fields.items():
            if (model is PegboardConfig and key in _NESTED) or (
                model is ServerConfig and key == "id"
            ):
                continue  # nested tables have their own; a server's id is its table name
            alias = field.validation_alias
            if isinstance(alias, AliasChoices):  # the TOML key (``type`` for ``transport``)
                key = str(alias.choices[0])
            typ = _type_name(field.annotation)
            desc = (field.description or "").replace("|", "/")
            out.append(f"| `{key}` | `{typ}` | {_default(field)} | {desc} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


BEGIN_MARK = "<!-- config-reference:begin -->\n"
END_MARK = "<!-- config-reference:end -->"


def embed_reference(document: str) -> str:
    """``document`` with the text between the reference markers regenerated."""
    head, found, rest = document.partition(BEGIN_MARK)
    if not found or END_MARK not in rest:
        raise ValueError(f"the document has no {BEGIN_MARK.strip()} ... {END_MARK} block")
    tail = rest.split(END_MARK, 1)[1]
    return f"{head}{BEGIN_MARK}\n{render_reference()}\n{END_MARK}{tail}"
