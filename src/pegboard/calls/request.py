"""What a human is asked to approve, and the answers they can give."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from pegboard.core.definition import canonical_json

Decision: TypeAlias = Literal["deny", "allow_once", "allow_session", "allow_always"]
"""``allow_once`` covers this one call; ``allow_session`` repeats of the same call (same
definition hash and arguments) for the rest of the session; ``allow_always`` the same for every
session of the same principal (as long as the grant store keeps it)."""

DECISIONS: tuple[Decision, ...] = ("deny", "allow_once", "allow_session", "allow_always")


def arguments_fingerprint(args: Mapping[str, Any]) -> str:
    """A stable digest of call arguments (key order does not matter)."""
    value = args if type(args) is dict else dict(args)  # the encoder writes dicts as objects
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What a human is asked to approve: the real (inner) tool and its arguments."""

    tool_name: str
    namespace_label: str
    description: str
    arguments: Mapping[str, Any]
    definition_hash: str
    call_id: str
    via: str

    @property
    def arguments_hash(self) -> str:
        return arguments_fingerprint(self.arguments)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.tool_name, self.definition_hash, self.arguments_hash)

    def to_json(self) -> dict[str, Any]:
        return {
            "tool_name": self.tool_name,
            "namespace_label": self.namespace_label,
            "description": self.description,
            "arguments": dict(self.arguments),
            "definition_hash": self.definition_hash,
            "call_id": self.call_id,
            "via": self.via,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ApprovalRequest:
        return cls(
            tool_name=str(data["tool_name"]),
            namespace_label=str(data["namespace_label"]),
            description=str(data["description"]),
            arguments=dict(data["arguments"]),
            definition_hash=str(data["definition_hash"]),
            call_id=str(data["call_id"]),
            via=str(data["via"]),
        )
