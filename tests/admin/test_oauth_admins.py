"""With ``[auth]`` the admin UI lets in only principals ``[auth] admins`` names (a subject or
``group:NAME``), with their access token from a real OpenID Connect provider."""

from __future__ import annotations

from pathlib import Path

import httpx2

from tests.gateway.auth.idp import free_port, require_provider, running_idp
from tests.gateway.auth.test_oauth import start_gateway
from tests.gateway.harness import sdk_server


def test_only_an_admin_principals_token_opens_the_admin_ui(tmp_path: Path) -> None:
    require_provider()
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    with running_idp(audience) as idp:
        config = {
            "servers": {"toolbox": sdk_server()},
            "auth": {"issuer": idp.issuer, "audience": audience, "admins": ["group:ops"]},
        }
        process, _, _ = start_gateway(tmp_path, config, port)
        try:
            base = f"http://127.0.0.1:{port}"
            alice, bob = idp.token("alice"), idp.token("bob")  # alice is in group ops
            with httpx2.Client(base_url=base, timeout=30) as http:
                assert http.get("/admin/").status_code == 303  # to the login page
                ok = http.get("/admin/", headers={"Authorization": f"Bearer {alice}"})
                assert ok.status_code == 200
                assert "alice" in ok.text
                assert alice not in ok.text
                refused = http.get("/admin/", headers={"Authorization": f"Bearer {bob}"})
                assert refused.status_code == 401
                forged = idp.sign({"sub": "alice", "groups": ["ops"], "aud": "elsewhere"})
                assert (
                    http.get("/admin/", headers={"Authorization": f"Bearer {forged}"}).status_code
                    == 401
                )
                assert http.post("/admin/login", data={"token": bob}).status_code == 401
                logged = http.post("/admin/login", data={"token": alice})
                assert logged.status_code == 303
            with httpx2.Client(base_url=base, timeout=30, cookies=dict(logged.cookies)) as http:
                assert http.get("/admin/servers").status_code == 200
                metrics = http.get("/metrics", headers={"Authorization": f"Bearer {bob}"})
                assert metrics.status_code == 401
        finally:
            process.terminate()
            process.wait(timeout=15)
