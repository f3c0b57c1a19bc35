"""HTTPS through the pinned connection: the socket goes to the checked IP, while SNI and the
certificate check still use the URL's host name."""

from __future__ import annotations

import datetime
import pathlib
import ssl
from collections.abc import Iterator

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pegboard.builtin.address_policy import AddressPolicy
from pegboard.builtin.guarded_http import fetch
from pegboard.errors import ToolExecutionError
from tests.builtin.conftest import NetLog
from tests.builtin.local_http import LocalServer, Reply

pytestmark = pytest.mark.anyio

LOOPBACK = AddressPolicy.from_cidrs(["127.0.0.1/32"])


def _self_signed(host: str) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


TlsServer = tuple[LocalServer, ssl.SSLContext, list[str | None]]


@pytest.fixture
def tls_server(tmp_path: pathlib.Path, net: NetLog) -> Iterator[TlsServer]:
    """An HTTPS server on 127.0.0.1 whose certificate names only ``pinned.test``."""
    folder = tmp_path
    cert, key = _self_signed("pinned.test")
    (folder / "cert.pem").write_bytes(cert)
    (folder / "key.pem").write_bytes(key)
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    sni: list[str | None] = []
    server_side.sni_callback = lambda sock, name, ctx: sni.append(name)  # type: ignore[assignment]
    client_side = ssl.create_default_context(cadata=cert.decode())
    net.dns["pinned.test"] = ["127.0.0.1"]
    net.dns["other.test"] = ["127.0.0.1"]
    srv = LocalServer(tls=server_side).start()
    yield srv, client_side, sni
    srv.stop()


async def test_https_connects_to_the_checked_ip_with_the_host_name_as_sni(
    tls_server: TlsServer, net: NetLog
) -> None:
    server, trust, sni = tls_server
    server.route("/", Reply(headers={"content-type": "text/plain"}, body=b"secure"))
    url = f"https://pinned.test:{server.port}/"
    page = await fetch(url, LOOPBACK, max_bytes=1000, deadline=5, ssl_context=trust)
    assert page.body == b"secure"
    assert net.connects == ["127.0.0.1"]
    assert sni == ["pinned.test"]
    assert server.seen[0].headers["host"] == f"pinned.test:{server.port}"


async def test_the_certificate_is_checked_against_the_host_name_not_the_ip(
    tls_server: TlsServer,
) -> None:
    server, trust, _ = tls_server
    url = f"https://other.test:{server.port}/"
    with pytest.raises(ToolExecutionError, match=r"could not fetch .*certificate verify failed"):
        await fetch(url, LOOPBACK, max_bytes=1000, deadline=5, ssl_context=trust)
    assert server.seen == []
