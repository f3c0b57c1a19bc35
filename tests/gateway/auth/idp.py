"""A real OpenID Connect provider (the npm package ``oidc-provider``) on loopback, for tests.

``.ci/run`` installs it into ``.refservers/npm``; the test owns its signing key (a JWKS handed
to the provider), so it can also sign tokens the provider would never issue (expired, for
another audience, ...) to check that the gateway refuses them.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parents[3]
PROVIDER = ROOT / ".refservers" / "npm" / "node_modules" / "oidc-provider" / "lib" / "index.js"
SCRIPT = Path(__file__).with_name("idp.mjs")
KID = "test-key-1"


def require_provider() -> str:
    """The node binary; skip (fail in CI) when node or oidc-provider is missing."""
    node = shutil.which("node")
    missing = [
        name for name, ok in (("node", node), ("oidc-provider", PROVIDER.exists())) if not ok
    ]
    markers = sorted((ROOT / ".refservers").glob("UNAVAILABLE-npm"))
    if missing and markers and not os.environ.get("CI"):
        pytest.skip(f"{' and '.join(missing)} not installed: {markers[0].read_text().strip()}")
    if missing:
        reason = (
            f"{' and '.join(missing)} not installed; enable these tests with "
            "`scripts/install_refservers.sh` (oidc-provider into .refservers/npm)"
        )
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    assert node is not None
    return node


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Idp:
    issuer: str
    audience: str
    private_key: rsa.RSAPrivateKey
    process: subprocess.Popen[str]

    def token(self, client: str, *, audience: str | None = None) -> str:
        """An access token the provider issues to ``client`` (client_credentials grant)."""
        reply = httpx2.post(
            f"{self.issuer}/token",
            data={
                "grant_type": "client_credentials",
                "scope": "mcp",
                "resource": audience or self.audience,
            },
            auth=(client, f"{client}-secret"),
            timeout=10,
        )
        assert reply.status_code == 200, reply.text
        return str(reply.json()["access_token"])

    def sign(self, claims: dict[str, Any], *, key: Any = None, **header: Any) -> str:
        """A token signed by the provider's own key (or ``key``), with these claims."""
        now = int(time.time())
        body = {"iss": self.issuer, "aud": self.audience, "sub": "mallory", "iat": now}
        body |= {"exp": now + 300} | claims
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(
            body, key or self.private_key, algorithm="RS256", headers={"kid": KID} | header
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


def private_jwks(key: rsa.RSAPrivateKey) -> str:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key))
    return json.dumps({"keys": [jwk | {"kid": KID, "alg": "RS256", "use": "sig"}]})


@contextmanager
def running_idp(audience: str, *, port: int | None = None) -> Iterator[Idp]:
    node = require_provider()
    port = port or free_port()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env |= {"OIDC_PROVIDER_URL": PROVIDER.as_uri(), "OIDC_JWKS": private_jwks(key)}
    process = subprocess.Popen(
        [node, str(SCRIPT), str(port), audience],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    idp = Idp(f"http://127.0.0.1:{port}", audience, key, process)
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 30
        seen = []
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith("ready "):
                break
        else:
            raise AssertionError(f"oidc-provider did not start: {''.join(seen)}")
        if not seen or not seen[-1].startswith("ready "):
            raise AssertionError(f"oidc-provider exited: {''.join(seen)}")
        yield idp
    finally:
        idp.stop()
