"""The key-less default provider: the ``ddgs`` metasearch library (``pegboard[web]``)."""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from pegboard.builtin.web_search import SearchResult
from pegboard.errors import OptionalDependencyMissing, ToolExecutionError

# ddgs's message when no engine returned a result. It also covers engines that answered with
# an error status (ddgs drops those silently), so it is reported as a failure, not as [].
_NOTHING_FOUND = "No results found."


class DdgsProvider:
    """Searches through ``ddgs.DDGS().text`` (synchronous: run in a worker thread).

    ``backend`` is ddgs's engine list ("auto" lets it pick and fall back between engines).
    """

    def __init__(self, name: str, *, timeout: float = 15.0, backend: str = "auto") -> None:
        self.name = name
        self._timeout = timeout
        self._backend = backend

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        try:
            from ddgs import DDGS
            from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException
        except ImportError as exc:
            raise OptionalDependencyMissing("web_search without a provider", "web") from exc

        def run() -> list[dict[str, Any]]:
            client = DDGS(timeout=max(1, round(self._timeout)))
            return client.text(query, max_results=max_results, backend=self._backend)

        try:
            # The worker thread is abandoned on cancellation; ddgs's own timeout ends it.
            with anyio.fail_after(self._timeout + 1):
                rows = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except RatelimitException:
            raise self._error("is rate-limited; wait a minute before searching again") from None
        except (TimeoutException, TimeoutError):
            raise self._error(f"did not answer within {self._timeout:g} s; try again") from None
        except DDGSException as exc:
            if str(exc) == _NOTHING_FOUND:
                raise self._error(
                    "returned no results; its engines may be refusing requests (ddgs cannot "
                    "tell). Rephrase the query, or configure a searxng, brave or tavily provider"
                ) from None
            raise self._error(f"failed: {exc}") from None
        return [
            SearchResult(str(r.get("title", "")), str(r.get("href", "")), str(r.get("body", "")))
            for r in rows
        ]

    def _error(self, what: str) -> ToolExecutionError:
        return ToolExecutionError(f"web_search provider {self.name!r} (ddgs) {what}")
