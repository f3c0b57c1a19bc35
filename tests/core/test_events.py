import logging

import pytest

from pegboard.core.events import EventBus, ServerStatusChanged, ToolsChanged


def test_subscribers_get_only_the_events_of_their_kind_in_subscription_order() -> None:
    bus = EventBus()
    heard: list[tuple[str, object]] = []
    bus.subscribe(ToolsChanged, lambda e: heard.append(("first", e)))
    bus.subscribe(ServerStatusChanged, lambda e: heard.append(("status", e)))
    bus.subscribe(ToolsChanged, lambda e: heard.append(("second", e)))
    bus.publish(ToolsChanged("s1"))
    bus.publish(ServerStatusChanged("s2"))
    assert heard == [
        ("first", ToolsChanged("s1")),
        ("second", ToolsChanged("s1")),
        ("status", ServerStatusChanged("s2")),
    ]


def test_a_failing_subscriber_is_logged_and_the_others_still_hear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus()
    heard: list[str] = []

    def broken(event: ToolsChanged) -> None:
        raise ValueError("subscriber bug")

    bus.subscribe(ToolsChanged, broken)
    bus.subscribe(ToolsChanged, lambda e: heard.append(e.server_id))
    with caplog.at_level(logging.ERROR, logger="pegboard.events"):
        bus.publish(ToolsChanged("s1"))
    assert heard == ["s1"]
    assert [r.getMessage() for r in caplog.records] == ["ToolsChanged subscriber failed"]


def test_unsubscribing_stops_delivery_and_twice_is_harmless() -> None:
    bus = EventBus()
    heard: list[str] = []
    unsubscribe = bus.subscribe(ToolsChanged, lambda e: heard.append(e.server_id))
    bus.publish(ToolsChanged("a"))
    unsubscribe()
    unsubscribe()
    bus.publish(ToolsChanged("b"))
    assert heard == ["a"]
    assert bus.subscribers(ToolsChanged) == 0


def test_a_subscriber_may_unsubscribe_while_being_called() -> None:
    bus = EventBus()
    heard: list[str] = []
    unsubscribes = []

    def once(event: ToolsChanged) -> None:
        heard.append(event.server_id)
        unsubscribes[0]()

    unsubscribes.append(bus.subscribe(ToolsChanged, once))
    bus.subscribe(ToolsChanged, lambda e: heard.append("other"))
    bus.publish(ToolsChanged("a"))
    bus.publish(ToolsChanged("b"))
    assert heard == ["a", "other", "other"]
