"""One config's services, sharing one runtime built on first use by a factory."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from pegboard.config import LoadedConfig

if TYPE_CHECKING:
    from pegboard.runtime import RuntimeOptions, ToolRuntime
    from pegboard.service.approvals import ApprovalService
    from pegboard.service.audit import AuditService
    from pegboard.service.servers import ServerService
    from pegboard.service.tools import ToolService
    from pegboard.service.trust import TrustService

RuntimeFactory = Callable[[LoadedConfig, "RuntimeOptions"], "ToolRuntime"]


def default_runtime(loaded: LoadedConfig, options: RuntimeOptions) -> ToolRuntime:
    """A runtime with the default components (:func:`pegboard.runtime.default_components`)."""
    from pegboard.runtime import ToolRuntime  # lazy: the catalog needs the SDK

    return ToolRuntime(loaded, options)


class Service:
    """The services of ``loaded`` (its runtime made by ``factory`` with ``options``)."""

    def __init__(
        self,
        loaded: LoadedConfig,
        options: RuntimeOptions | None = None,
        *,
        factory: RuntimeFactory = default_runtime,
    ) -> None:
        self._loaded = loaded
        self._options = options
        self._factory = factory

    @property
    def loaded(self) -> LoadedConfig:
        """The config as the runtime last applied it (a served config changes while it runs),
        or as loaded when no runtime was built."""
        runtime = self.__dict__.get("runtime")
        return runtime.loaded if runtime is not None else self._loaded

    @classmethod
    def of(cls, runtime: ToolRuntime) -> Service:
        """The services over a runtime that already exists (``pegboard serve``, chat)."""
        made = cls(runtime.loaded, runtime.options)
        made.__dict__["runtime"] = runtime
        return made

    def with_options(self, options: RuntimeOptions) -> Service:
        """The same config's services over a new runtime made with ``options``."""
        return Service(self.loaded, options, factory=self._factory)

    @cached_property
    def runtime(self) -> ToolRuntime:
        from pegboard.runtime import RuntimeOptions

        return self._factory(self.loaded, self._options or RuntimeOptions())

    @cached_property
    def servers(self) -> ServerService:
        from pegboard.service.servers import ServerService

        return ServerService(self)

    @cached_property
    def tools(self) -> ToolService:
        from pegboard.service.tools import ToolService

        return ToolService(self)

    @cached_property
    def trust(self) -> TrustService:
        from pegboard.service.trust import TrustService

        return TrustService(self)

    @cached_property
    def approvals(self) -> ApprovalService:
        from pegboard.service.approvals import ApprovalService

        return ApprovalService(self)

    @cached_property
    def audit(self) -> AuditService:
        from pegboard.service.audit import AuditService

        return AuditService(self.loaded)

    def close(self) -> None:
        """Close the runtime's stores if it was built (commands that never ran it)."""
        runtime = self.__dict__.get("runtime")
        if runtime is not None:
            runtime.close()
