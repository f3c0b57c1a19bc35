"""The model-facing definition of a tool: frozen, hashable, apart from its execution."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

# Built once: json.dumps with any keyword builds an encoder per call (~1-2 us of a proxied
# call's each); an encoder keeps no state between calls.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
)
_WIRE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
# The C encoder JSONEncoder.encode makes for each value (after two Python frames, encode and
# iterencode, and a float formatter the C encoder never calls), made here directly: the same
# options, so the same text and the same errors. Kept per thread (its circular-reference
# markers are empty again after each value: a thread of its own, so no other encode can see
# them part-way) and made anew after an error, whose markers may keep entries (making one
# was ~25% of a small value's encode, three a proxied call).
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)


def _encode_with(encoder: json.JSONEncoder, name: str, doc: str) -> Callable[[Any], str]:
    make = _c_make_encoder
    if make is None or encoder.ensure_ascii or encoder.indent is not None:
        return encoder.encode  # no C accelerator, or options these arguments do not carry
    options = (
        encoder.default,
        json.encoder.encode_basestring,  # ensure_ascii=False
        None,  # indent
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )
    join, circular = "".join, encoder.check_circular
    kept = threading.local()  # this thread's encoder, dropped after an error

    def encode(value: Any) -> str:
        made = getattr(kept, "encoder", None)
        if made is None:
            made = kept.encoder = make({} if circular else None, *options)
        try:
            return join(made(value, 0))
        except BaseException:
            kept.encoder = None  # its markers may keep entries of the failed value
            raise

    encode.__name__ = encode.__qualname__ = name
    encode.__doc__ = doc
    return encode


canonical_json = _encode_with(
    _CANONICAL,
    "canonical_json",
    "Deterministic JSON (sorted keys, no spaces, UTF-8 kept) for hashing and token counts.",
)
wire_json = _encode_with(
    _WIRE,
    "wire_json",
    """Compact JSON as MCP messages carry it (no spaces, UTF-8 kept, keys in their order):
    ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)``, so
    ``ValueError`` for NaN or infinity, ``TypeError`` for what JSON has no form for.""",
)

# what json.loads scans with (its scanner, set on the decoder at run time: typeshed omits it)
_scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_JSON_SPACE = " \t\n\r"


def wire_loads(line: bytes) -> Any:
    """``json.loads(line)`` (the same value, the same errors) for a JSON-RPC line, with the
    common line (an object from its first byte, UTF-8) read by the decoder's scanner at once
    instead of through ``json.loads``' three Python frames; anything else goes to
    ``json.loads`` itself (a BOM, another encoding, surrogates, an error to report)."""
    if line[:1] == b"{":
        try:
            text = line.decode()
            value, end = _scan_once(text, 0)
        except (UnicodeDecodeError, StopIteration, ValueError, RecursionError):
            return json.loads(line)
        if end == len(text) or not text[end:].strip(_JSON_SPACE):
            return value
    return json.loads(line)


@dataclass(frozen=True, eq=False)
class ToolDefinition:
    """What a model is told about one tool: name, description, schemas, annotations, strict.

    Equal definitions have equal :attr:`hash` (every field counts, annotations included: a
    server that flips ``destructiveHint`` changes the definition, and so voids approvals
    bound to the old one).
    """

    name: str
    description: str
    input_schema: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    strict: bool | None = None
    title: str | None = None

    @cached_property
    def hash(self) -> str:
        """Stable sha256 over every field."""
        payload = canonical_json(
            {
                "name": self.name,
                "description": self.description,
                "input_schema": self.input_schema,
                "output_schema": self.output_schema,
                "annotations": self.annotations,
                "strict": self.strict,
                "title": self.title,
            }
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def stub(self) -> str:
        """The JSDoc signature stub ``tool_inspect`` shows (see :mod:`pegboard.core.stub`)."""
        from pegboard.core.stub import render_stub

        return render_stub(self)

    @property
    def token_text(self) -> str:
        """The text this definition is counted as (see :mod:`pegboard.core.tokens`): name,
        description and schema JSON; name and description alone if the schema cannot be
        serialised. Made when asked, not kept: the counter remembers each entry's count, and
        a kept copy of every schema's JSON would be 0.5 KB per tool for the process's life."""
        try:
            schema_json = canonical_json(self.input_schema)
        except (TypeError, ValueError, RecursionError):
            return f"{self.name}\n{self.description}"
        return f"{self.name}\n{self.description}\n{schema_json}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolDefinition) and other.hash == self.hash

    def __hash__(self) -> int:
        return hash(self.hash)
