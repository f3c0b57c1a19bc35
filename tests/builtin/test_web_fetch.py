"""web_fetch against real servers on 127.0.0.1, with loopback explicitly allowed."""

from __future__ import annotations

import gzip
import json

import pytest

from pegboard.builtin.web_fetch import web_fetch
from pegboard.config.model import WebFetchConfig
from pegboard.errors import ToolExecutionError, UrlRefused
from tests.builtin.conftest import NetLog
from tests.builtin.local_http import LocalServer, Reply

pytestmark = pytest.mark.anyio

LOOPBACK = WebFetchConfig(allow_networks=["127.0.0.1/32"])
ARTICLE = b"""<!doctype html><html><head><title>Pet policy</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>Pet policy</h1>
<p>Dogs are welcome in the office on Fridays, provided they are house-trained and stay on a
leash in shared areas. Cats and other animals need approval from facilities first.</p>
<p>Owners are responsible for any damage and must keep water bowls out of walkways, since a
spill near the kitchen caused a fall last spring and we would rather not repeat it.</p>
</article><footer>Copyright 2026</footer></body></html>"""


def _pdf(text: str) -> bytes:
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


async def test_html_becomes_markdown_of_the_main_content(server: LocalServer) -> None:
    server.route("/pets", Reply(headers={"content-type": "text/html"}, body=ARTICLE))
    text = await web_fetch(server.url("/pets"), config=LOOPBACK)
    assert text.startswith(f"URL: {server.url('/pets')}\n\n")
    assert "Dogs are welcome in the office on Fridays" in text
    assert "Copyright 2026" not in text
    assert "<p>" not in text


async def test_json_is_pretty_printed(server: LocalServer) -> None:
    body = json.dumps({"b": [1, 2], "a": "x"}).encode()
    server.route("/j", Reply(headers={"content-type": "application/json"}, body=body))
    text = await web_fetch(server.url("/j"), config=LOOPBACK)
    assert text == f'URL: {server.url("/j")}\n\n{{\n  "b": [\n    1,\n    2\n  ],\n  "a": "x"\n}}'


async def test_plain_text_with_bad_utf8_is_replaced_not_an_error(server: LocalServer) -> None:
    reply = Reply(headers={"content-type": "text/plain; charset=utf-8"}, body=b"caf\xe9 ok")
    server.route("/t", reply)
    assert await web_fetch(server.url("/t"), config=LOOPBACK) == (
        f"URL: {server.url('/t')}\n\ncaf\ufffd ok"
    )


async def test_a_pdf_becomes_its_text(server: LocalServer) -> None:
    server.route(
        "/doc.pdf", Reply(headers={"content-type": "application/pdf"}, body=_pdf("Q3 revenue grew"))
    )
    text = await web_fetch(server.url("/doc.pdf"), config=LOOPBACK)
    assert text == f"URL: {server.url('/doc.pdf')}\n\n[page 1]\nQ3 revenue grew"


async def test_a_long_page_is_truncated_and_marked(server: LocalServer) -> None:
    server.route("/long", Reply(headers={"content-type": "text/plain"}, body=b"x" * 5000))
    text = await web_fetch(server.url("/long"), max_chars=1000, config=LOOPBACK)
    assert text == (
        f"URL: {server.url('/long')}\n\n{'x' * 1000}\n\n[truncated: showing 1000 of 5000 "
        "characters; call web_fetch with a larger max_chars for more]"
    )


async def test_binary_content_is_refused_with_what_can_be_read(server: LocalServer) -> None:
    server.route("/img", Reply(headers={"content-type": "image/png"}, body=b"\x89PNG"))
    with pytest.raises(ToolExecutionError, match=r"is image/png, which web_fetch cannot read"):
        await web_fetch(server.url("/img"), config=LOOPBACK)


async def test_an_http_error_status_is_an_error(server: LocalServer) -> None:
    with pytest.raises(ToolExecutionError, match=r"/missing answered HTTP 404 Not Found"):
        await web_fetch(server.url("/missing"), config=LOOPBACK)


async def test_a_redirect_from_an_allowed_host_into_refused_space_is_refused(
    server: LocalServer, net: NetLog
) -> None:
    server.route("/go", Reply(302, {"location": "http://169.254.169.254/latest/meta-data/"}))
    with pytest.raises(UrlRefused) as caught:
        await web_fetch(server.url("/go"), config=LOOPBACK)
    assert str(caught.value) == (
        "redirect 1 to http://169.254.169.254/latest/meta-data/ refused: 169.254.169.254 is a "
        "cloud metadata address; allow it with [web_fetch] allow_networks"
    )
    assert set(net.connects) == {"127.0.0.1"}


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("http://[::1]:9/", "::1 is a loopback address"),
        ("http://localhost:9/", "localhost resolves to ::1, a loopback address"),
        ("http://10.0.0.1/", "10.0.0.1 is a private address"),
        ("file:///etc/passwd", "not file:"),
        ("http://u:p@127.0.0.1/", "user name or password"),
        ("http://metadata.google.internal/", "a cloud metadata host"),
        ("//169.254.169.254/latest", "169.254.169.254 is a cloud metadata address"),
        ("http://[::ffff:a9fe:a9fe]/", "an IPv4-mapped IPv6 address"),
    ],
)
async def test_every_redirect_hop_is_checked(
    server: LocalServer, net: NetLog, location: str, reason: str
) -> None:
    server.route("/a", Reply(301, {"location": "/b"}))
    server.route("/b", Reply(307, {"location": location}))
    with pytest.raises(UrlRefused, match=r"redirect 2 to .* refused: ") as caught:
        await web_fetch(server.url("/a"), config=LOOPBACK)
    assert reason in str(caught.value)
    assert set(net.connects) == {"127.0.0.1"}


async def test_five_redirects_are_followed(server: LocalServer) -> None:
    for hop in range(5):
        server.route(f"/r{hop}", Reply(302, {"location": f"/r{hop + 1}"}))
    server.route("/r5", Reply(headers={"content-type": "text/plain"}, body=b"arrived"))
    text = await web_fetch(server.url("/r0"), config=LOOPBACK)
    assert text == f"URL: {server.url('/r5')}\n\narrived"


async def test_an_endless_redirect_chain_stops_after_five(server: LocalServer) -> None:
    server.route("/loop", Reply(302, {"location": "/loop"}))
    with pytest.raises(ToolExecutionError, match="redirected more than 5 times; giving up"):
        await web_fetch(server.url("/loop"), config=LOOPBACK)
    assert len(server.seen) == 6


async def test_auth_and_cookie_headers_are_dropped_on_a_cross_origin_redirect(
    server: LocalServer, other_server: LocalServer
) -> None:
    from pegboard.builtin.address_policy import AddressPolicy
    from pegboard.builtin.guarded_http import fetch

    server.route("/same", Reply(302, {"location": "/here"}))
    server.route("/here", Reply(302, {"location": other_server.url("/there")}))
    other_server.route("/there", Reply(headers={"content-type": "text/plain"}, body=b"ok"))
    secret = {"Authorization": "Bearer s3cret", "Cookie": "session=1"}
    policy = AddressPolicy.from_cidrs(["127.0.0.1/32"])
    page = await fetch(server.url("/same"), policy, max_bytes=1000, deadline=5, headers=secret)
    assert page.body == b"ok"
    first, same_origin = server.seen
    assert first.headers["authorization"] == "Bearer s3cret"
    assert same_origin.headers["authorization"] == "Bearer s3cret"
    assert same_origin.headers["cookie"] == "session=1"
    (cross,) = other_server.seen
    assert "authorization" not in cross.headers
    assert "cookie" not in cross.headers


async def test_a_gzip_bomb_stops_at_the_decoded_byte_cap(server: LocalServer) -> None:
    bomb = gzip.compress(b"\0" * 50_000_000, compresslevel=9)
    assert len(bomb) < 100_000
    headers = {"content-type": "text/plain", "content-encoding": "gzip"}
    server.route("/bomb", Reply(headers=headers, body=bomb))
    with pytest.raises(ToolExecutionError) as caught:
        await web_fetch(server.url("/bomb"), config=LOOPBACK)
    assert str(caught.value) == (
        f"{server.url('/bomb')} decodes to more than the 5 MB limit ([web_fetch] max_bytes); "
        "stopped reading"
    )


async def test_a_declared_length_over_the_cap_is_refused_before_the_body(
    server: LocalServer,
) -> None:
    server.route("/big", Reply(headers={"content-type": "text/plain"}, body=b"y" * 2000))
    config = WebFetchConfig(allow_networks=["127.0.0.1/32"], max_bytes=1000)
    with pytest.raises(ToolExecutionError, match=r"/big is 0\.002 MB, over the 0\.001 MB limit"):
        await web_fetch(server.url("/big"), config=config)


async def test_a_chunked_body_without_a_length_is_counted_too(server: LocalServer) -> None:
    headers = {"content-type": "text/plain", "transfer-encoding": "chunked"}
    server.route("/chunked", Reply(headers=headers, body=b"c" * 300_000))
    config = WebFetchConfig(allow_networks=["127.0.0.1/32"], max_bytes=100_000)
    with pytest.raises(ToolExecutionError, match=r"decodes to more than the 0\.1 MB limit"):
        await web_fetch(server.url("/chunked"), config=config)
    server.route("/small", Reply(headers=headers, body=b"fits"))
    assert await web_fetch(server.url("/small"), config=config) == (
        f"URL: {server.url('/small')}\n\nfits"
    )


async def test_a_slow_drip_stops_at_the_overall_deadline(server: LocalServer) -> None:
    # Each byte arrives well within any per-read timeout; only an overall deadline stops it.
    server.route("/drip", Reply(headers={"content-type": "text/plain"}, body=b"z" * 100, drip=0.1))
    config = WebFetchConfig(allow_networks=["127.0.0.1/32"], timeout=0.5)
    with pytest.raises(ToolExecutionError) as caught:
        await web_fetch(server.url("/drip"), config=config)
    assert str(caught.value) == (
        f"fetching {server.url('/drip')} did not finish within 0.5 s ([web_fetch] timeout)"
    )


async def test_a_server_that_never_answers_stops_at_the_deadline(server: LocalServer) -> None:
    server.route("/hang", Reply(hang=True))
    config = WebFetchConfig(allow_networks=["127.0.0.1/32"], timeout=0.3)
    with pytest.raises(ToolExecutionError, match=r"did not finish within 0\.3 s"):
        await web_fetch(server.url("/hang"), config=config)


async def test_proxy_variables_are_ignored(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    server.route("/p", Reply(headers={"content-type": "text/plain"}, body=b"direct"))
    assert (
        await web_fetch(server.url("/p"), config=LOOPBACK) == f"URL: {server.url('/p')}\n\ndirect"
    )
    assert server.seen[0].path == "/p"  # a proxy would have been sent the absolute URL


async def test_the_connection_goes_to_the_checked_address_not_a_second_answer(
    server: LocalServer, net: NetLog
) -> None:
    # A rebinding resolver: checked once as 127.0.0.1 (allowed); asked again it says 10.0.0.1.
    answers = iter([["127.0.0.1"], ["10.0.0.1"]])

    class Rebinding(dict[str, list[str]]):
        def get(self, key: str, default: object = None) -> object:
            return next(answers) if key == "rebind.test" else super().get(key, default)

    net.dns = Rebinding(net.dns)
    server.route("/r", Reply(headers={"content-type": "text/plain"}, body=b"pinned"))
    url = f"http://rebind.test:{server.port}/r"
    assert await web_fetch(url, config=LOOPBACK) == f"URL: {url}\n\npinned"
    assert net.lookups.count("rebind.test") == 1
    assert net.connects == ["127.0.0.1"]
    assert server.seen[0].headers["host"] == f"rebind.test:{server.port}"
