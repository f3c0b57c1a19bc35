"""Prometheus metrics of a gateway, at ``/metrics`` beside the MCP endpoint.

Counters follow the event bus (a finished call, an MCP request), with no lock taken per event:
an event adds to plain per-label-set tallies on the event loop's thread (every publisher of
these events runs there), which reach prometheus_client's counters and histogram when
scraped (:meth:`GatewayMetrics.exposition`) or, for one histogram's durations, every
:data:`HELD` of them; the server states, cached
tools and the approvals (pending, and decided by decision) are read when scraped, the
approvals from the pending-approval store: so every decision counts, whoever took it (a
terminal prompt, an MCP client's form or round, the admin page, ``pegboard approvals`` in
another process), and a restart loses none. With a team store every replica reports the same
store-wide approval figures (take the max across replicas, not the sum). Every label set is
bounded: tool names only as the registry knows them (else ``unknown``), servers as configured,
routes and outcomes as the call path names them, MCP methods from the protocol's list (else
``other``). No label ever names a principal, a session or an argument.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pegboard.core.events import CallFinished, EventBus, McpRequestHandled

if TYPE_CHECKING:
    from pegboard.service import Service

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
SEARCH_TOOL = "tool_search"
INVOKE_ROUTE = "tool_invoke"
SESSIONS_KEPT = 4096  # sessions whose last search is remembered (oldest forgotten first)
MCP_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "server/discover",
        "subscriptions/listen",
        "input/response",
        "notifications/initialized",
        "notifications/cancelled",
    }
)
META_TOOLS = frozenset({"tool_search", "tool_inspect", "tool_invoke", "tool_exec"})
APPROVAL_OUTCOMES = frozenset({"allow_once", "allow_session", "allow_always", "deny", "expired"})
OUTCOME_KEPT = 40  # distinct outcomes (error class names) before the rest count as "other"
HELD = 256  # durations of one label set held before they reach the histogram
LABELS_KEPT = 4096  # (tool, route, outcome) whose label sets are kept (a client names tools)


class GatewayMetrics:
    """The metrics of one gateway process, in a registry of their own."""

    def __init__(self, service: Service, events: EventBus) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self._service = service
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.calls = Counter(
            "pegboard_tool_calls",
            "Tool calls by server, tool, route and outcome.",
            ["server", "tool", "route", "outcome"],
            registry=r,
        )
        self.duration = Histogram(
            "pegboard_tool_call_duration_seconds",
            "Tool call duration by server and route.",
            ["server", "route"],
            registry=r,
        )
        self.searches = Counter("pegboard_tool_searches", "tool_search calls.", registry=r)
        self.invokes = Counter(
            "pegboard_tool_invokes",
            "Calls through tool_invoke, by whether a tool_search of the same session came before.",
            ["after_search"],
            registry=r,
        )
        self._approvals = _ApprovalCollector()
        r.register(self._approvals)
        self.requests = Counter(
            "pegboard_mcp_requests",
            "MCP requests by method and protocol era.",
            ["method", "era"],
            registry=r,
        )
        r.register(_ServerCollector(service))
        self._searched: OrderedDict[str, None] = OrderedDict()
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self._outcomes: set[str] = set()
        # A call's (tool, route, outcome) -> its counter and histogram children: which server
        # a tool is on is the registry's, so the table holds for one registry snapshot.
        self._labels: dict[tuple[str, str, str], tuple[Any, Any]] = {}
        self._labelled: object = None  # the snapshot _labels was made under
        self._requests: dict[tuple[str, str], Any] = {}  # (method, era) -> counter child
        self._counted: dict[Any, int] = {}  # counter child -> increments not added yet
        self._timed: dict[Any, list[float]] = {}  # histogram child -> durations not observed
        self._unsubscribe = [
            events.subscribe(CallFinished, self._on_call),
            events.subscribe(McpRequestHandled, self._on_request),
        ]

    def close(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()

    async def exposition(self) -> bytes:
        """The text format a Prometheus server scrapes (the approvals read now)."""
        from prometheus_client import generate_latest

        approvals = self._service.approvals
        self._approvals.pending = await approvals.count_pending()
        self._approvals.decided = await approvals.counts()
        self.flush()
        return bytes(generate_latest(self.registry))

    def flush(self) -> None:
        """Add the tallies kept since the last flush to prometheus_client's metrics."""
        counted, self._counted = self._counted, {}
        for child, count in counted.items():
            child.inc(count)
        timed, self._timed = self._timed, {}
        for child, durations in timed.items():
            for duration in durations:
                child.observe(duration)

    # -- events ------------------------------------------------------------------------------
    def _on_call(self, event: CallFinished) -> None:
        record = event.record
        tool, route = str(record.tool), str(record.via)
        key = (tool, route, str(record.outcome))
        snapshot = self._service.runtime.registry.snapshot()
        if snapshot is not self._labelled:
            self._labels, self._labelled = {}, snapshot
        children = self._labels.get(key)
        if children is None:
            children = self._children_of(*key)
        counter, histogram = children
        counted = self._counted
        counted[counter] = counted.get(counter, 0) + 1
        durations = self._timed.get(histogram)
        if durations is None:
            durations = self._timed[histogram] = []
        durations.append(float(record.duration))
        if len(durations) >= HELD:
            del self._timed[histogram]
            for duration in durations:
                histogram.observe(duration)
        if tool == SEARCH_TOOL:
            session = str(record.session_id or "")
            self.searches.inc()
            self._searched[session] = None
            self._searched.move_to_end(session)
            while len(self._searched) > SESSIONS_KEPT:
                self._searched.popitem(last=False)
        elif route == INVOKE_ROUTE:
            session = str(record.session_id or "")
            self.invokes.labels("yes" if session in self._searched else "no").inc()

    def _children_of(self, tool: str, route: str, outcome: str) -> tuple[Any, Any]:
        server = self._server_of(tool)
        known = tool if server != "unknown" else "unknown"
        counter = self._child(self.calls, server, known, route, self._outcome(outcome))
        children = (counter, self._child(self.duration, server, route))
        if len(self._labels) < LABELS_KEPT:
            self._labels[(tool, route, outcome)] = children
        return children

    def _on_request(self, event: McpRequestHandled) -> None:
        key = (event.method, event.era)
        child = self._requests.get(key)
        if child is None:
            method = event.method if event.method in MCP_METHODS else "other"
            child = self._child(self.requests, method, event.era)
            if len(self._requests) < LABELS_KEPT:
                self._requests[key] = child
        counted = self._counted
        counted[child] = counted.get(child, 0) + 1

    def _child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, kept: prometheus_client's ``labels`` takes a lock and
        builds its key on every call (three per HTTP call, ~1% of its CPU). A child is never
        removed from these metrics, so a kept one is the one ``labels`` would return."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def _server_of(self, tool: str) -> str:
        if tool in META_TOOLS:
            return "meta"
        entry = self._service.runtime.registry.get_by_name(tool)
        if entry is None:
            return "unknown"
        return entry.source.server_id if entry.source is not None else f"builtin:{entry.namespace}"

    def _outcome(self, outcome: str) -> str:
        if outcome in self._outcomes or len(self._outcomes) < OUTCOME_KEPT:
            self._outcomes.add(outcome)
            return outcome
        return "other"


class _ApprovalCollector:
    """The approvals as last read from the store: decided by decision, and pending."""

    def __init__(self) -> None:
        self.pending = 0
        self.decided: dict[str, int] = {}

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        decided = CounterMetricFamily(
            "pegboard_approvals_decided",
            "Approvals by decision (expired: lapsed unanswered), from every route.",
            labels=["decision"],
        )
        counted: dict[str, int] = {}
        for decision, count in self.decided.items():
            name = decision if decision in APPROVAL_OUTCOMES else "other"
            counted[name] = counted.get(name, 0) + count
        for name in sorted(counted):
            decided.add_metric([name], float(counted[name]))
        yield decided
        yield GaugeMetricFamily(
            "pegboard_approvals_pending", "Approvals waiting for a decision.", self.pending
        )


class _ServerCollector:
    """Per configured server, read at scrape time: up (connected) and cached tools."""

    def __init__(self, service: Service) -> None:
        self._service = service

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        up = GaugeMetricFamily(
            "pegboard_upstream_up", "1 when the upstream server is connected.", labels=["server"]
        )
        cached = GaugeMetricFamily(
            "pegboard_cached_tools", "Cached, enabled tools per upstream server.", labels=["server"]
        )
        for status in self._service.servers.statuses():
            up.add_metric([status.server_id], 1.0 if status.state == "connected" else 0.0)
            cached.add_metric([status.server_id], float(status.tool_count))
        yield up
        yield cached
