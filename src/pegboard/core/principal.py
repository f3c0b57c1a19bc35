"""Who a call is made for: the principal (anonymous until an identity provider says more)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Principal:
    """The person or service a call runs for. ``subject`` is stable (an OAuth ``sub``, a user
    name); ``groups`` are what access rules match. Grants and audit records are keyed by it."""

    subject: str
    groups: frozenset[str] = field(default_factory=frozenset)

    @property
    def is_anonymous(self) -> bool:
        return self.subject == ANONYMOUS_SUBJECT


ANONYMOUS_SUBJECT = "anonymous"
ANONYMOUS = Principal(ANONYMOUS_SUBJECT)
"""The principal of every call until an identity provider (OAuth) names one."""
