"""Who may do what on a team gateway: ``[auth] admins`` and ``[[auth.allow]]``, for the admin
UI and any REST API (through :class:`~pegboard.service.Service`)."""

from __future__ import annotations

from pegboard.config import LoadedConfig
from pegboard.core.access import AccessPolicy, is_admin
from pegboard.core.principal import Principal


class AccessService:
    """Answers about principals from one config.

    - :meth:`is_admin`: may ``principal`` use the admin UI and decide the approvals others
      asked for (``[auth] admins`` names its subject or one of its groups as ``group:NAME``);
    - :meth:`may_use` / :meth:`may_see_server`: what ``[[auth.allow]]`` gives it (open: all).
    """

    def __init__(self, loaded: LoadedConfig) -> None:
        self._admins = tuple(loaded.config.auth.admins)
        self.policy = AccessPolicy.from_rules(loaded.config.auth.allow)

    @property
    def admins(self) -> tuple[str, ...]:
        return self._admins

    def is_admin(self, principal: Principal) -> bool:
        return is_admin(principal, self._admins)

    def may_use(self, principal: Principal, server: str, tool: str) -> bool:
        """Whether ``principal`` may use ``tool`` (its own name) of ``server`` (built-in tools:
        server ``builtin``)."""
        return self.policy.allows_tool(principal, server, tool)

    def may_see_server(self, principal: Principal, server: str) -> bool:
        return self.policy.allows_server(principal, server)
