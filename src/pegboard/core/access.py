"""Who may use which tools: the ``[[auth.allow]]`` rules, decided for one principal.

No rule: every authenticated principal gets the whole profile. Any rule: deny by default, and
a tool is usable when some rule names the principal (its subject, ``group:NAME`` for one of its
groups, or ``*``), the tool's server (or ``*``) and the tool's own name (or ``*``). Built-in
tools (``web_search``, ``kb_search``, ...) belong to the server id :data:`BUILTIN_SERVER`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pegboard.core.principal import Principal

BUILTIN_SERVER = "builtin"


def matches(principal: Principal, names: Iterable[str]) -> bool:
    """Whether any of ``names`` (a subject, ``group:NAME`` or ``*``) denotes ``principal``."""
    for name in names:
        if name == "*" or name == principal.subject:
            return True
        if name.startswith("group:") and name[len("group:") :] in principal.groups:
            return True
    return False


@dataclass(frozen=True)
class AccessRule:
    subjects: tuple[str, ...]
    servers: tuple[str, ...] = ("*",)
    tools: tuple[str, ...] = ("*",)


@dataclass(frozen=True)
class AccessPolicy:
    """The rules of ``[[auth.allow]]``; :meth:`open` when there are none."""

    rules: tuple[AccessRule, ...] = field(default_factory=tuple)

    @classmethod
    def from_rules(cls, rules: Sequence[object]) -> AccessPolicy:
        """From config rules (anything with ``subjects``, ``servers`` and ``tools`` lists)."""
        return cls(
            tuple(
                AccessRule(
                    tuple(getattr(r, "subjects")),  # noqa: B009 (duck-typed config rows)
                    tuple(getattr(r, "servers")),  # noqa: B009
                    tuple(getattr(r, "tools")),  # noqa: B009
                )
                for r in rules
            )
        )

    @property
    def open(self) -> bool:
        return not self.rules

    def allows_tool(self, principal: Principal, server: str, tool: str) -> bool:
        if self.open:
            return True
        return any(
            matches(principal, rule.subjects)
            and _named(server, rule.servers)
            and _named(tool, rule.tools)
            for rule in self.rules
        )

    def allows_server(self, principal: Principal, server: str) -> bool:
        """Whether some rule gives the principal any tool of ``server`` (its resources and
        prompts are then visible too)."""
        if self.open:
            return True
        return any(
            matches(principal, rule.subjects) and _named(server, rule.servers)
            for rule in self.rules
        )


def _named(value: str, names: Iterable[str]) -> bool:
    return any(name == "*" or name == value for name in names)
