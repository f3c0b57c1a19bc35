"""Who may use which tools: the ``[[auth.allow]]`` rules, decided for one principal.

No rule: every authenticated principal gets the whole profile. Any rule: deny by default, and
a tool is usable when some rule names the principal (its subject, ``group:NAME`` for one of its
groups, or ``*``), the tool's server (or ``*``) and the tool's own name (or ``*``). Built-in
tools (``web_search``, ``kb_search``, ...) belong to the server id :data:`BUILTIN_SERVER`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pegboard.core.entry import ToolEntry
from pegboard.core.principal import Principal
from pegboard.core.registry import RegistrySnapshot

BUILTIN_SERVER = "builtin"
META_NAMESPACE = "meta"
_MEMO_LIMIT = 65536
T = TypeVar("T")


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
        view = AccessViews(self).of(principal)
        return view is None or view.allows(server, tool)

    def allows_server(self, principal: Principal, server: str) -> bool:
        """Whether some rule gives the principal any tool of ``server`` (its resources and
        prompts are then visible too)."""
        view = AccessViews(self).of(principal)
        return view is None or view.allows_server(server)


def _named(value: str, names: Iterable[str]) -> bool:
    return any(name == "*" or name == value for name in names)


class AccessView:
    """What one class of principals may use: the rules that name them (principals named by
    the same rules see the same tools, so views are shared and their derived listings are
    cached, see :meth:`memo`). Meta-tools (``tool_search``, ...) are always usable: what they
    reach is narrowed to the view."""

    __slots__ = ("_memo", "_tools", "key", "rules")

    def __init__(self, rules: tuple[AccessRule, ...], key: tuple[int, ...]) -> None:
        self.rules = rules
        self.key = key  # the indexes of those rules in the policy
        self._tools: dict[tuple[str, str], bool] = {}
        self._memo: dict[object, tuple[object, object]] = {}

    def allows(self, server: str, tool: str) -> bool:
        found = self._tools.get((server, tool))
        if found is None:
            found = any(_named(server, r.servers) and _named(tool, r.tools) for r in self.rules)
            if len(self._tools) < _MEMO_LIMIT:
                self._tools[(server, tool)] = found
        return found

    def allows_entry(self, entry: ToolEntry) -> bool:
        """Whether the tool of ``entry`` may be used: an MCP tool by its server id and its
        own name (never the wire name, which a rename or the pre-hyphen scheme changes)."""
        if entry.namespace == META_NAMESPACE:
            return True
        if entry.source is not None:
            return self.allows(entry.source.server_id, entry.source.tool_name)
        return self.allows(BUILTIN_SERVER, entry.name)

    def allows_server(self, server: str) -> bool:
        """Whether some rule of the view gives any tool of ``server`` (its resources and
        prompts are then visible too)."""
        return any(_named(server, r.servers) for r in self.rules)

    def snapshot(self, snapshot: RegistrySnapshot) -> RegistrySnapshot:
        """``snapshot`` without the tools this view may not use (kept until it changes)."""

        def build() -> RegistrySnapshot:
            kept = {e.name: e for e in snapshot.entries() if self.allows_entry(e)}
            return RegistrySnapshot(kept, snapshot.version)

        return self.memo("snapshot", snapshot, build)

    def memo(self, purpose: object, source: object, build: Callable[[], T]) -> T:
        """``build()``, kept while ``source`` (a listing, a pool) is the same object: a
        principal's listing is derived once per change of the shared one, not per request."""
        kept = self._memo.get(purpose)
        if kept is not None and kept[0] is source:
            return kept[1]  # type: ignore[return-value]
        made = build()
        self._memo[purpose] = (source, made)
        return made


class AccessViews:
    """The :class:`AccessView` of each principal under one policy (None: the policy is open).

    A view is keyed by which rules name the principal, so their number is bounded by the
    config, not by the number of users."""

    def __init__(self, policy: AccessPolicy) -> None:
        self.policy = policy
        self._views: dict[tuple[int, ...], AccessView] = {}

    def of(self, principal: Principal) -> AccessView | None:
        rules = self.policy.rules
        if not rules:
            return None
        key = tuple(i for i, rule in enumerate(rules) if matches(principal, rule.subjects))
        view = self._views.get(key)
        if view is None:
            view = self._views[key] = AccessView(tuple(rules[i] for i in key), key)
        return view


def is_admin(principal: Principal, admins: Iterable[str]) -> bool:
    """Whether ``admins`` (``[auth] admins``: subjects, ``group:NAME`` or ``*``) names
    ``principal``. The anonymous principal is never an admin by a ``*``."""
    if principal.is_anonymous:
        return principal.subject in admins
    return matches(principal, admins)
