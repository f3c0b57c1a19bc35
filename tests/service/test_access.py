"""``Service.access``: who is an admin and what the rules give, without a runtime."""

from __future__ import annotations

from pathlib import Path

import tomli_w

from pegboard.config import load_config
from pegboard.core.principal import Principal
from pegboard.service import Service


def test_the_service_answers_who_is_an_admin_and_what_the_rules_give(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    auth = {
        "issuer": "https://idp.example.com",
        "audience": "https://mcp.example.com/mcp",
        "admins": ["group:ops", "root"],
        "allow": [{"subjects": ["group:dev"], "servers": ["time"], "tools": ["now"]}],
    }
    path.write_text(tomli_w.dumps({"auth": auth}))
    service = Service(load_config(path))
    access = service.access
    alice, bob = Principal("alice", frozenset({"ops"})), Principal("bob", frozenset({"dev"}))
    assert access.admins == ("group:ops", "root")
    assert access.is_admin(alice)
    assert access.is_admin(Principal("root"))
    assert not access.is_admin(bob)
    assert access.may_use(bob, "time", "now")
    assert not access.may_use(bob, "time", "later")
    assert not access.may_use(alice, "time", "now")
    assert access.may_see_server(bob, "time")
    assert "runtime" not in service.__dict__  # no runtime was built for it
